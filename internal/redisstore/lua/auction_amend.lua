-- auction_amend.lua: an operator's new title and message for an auction, whatever its bids: the config
-- JSON takes a new revision (bids checked against the old one are checked again) and, while the auction
-- is open, an 'updated' event tells the live feeds, which read the view anew. An overdue auction is
-- closed first; an ended one's feeds have ended, and its pages look for the change themselves.
-- KEYS[1] state HASH  KEYS[2] events STREAM
-- ARGV[1] now override (ms, '' in production)  ARGV[2] the revision the new config was made from
-- ARGV[3] the new config JSON  ARGV[4] its revision  ARGV[5] the auction's pub/sub channel
-- Returns {OK}, {NOT_FOUND} or {STALE}.
local s = load(KEYS[1])
if not s then
  return {NOT_FOUND}
end
if ARGV[2] ~= s.rev then
  return {STALE}
end
local now = now_ms(ARGV[1])
local evs = {}
close_if_due(s, KEYS[2], evs, now)
if not (s.closed or s.sold) then
  emit(s, KEYS[2], evs, now, 'updated', '', s.price, false)
end
redis.call('HSET', KEYS[1], 'cfg', ARGV[3], 'rev', ARGV[4])
if #evs > 0 then
  save(KEYS[1], s)
  redis.call('PUBLISH', ARGV[5], fmt(s.seq))
end
return {OK}
