-- touch.lua: record presence for waiting visitors that hold a stream open.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- ARGV[1] now override (ms, '' in production)  ARGV[2..] visitors
-- Returns -1 for an unknown room, else how many of the visitors were waiting.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local now = now_ms(ARGV[1])
local n = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[2], ARGV[i]) then
    redis.call('ZADD', KEYS[3], now, ARGV[i])
    n = n + 1
  end
end
return n
