-- auction_restore.lua: one step of taking back an auction that Redis lost while the SQL record kept it
-- (auction.Store.Restore), in pieces as drop_restore.lua: the events first, a call per piece (the
-- first clears what an earlier attempt left, but a deleted auction's sequence number and events),
-- then the state, written only if every event is there. One restore at a time holds the auction, as
-- in drop_restore.lua. Steps cannot race it: until the state is written, every other script reads no
-- auction.
-- KEYS[1] state HASH  KEYS[2] events STREAM  KEYS[3] bidders HASH
-- KEYS[4] restoring STRING (the token of the restore that holds the auction)
-- ARGV[1] 'first', 'more' or 'last'  ARGV[2] this restore's token
-- 'first' and 'more': ARGV[3..] per event, in rising order: seq, kind, at ms, bidder, price, proxy
-- (1/0), ends_at ms; an event at or below the stream's last is there already and skipped.
-- 'last': ARGV[3] the number of events  ARGV[4] the last one's seq (0: none)  ARGV[5..22] the state in
-- the order of F (price ... seq, starts_at ... rev; seq never below the one left behind)
-- ARGV[23] config JSON
-- Returns {OK}, {STARTED} when the auction has bids or was sold, {INCOMPLETE} when the last call finds
-- events missing or another restore took the auction over, or {BUSY} when another restore holds it.
local s = load(KEYS[1])
if s and (s.bids > 0 or s.sold) then
  return {STARTED}
end

local holder = redis.call('GET', KEYS[4])
if ARGV[1] == 'first' then
  if holder and holder ~= ARGV[2] then
    return {BUSY}
  end
elseif holder ~= ARGV[2] then
  return {INCOMPLETE}
end

if ARGV[1] == 'last' then
  -- Every event sent is there (a deleted auction's stream may hold later ones, see 'first').
  if redis.call('XLEN', KEYS[2]) < tonumber(ARGV[3]) or stream_top(KEYS[2]) < tonumber(ARGV[4]) then
    return {INCOMPLETE}
  end
  local left = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
  local st = {}
  for i, f in ipairs(F) do
    st[#st + 1] = f
    st[#st + 1] = ARGV[4 + i]
  end
  st[20] = fmt(math.max(tonumber(st[20]), left)) -- F[10] is seq
  st[#st + 1] = 'cfg'
  st[#st + 1] = ARGV[23]
  redis.call('DEL', KEYS[1], KEYS[4])
  redis.call('HSET', KEYS[1], unpack(st))
  return {OK}
end

redis.call('SET', KEYS[4], ARGV[2], 'PX', 10000)
if ARGV[1] == 'first' then
  local left = redis.call('HGET', KEYS[1], 'seq')
  if left and redis.call('HLEN', KEYS[1]) == 1 then
    -- A deleted auction, not a lost one: its events stay, and the new one goes on from them
    -- (auction_delete.lua). The record may not hold the last of them yet; the stream does.
    redis.call('DEL', KEYS[1], KEYS[3])
  else
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  end
  if left then
    redis.call('HSET', KEYS[1], 'seq', left)
  end
end
local last = stream_top(KEYS[2])
for i = 3, #ARGV, 7 do
  local seq, kind, bidder = ARGV[i], ARGV[i + 1], ARGV[i + 3]
  if tonumber(seq) > last then
    redis.call('XADD', KEYS[2], seq .. '-1', 'kind', kind, 'at', ARGV[i + 2], 'bidder', bidder, 'price', ARGV[i + 4],
      'proxy', ARGV[i + 5], 'ends_at', ARGV[i + 6])
    if kind == 'bid' or kind == 'sold' then
      redis.call('HSET', KEYS[3], bidder, '1')
    end
    last = tonumber(seq)
  end
end
return {OK}
