-- auction_due.lua: auctions whose end has passed, from the deadline index, by the server's clock.
-- KEYS[1] deadlines ZSET (auction id -> end ms)
-- ARGV[1] limit  ARGV[2] now override (ms, '' in production)
-- Returns {{ids...}, next deadline ms after them (0 if none)}.
local now = now_ms(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local next = 0
local after = redis.call('ZRANGE', KEYS[1], #ids, #ids, 'WITHSCORES')
if after[2] then next = tonumber(after[2]) end
return {ids, next}
