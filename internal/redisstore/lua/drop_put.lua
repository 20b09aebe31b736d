-- drop_put.lua: create a drop, or replace it while nothing is claimed.
-- KEYS[1] meta HASH  KEYS[2] claims STREAM  KEYS[3] mine HASH  KEYS[4] keys HASH  KEYS[5] codes LIST
-- ARGV[1] stock  ARGV[2] per visitor  ARGV[3] opens_at ms  ARGV[4] closes_at ms (0: never)
-- ARGV[5] config JSON  ARGV[6] the config's revision  ARGV[7..] the codes to hand out in order (none:
-- generated per claim)
-- Returns 0, or 6 (STARTED) when the drop already has claims.
local m = redis.call('HMGET', KEYS[1], 'claimed', 'written')
if m[1] and tonumber(m[1]) > 0 then
  return 6
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
create_drop(1, '0', m[2])
return 0
