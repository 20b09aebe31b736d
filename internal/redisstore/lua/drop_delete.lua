-- drop_delete.lua: delete a drop while nothing is claimed. The caller then drops it from the recorders'
-- registry, which lives in another slot.
-- KEYS[1] meta HASH  KEYS[2] claims STREAM  KEYS[3] mine HASH  KEYS[4] keys HASH  KEYS[5] codes LIST
-- Returns 0, 1 (NOT FOUND) or 6 (STARTED) when the drop has claims.
local claimed = redis.call('HGET', KEYS[1], 'claimed')
if not claimed then
  return 1
end
if tonumber(claimed) > 0 then
  return 6
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 0
