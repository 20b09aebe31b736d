-- active.lua: whether an admission is still the visitor's live one (online verification).
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] visitor  ARGV[2] admission id  ARGV[3] now override (ms)
-- Returns -1 for an unknown room, 1 live, 0 not.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local id = live(KEYS[4], KEYS[5], ARGV[1], now_ms(ARGV[3]))
if id and id == ARGV[2] then
  return 1
end
return 0
