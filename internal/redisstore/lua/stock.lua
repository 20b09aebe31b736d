-- stock.lua: the stock a room follows (see rushgate.Gatekeeper): link it with its units left, unlink it,
-- add units (a held unit given back, a restock) or take some away (never below none), or mark it sold
-- out, telling every instance's streams at once.
-- KEYS[1] meta (see keys.go)
-- ARGV[1] 'set' (ARGV[2] units, -1 to unlink), 'add' (ARGV[2] units, negative to take) or 'soldout'
-- ARGV[3] pub/sub channel of changes
-- Returns -1 for an unknown room, else 1.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if ARGV[1] == 'set' then
  if tonumber(ARGV[2]) < 0 then
    redis.call('HDEL', KEYS[1], 'units', 'soldout')
  else
    redis.call('HSET', KEYS[1], 'units', ARGV[2])
  end
elseif ARGV[1] == 'add' then
  local units = redis.call('HGET', KEYS[1], 'units')
  if units then
    redis.call('HSET', KEYS[1], 'units', math.max(0, tonumber(units) + tonumber(ARGV[2])))
  end
elseif ARGV[1] == 'soldout' then
  redis.call('HSET', KEYS[1], 'soldout', '1')
  redis.call('PUBLISH', ARGV[3], '*')
end
return 1
