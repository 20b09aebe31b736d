-- leave.lua: take a visitor out of the line, or give up its admission.
-- KEYS[1..6] meta, queue, seen, active, adm, window (see keys.go)
-- ARGV[1] visitor  ARGV[2] pub/sub channel for changes
-- ARGV[3] 'line' to leave only the line (joining another room), 'all' to give up an admission too
-- Returns -1 for an unknown room, 1 if the visitor left something, 0 otherwise.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local v = ARGV[1]
redis.call('ZREM', KEYS[3], v)
local left = redis.call('ZREM', KEYS[2], v)
if ARGV[3] == 'all' then
  redis.call('HDEL', KEYS[5], v)
  left = left + redis.call('ZREM', KEYS[4], v)
end
if left > 0 then
  redis.call('PUBLISH', ARGV[2], v)
  return 1
end
return 0
