-- released.lua: an admission ended early is kept until its token expires, so that an instance that
-- starts (or subscribes again) later learns of it, and is announced to the instances listening.
-- KEYS[1] releases ZSET (admission id -> when its token expires, ms)
-- ARGV[1] the admission id  ARGV[2] its token's expiry (ms)  ARGV[3] the channel  ARGV[4] the message
-- Those expired go first: the set holds what a token may still be shown for.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
