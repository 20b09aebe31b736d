-- hold.lua: check a visitor's admission and, in a room that follows a drop, take one of its units for the
-- visitor's claim (see rushgate.Gatekeeper). Cost: O(log N).
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go); meta's units counts the units
--   left (absent: the room follows no drop) and soldout marks a drop with none
-- ARGV[1] now override (ms)  ARGV[2] visitor  ARGV[3] admission id  ARGV[4] the drop claimed
-- Returns -1 for an unknown room, -2 when the admission is not the visitor's live one, -3 when no unit is
-- left, 1 when a unit was taken, 0 when the room follows no drop, or another one.
local cfg = room_cfg(KEYS[1])
if not cfg then
  return -1
end
local id = live(KEYS[4], KEYS[5], ARGV[2], now_ms(ARGV[1]))
if id ~= ARGV[3] then
  return -2
end
if cfg.units < 0 then
  return 0
end
if room_drop(KEYS[1]) ~= ARGV[4] then
  return 0
end
if cfg.units == 0 or cfg.soldout then
  return -3
end
redis.call('HINCRBY', KEYS[1], 'units', -1)
return 1
