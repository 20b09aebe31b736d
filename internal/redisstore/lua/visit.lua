-- visit.lua: a visitor's join or status read, in one step.
-- KEYS[1..6] meta, queue, seen, active, adm, window (see keys.go)
-- KEYS[7] (standalone Redis only, where scripts may span slots) the visitor's line pointer: a join that
--         leaves the visitor waiting points it at this room in the same step, saving a round trip
-- ARGV[1] visitor  ARGV[2] 'join' or 'status'  ARGV[3] now override (ms, '' in production)
-- ARGV[4] the random order drawn for a pre-queue arrival (1 .. 2^50-1)  ARGV[5] room id
-- ARGV[6] line pointer lifetime (seconds)
-- An admitted visitor's admission is collected (grace turns into the session); a waiting visitor's
-- presence is recorded; a join of a visitor in neither state takes a place at the back.
-- Returns {-1} unknown room, {0} none, {1, position, previous line or ''} waiting,
-- {2, admission id, expiry ms} admitted.
local cfg = room_cfg(KEYS[1])
if not cfg then
  return {-1}
end
local now = now_ms(ARGV[3])
local v = ARGV[1]
local id, exp, collected = live(KEYS[4], KEYS[5], v, now)
if id then
  if not collected then
    exp = now + cfg.ttl
    redis.call('ZADD', KEYS[4], exp, v)
    redis.call('HSET', KEYS[5], v, id .. '|1')
  end
  return {2, id, exp}
end
-- point the visitor's line at this room, returning the line it was in before
local function point()
  if ARGV[2] ~= 'join' or not KEYS[7] then
    return ''
  end
  return redis.call('SET', KEYS[7], ARGV[5], 'GET', 'EX', ARGV[6]) or ''
end
local rank = redis.call('ZRANK', KEYS[2], v)
if rank then
  redis.call('ZADD', KEYS[3], now, v)
  return {1, rank + 1, point()}
end
if ARGV[2] ~= 'join' then
  return {0}
end
local order = SPAN + redis.call('HINCRBY', KEYS[1], 'seq', 1)
if cfg.opens > 0 and now < cfg.opens then
  order = tonumber(ARGV[4])
end
redis.call('ZADD', KEYS[2], order, v)
redis.call('ZADD', KEYS[3], now, v)
local position = redis.call('ZCARD', KEYS[2])
if order <= SPAN then
  position = redis.call('ZRANK', KEYS[2], v) + 1
end
return {1, position, point()}
