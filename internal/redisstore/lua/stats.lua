-- stats.lua: count a room's visitors. Admissions past their expiry are not counted, swept or not.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] now override (ms)
-- Returns {-1} for an unknown room, else {waiting, active, admitted total}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1}
end
local now = now_ms(ARGV[1])
local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
return {redis.call('ZCARD', KEYS[2]), redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf'), total}
