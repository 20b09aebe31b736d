-- drop_amend.lua: change a drop's title, message, stock, per_visitor and window (an operator
-- correcting, telling or restocking it, or opening or closing it now), keeping its claims.
-- KEYS[1] meta HASH (see keys.go)
-- ARGV[1] the revision the new config was made from  ARGV[2] stock  ARGV[3] opens_at ms
-- ARGV[4] closes_at ms (0: never)  ARGV[5] the new config JSON  ARGV[6] its revision  ARGV[7] per_visitor
-- Returns 0, 1 (NOT_FOUND), 3 (SOLD OUT) for a new stock of a drop sold out, 4 (BELOW) for a stock
-- below the claims, or 7 (STALE) when the config changed since the caller read it.
local m = redis.call('HMGET', KEYS[1], 'rev', 'stock', 'claimed', 'written')
if not m[1] then
  return 1
end
if m[1] ~= ARGV[1] then
  return 7
end
local stock, claimed = tonumber(ARGV[2]), tonumber(m[3]) or 0
if stock ~= tonumber(m[2]) then
  if claimed >= tonumber(m[2]) then
    return 3
  end
  if stock < claimed then
    return 4
  end
end
redis.call('HSET', KEYS[1], 'stock', ARGV[2], 'opens', ARGV[3], 'closes', ARGV[4], 'cfg', ARGV[5], 'rev', ARGV[6],
  'per_visitor', ARGV[7], 'written', written(m[4]))
return 0
