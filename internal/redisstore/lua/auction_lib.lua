-- auction_lib.lua: the auction rules, prepended to every auction script (not a script of its own).
-- They mirror internal/auction/engine.go exactly; the shared conformance suite holds both to one
-- behaviour. Amounts and times (ms) are integers below 2^53, formatted with %d, never through cjson,
-- whose encoder rounds to 14 digits.
local F = {'price', 'leader', 'leader_max', 'bids', 'ends_at', 'closed', 'sold', 'winner', 'final', 'seq',
  'starts_at', 'start_price', 'reserve', 'buy_now', 'window', 'extend', 'inc'}

local function fmt(n) return string.format('%d', n) end
local function opt(x) if x == nil or x == false or x == '' then return nil end return tonumber(x) end

local function load(key)
  local v = redis.call('HMGET', key, unpack(F))
  if not v[1] then return nil end
  local s = {}
  for i, f in ipairs(F) do s[f] = v[i] end
  for _, f in ipairs({'price', 'leader_max', 'bids', 'ends_at', 'final', 'seq', 'starts_at', 'start_price'}) do
    s[f] = tonumber(s[f])
  end
  s.reserve, s.buy_now, s.window, s.extend = opt(s.reserve), opt(s.buy_now), opt(s.window), opt(s.extend)
  s.closed, s.sold = s.closed == '1', s.sold == '1'
  s.tiers = {}
  for from, step in string.gmatch(s.inc, '(%d+):(%d+)') do
    s.tiers[#s.tiers + 1] = {tonumber(from), tonumber(step)}
  end
  return s
end

local function save(key, s)
  redis.call('HSET', key, 'price', fmt(s.price), 'leader', s.leader, 'leader_max', fmt(s.leader_max),
    'bids', fmt(s.bids), 'ends_at', fmt(s.ends_at), 'closed', s.closed and '1' or '0', 'sold', s.sold and '1' or '0',
    'winner', s.winner, 'final', fmt(s.final), 'seq', fmt(s.seq))
end

-- flat returns the state as strings in the order of F, for the client to rebuild it.
local function flat(key)
  return redis.call('HMGET', key, unpack(F))
end

local function step_at(s, price)
  local st = s.tiers[1][2]
  for _, t in ipairs(s.tiers) do
    if t[1] > price then break end
    st = t[2]
  end
  return st
end

local function reserve_met(s) return s.reserve == nil or (s.leader ~= '' and s.price >= s.reserve) end

local function status(s, now)
  if s.sold then return 'sold' end
  if s.closed or now >= s.ends_at then return 'closed' end
  if now < s.starts_at then return 'scheduled' end
  return 'open'
end

-- emit appends an event to the stream under the id seq-1, so the stream is read by sequence number.
local function emit(s, stream, evs, now, kind, bidder, price, proxy)
  s.seq = s.seq + 1
  local e = {fmt(s.seq), kind, fmt(now), bidder, fmt(price), proxy and '1' or '0', fmt(s.ends_at)}
  redis.call('XADD', stream, fmt(s.seq) .. '-1', 'kind', e[2], 'at', e[3], 'bidder', e[4], 'price', e[5], 'proxy', e[6], 'ends_at', e[7])
  evs[#evs + 1] = e
end

local function close_if_due(s, stream, evs, now)
  if s.closed or s.sold or now < s.ends_at then return end
  s.closed = true
  if s.leader ~= '' and reserve_met(s) then
    s.winner, s.final = s.leader, s.price
  end
  emit(s, stream, evs, now, 'closed', s.winner, s.final, false)
end

local function raise_to_reserve(s, price, max)
  if s.reserve and max >= s.reserve and price < s.reserve then return s.reserve end
  return price
end

local function extend(s, stream, evs, now)
  if not s.window or s.ends_at - now > s.window then return end
  local e = now + s.extend
  if e > s.ends_at then
    s.ends_at = e
    emit(s, stream, evs, now, 'extended', '', s.price, false)
  end
end

-- Result codes, mapped to the domain's errors in Go.
local OK, NOT_FOUND, NOT_STARTED, CLOSED, TOO_LOW, BUY_NOW_GONE, STARTED = 0, 1, 2, 3, 4, 5, 6

-- opening checks an action's time, closing first if due: {code} or nil when open.
local function opening(s, stream, evs, now)
  close_if_due(s, stream, evs, now)
  local st = status(s, now)
  if st == 'scheduled' then return NOT_STARTED end
  if st ~= 'open' then return CLOSED end
  return nil
end
