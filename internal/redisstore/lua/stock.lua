-- stock.lua: the stock a room follows (see rushgate.Gatekeeper): link it with its units left of the
-- drop's stock, unlink it, give a held unit back, hear the drop's stock anew (its units change by the
-- difference from the stock it last heard of, never below none, unless it is of a config write before
-- the last one heard of), or mark it sold out, telling every instance's streams at once.
-- The drop's opening and closing are kept with the units: before the one and from the other on,
-- admit.lua lets nobody in.
-- KEYS[1] meta (see keys.go)
-- ARGV[1] 'set' (ARGV[2] units, -1 to unlink; ARGV[4] the drop's stock, ARGV[5] its write's number,
-- ARGV[6] its closing in ms, 0 for none, ARGV[7] its opening in ms), 'unhold', 'restock' (ARGV[2] the
-- drop's stock, ARGV[5] its write's number, drop.Info.Written, ARGV[6] its closing, ARGV[7] its
-- opening) or 'soldout'  ARGV[3] pub/sub channel of changes  ARGV[8] the drop the step is about ('' to
-- unlink): a room whose config names another drop is left as it is
-- Returns -1 for an unknown room, 1 for news (a restock that changed the stock), else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if room_drop(KEYS[1]) ~= ARGV[8] then
  return 0
end
if ARGV[1] == 'set' then -- a link is sold out exactly when its drop has none left
  if tonumber(ARGV[2]) < 0 then
    redis.call('HDEL', KEYS[1], 'units', 'soldout', 'stock', 'written', 'closes', 'drop_opens')
  else
    redis.call('HSET', KEYS[1], 'units', ARGV[2], 'stock', ARGV[4], 'written', ARGV[5], 'closes', ARGV[6],
      'drop_opens', ARGV[7])
    if ARGV[2] == '0' then
      redis.call('HSET', KEYS[1], 'soldout', '1')
    else
      redis.call('HDEL', KEYS[1], 'soldout')
    end
  end
  redis.call('PUBLISH', ARGV[3], '*')
elseif ARGV[1] == 'unhold' then
  if redis.call('HEXISTS', KEYS[1], 'units') == 1 then
    redis.call('HINCRBY', KEYS[1], 'units', 1)
  end
elseif ARGV[1] == 'restock' then
  local m = redis.call('HMGET', KEYS[1], 'units', 'stock', 'written', 'closes', 'drop_opens')
  if not m[1] or tonumber(ARGV[5]) < (tonumber(m[3]) or 0) then
    return 0
  end
  if m[3] ~= ARGV[5] then -- every instance tells each second what it read: most of it, nothing new
    redis.call('HSET', KEYS[1], 'written', ARGV[5])
  end
  if (m[4] or '0') ~= ARGV[6] then
    redis.call('HSET', KEYS[1], 'closes', ARGV[6])
  end
  if (m[5] or '0') ~= ARGV[7] then
    redis.call('HSET', KEYS[1], 'drop_opens', ARGV[7])
  end
  if m[2] == ARGV[2] then
    return 0
  end
  if m[2] then -- a room linked before rooms kept the stock only learns it
    local units = math.max(0, tonumber(m[1]) + tonumber(ARGV[2]) - tonumber(m[2]))
    redis.call('HSET', KEYS[1], 'units', string.format('%d', units))
  end
  redis.call('HSET', KEYS[1], 'stock', ARGV[2])
  return 1
elseif ARGV[1] == 'soldout' then
  redis.call('HSET', KEYS[1], 'soldout', '1')
  redis.call('PUBLISH', ARGV[3], '*')
end
return 0
