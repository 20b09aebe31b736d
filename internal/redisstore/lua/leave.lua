-- leave.lua: take a visitor out of the line, or give up its admission.
-- KEYS[1..6] meta, queue, seen, active, adm, window (see keys.go)
-- ARGV[1] visitor  ARGV[2] pub/sub channel for changes
-- ARGV[3] 'line' to leave only the line (joining another room), 'all' to give up an admission too
-- KEYS[7], ARGV[4] (standalone Redis, with 'line' only) the visitor's line pointer and this room's id: a
--   join that leaves a line decided so when its step swapped the pointer; if the pointer now names this
--   room first, a later join has joined it since, taking or keeping the place in the same step, and the
--   place is that join's to keep. (On Cluster a visitor's joins hold a lock instead, see line.lua.)
-- Returns -1 for an unknown room, 1 if the visitor left something, 0 otherwise.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local v = ARGV[1]
if KEYS[7] then
  local pointer = redis.call('GET', KEYS[7])
  if pointer and string.match(pointer, '^%S+') == ARGV[4] then
    return 0
  end
end
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
