-- drop_over.lua: whether a drop can take no more claims, judged by the clock of the node that holds
-- it, as drop_claim.lua judges whether it is open.
-- KEYS[1] meta HASH (see keys.go)
-- ARGV[1] now override (ms)  ARGV[2] how long past its closing time (ms) a drop counts as over: a margin
-- for a step back of the clock, after which a claim could still find it open
-- Returns 1 when the drop is gone, sold out, or closed for longer than the margin; 0 otherwise.
local m = redis.call('HMGET', KEYS[1], 'stock', 'claimed', 'closes')
if not m[1] then
  return 1
end
local stock, claimed, closes = tonumber(m[1]), tonumber(m[2]) or 0, tonumber(m[3]) or 0
if claimed >= stock then
  return 1
end
if closes > 0 and now_ms(ARGV[1]) >= closes + tonumber(ARGV[2]) then
  return 1
end
return 0
