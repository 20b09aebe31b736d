-- auction_lib.lua: the auction rules, prepended to every auction script (not a script of its own).
-- They mirror internal/auction/engine.go exactly; the shared conformance suite holds both to one
-- behaviour. Amounts and times (ms) are integers below 2^53, formatted with %d, never through cjson,
-- whose encoder rounds to 14 digits.
local F = {'price', 'leader', 'leader_max', 'bids', 'ends_at', 'closed', 'sold', 'winner', 'final', 'seq',
  'starts_at', 'start_price', 'reserve', 'buy_now', 'window', 'extend', 'inc', 'rev'}

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
  s.rev = s.rev or '' -- written before revisions existed: any revision goes
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

-- flat returns the state as strings in the order of F's first ten, for the client to rebuild it.
local function flat(s)
  return {fmt(s.price), s.leader, fmt(s.leader_max), fmt(s.bids), fmt(s.ends_at), s.closed and '1' or '0',
    s.sold and '1' or '0', s.winner, fmt(s.final), fmt(s.seq)}
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
local OK, NOT_FOUND, NOT_STARTED, CLOSED, TOO_LOW, BUY_NOW_GONE, STARTED, STALE, INCOMPLETE, BUSY = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9

-- opening checks an action's time, closing first if due: {code} or nil when open.
local function opening(s, stream, evs, now)
  close_if_due(s, stream, evs, now)
  local st = status(s, now)
  if st == 'scheduled' then return NOT_STARTED end
  if st ~= 'open' then return CLOSED end
  return nil
end

-- step applies one action to s: 'get' or 'close' (closing if due), 'bid', 'buynow' or 'reschedule'. It appends the
-- events to the stream and to evs and returns {code, min next bid (for TOO_LOW)} and whether s changed,
-- which a raised maximum does without an event.
local function step(s, stream, evs, now, op, bidder, max, exact)
  if op == 'get' or op == 'close' then
    close_if_due(s, stream, evs, now)
    return OK, 0, false
  end
  if op == 'reschedule' then -- an operator's new end (max, ms): extend, or end now when it has passed
    close_if_due(s, stream, evs, now)
    if s.closed or s.sold then return CLOSED, 0, false end
    s.ends_at = math.max(max, now)
    emit(s, stream, evs, now, 'extended', '', s.price, false)
    close_if_due(s, stream, evs, now)
    return OK, 0, false
  end
  local code = opening(s, stream, evs, now) or OK
  if code ~= OK then
    return code, 0, false
  end
  if op == 'buynow' then
    if not s.buy_now or not (s.bids == 0 or (s.reserve and not reserve_met(s))) then
      return BUY_NOW_GONE, 0, false
    end
    s.sold, s.winner, s.final, s.price = true, bidder, s.buy_now, s.buy_now
    s.leader, s.leader_max = bidder, s.buy_now -- the buyer holds the price (State.BuyNow)
    emit(s, stream, evs, now, 'sold', bidder, s.final, false)
    return OK, 0, false
  end
  if bidder == s.leader then
    if max <= s.leader_max then
      return TOO_LOW, s.leader_max + 1, false
    end
    s.leader_max = max
    if s.reserve and s.price < s.reserve then
      local p = math.min(max, s.reserve)
      if p > s.price then
        s.price = p
        emit(s, stream, evs, now, 'bid', bidder, p, true)
      end
    end
    extend(s, stream, evs, now)
    return OK, 0, true
  end
  local mn = s.start_price
  if s.leader ~= '' then mn = s.price + step_at(s, s.price) end
  if max < mn then
    return TOO_LOW, mn, false
  end
  s.bids = s.bids + 1
  if s.leader == '' then
    local price = s.start_price
    if exact then price = max end
    s.leader, s.leader_max, s.price = bidder, max, raise_to_reserve(s, price, max)
    emit(s, stream, evs, now, 'bid', bidder, s.price, false)
  elseif max > s.leader_max then
    local price = math.min(max, s.leader_max + step_at(s, s.leader_max))
    if exact then price = max end
    s.leader, s.leader_max, s.price = bidder, max, raise_to_reserve(s, price, max)
    emit(s, stream, evs, now, 'bid', bidder, s.price, false)
  else
    s.price = raise_to_reserve(s, math.min(s.leader_max, max + step_at(s, max)), s.leader_max)
    emit(s, stream, evs, now, 'bid', s.leader, s.price, true)
  end
  extend(s, stream, evs, now)
  return OK, 0, true
end
