-- history.lua: keep an entity's figures as the sample of the current second, unless that second has
-- one already (another instance took it). Cost: O(1) amortized.
-- KEYS[1] history  LIST  "unix second,figure,figure,...", oldest first (see keys.go)
-- ARGV[1] now override (ms)
-- ARGV[2] the figures, "figure,figure,..."
-- ARGV[3] how many samples to keep
-- ARGV[4] how long the list outlives its last sample (ms), so a deleted entity's history goes by itself
-- Returns 1 when the sample was kept, 0 when the second had one.
local sec = math.floor(now_ms(ARGV[1]) / 1000)
local last = redis.call('LINDEX', KEYS[1], -1)
if last and tonumber(string.match(last, '^(%d+)')) >= sec then
  return 0
end
redis.call('RPUSH', KEYS[1], sec .. ',' .. ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
