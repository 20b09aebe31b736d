-- stats.lua: count a room's visitors. Admissions past their expiry are not counted, swept or not.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] now override (ms)
-- Returns {-1} for an unknown room, else {waiting, active, admitted total, joined total (the arrival
-- sequence and the arrivals before the opening), idle total, grace total}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1}
end
local now = now_ms(ARGV[1])
local m = redis.call('HMGET', KEYS[1], 'total', 'seq', 'prejoined', 'idled', 'graced')
local function n(i) return tonumber(m[i] or '0') end
return {redis.call('ZCARD', KEYS[2]), redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf'), n(1), n(2) + n(3), n(4), n(5)}
