-- stock.lua: the stock a room follows (see rushgate.Gatekeeper): link it with its units left, unlink it,
-- give a held unit back, or mark it sold out, telling every instance's streams at once.
-- KEYS[1] meta (see keys.go)
-- ARGV[1] 'set' (ARGV[2] units, -1 to unlink), 'unhold' or 'soldout'  ARGV[3] pub/sub channel of changes
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
elseif ARGV[1] == 'unhold' then
  if redis.call('HEXISTS', KEYS[1], 'units') == 1 then
    redis.call('HINCRBY', KEYS[1], 'units', 1)
  end
elseif ARGV[1] == 'soldout' then
  redis.call('HSET', KEYS[1], 'soldout', '1')
  redis.call('PUBLISH', ARGV[3], '*')
end
return 1
