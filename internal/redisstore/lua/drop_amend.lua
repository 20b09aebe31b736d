-- drop_schedule.lua: move a drop's window (an operator opening or closing it now), keeping its claims.
-- KEYS[1] meta HASH (see keys.go)
-- ARGV[1] the revision the new config was made from  ARGV[2] opens_at ms  ARGV[3] closes_at ms (0: never)
-- ARGV[4] the new config JSON  ARGV[5] its revision
-- Returns 0, 1 (NOT_FOUND), or 7 (STALE) when the config changed since the caller read it.
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then
  return 1
end
if rev ~= ARGV[1] then
  return 7
end
redis.call('HSET', KEYS[1], 'opens', ARGV[2], 'closes', ARGV[3], 'cfg', ARGV[4], 'rev', ARGV[5])
return 0
