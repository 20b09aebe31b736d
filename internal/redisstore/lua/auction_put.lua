-- auction_put.lua: create an auction, or replace it while it has no bids and was not sold (also once
-- it closed without bids). The sequence goes on across replacements and deletions (a deleted auction
-- leaves its 'seq' behind, see auction_delete.lua), so that an event number is never used twice for
-- one id: the SQL record and resuming live feeds key on it. The events stream is kept as history.
-- KEYS[1] state HASH  KEYS[2] events STREAM
-- ARGV[1] start price  ARGV[2] reserve ('' none)  ARGV[3] buy-now price ('' none)  ARGV[4] starts_at ms
-- ARGV[5] ends_at ms  ARGV[6] soft-close window ms ('' none)  ARGV[7] extend ms  ARGV[8] increment
-- tiers "from:step,..."  ARGV[9] config JSON (kept for the client, never read here)  ARGV[10] the
-- config's revision
-- Returns {0} or {STARTED}.
local s = load(KEYS[1])
if s and (s.bids > 0 or s.sold) then
  return {STARTED}
end
local seq = redis.call('HGET', KEYS[1], 'seq') or '0'
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'price', ARGV[1], 'leader', '', 'leader_max', '0', 'bids', '0', 'ends_at', ARGV[5],
  'closed', '0', 'sold', '0', 'winner', '', 'final', '0', 'seq', seq, 'starts_at', ARGV[4], 'start_price', ARGV[1],
  'reserve', ARGV[2], 'buy_now', ARGV[3], 'window', ARGV[6], 'extend', ARGV[7], 'inc', ARGV[8], 'cfg', ARGV[9],
  'rev', ARGV[10])
return {OK}
