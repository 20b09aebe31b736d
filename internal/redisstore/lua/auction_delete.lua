-- auction_delete.lua: delete an auction that has no bids and was not sold. Its events stay, and its
-- sequence number as the state's only field, which every other script reads as no auction, so that an
-- auction created again under the id goes on from them, as a replaced one does (see auction_put.lua).
-- The caller then drops the auction from the deadline index and the recorders' registry, which live in
-- other slots.
-- KEYS[1] state HASH  KEYS[2] events STREAM  KEYS[3] bidders HASH
-- Returns {OK}, {NOT_FOUND} or {STARTED}.
local s = load(KEYS[1])
if not s then
  return {NOT_FOUND}
end
if s.bids > 0 or s.sold then
  return {STARTED}
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('HSET', KEYS[1], 'seq', fmt(s.seq))
return {OK}
