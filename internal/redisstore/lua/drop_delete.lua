-- drop_delete.lua: delete a drop while nothing is claimed. The caller then drops it from the recorders'
-- registry, which lives in another slot. The meta keeps only the number of the drop's last config
-- write, for a day, so that a drop made again soon numbers its writes on from it (see written in
-- drop_lib.lua), even within the same millisecond: every script reads such a meta as no drop.
-- KEYS[1] meta HASH  KEYS[2] claims STREAM  KEYS[3] mine HASH  KEYS[4] keys HASH  KEYS[5] codes LIST
-- Returns 0, 1 (NOT FOUND) or 6 (STARTED) when the drop has claims.
local m = redis.call('HMGET', KEYS[1], 'claimed', 'written')
if not m[1] then
  return 1
end
if tonumber(m[1]) > 0 then
  return 6
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if m[2] then
  redis.call('HSET', KEYS[1], 'written', m[2])
  redis.call('PEXPIRE', KEYS[1], 86400000)
end
return 0
