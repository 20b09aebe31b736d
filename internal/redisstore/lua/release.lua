-- release.lua: end a live admission early, freeing its slot at once.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] visitor  ARGV[2] admission id that must match ('' for any)  ARGV[3] now override (ms)
-- ARGV[4] pub/sub channel for changes
-- Returns -1 for an unknown room, 1 released, 0 no matching live admission.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local v = ARGV[1]
local id = live(KEYS[4], KEYS[5], v, now_ms(ARGV[3]))
if not id or (ARGV[2] ~= '' and ARGV[2] ~= id) then
  return 0
end
redis.call('ZREM', KEYS[4], v)
redis.call('HDEL', KEYS[5], v)
redis.call('PUBLISH', ARGV[4], v)
return 1
