-- leave.lua: take a visitor out of the line, or give up its admission.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] visitor  ARGV[2] pub/sub channel for changes
-- ARGV[3] 'line' to leave only the line (joining another room), 'all' to give up an admission too
-- ARGV[4] (Cluster, with 'line' only) the fence of the join leaving the line, else '': the line is not
--   left if a later join of the visitor has touched it (see line.lua), and otherwise remembers the fence
-- KEYS[8], ARGV[5] (standalone Redis, with 'line' only) the visitor's line pointer and this room's id: a
--   join that leaves a line decided so when its step swapped the pointer; if the pointer now names this
--   room first, a later join has joined it since, taking or keeping the place in the same step, and the
--   place is that join's to keep.
-- Returns -1 for an unknown room, 1 if the visitor left something, 0 otherwise.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local v = ARGV[1]
if ARGV[4] ~= '' and not fenced(KEYS[7], v, ARGV[4]) then
  return 0
end
if KEYS[8] then
  local pointer = redis.call('GET', KEYS[8])
  if pointer and string.match(pointer, '^%S+') == ARGV[5] then
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
