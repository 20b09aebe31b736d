-- auction_step.lua: one atomic auction step: read (closing if due), bid, buy now, or close.
-- KEYS[1] state HASH  KEYS[2] events STREAM
-- ARGV[1] 'get' | 'close' | 'bid' | 'buynow'  ARGV[2] now override (ms, '' in production)
-- ARGV[3] bidder  ARGV[4] maximum  ARGV[5] '1' for an exact bid
-- Returns {code, min next bid (for TOO_LOW), state fields (see F), {events as {seq, kind, at, bidder,
-- price, proxy, ends_at}...}, config JSON}. Events of a close are kept even when the action is refused.
local s = load(KEYS[1])
if not s then
  return {NOT_FOUND}
end
local now = now_ms(ARGV[2])
local op, evs, code, minimum = ARGV[1], {}, OK, 0
if op == 'get' or op == 'close' then
  close_if_due(s, KEYS[2], evs, now)
elseif op == 'buynow' then
  code = opening(s, KEYS[2], evs, now) or OK
  if code == OK then
    if not s.buy_now or not (s.bids == 0 or (s.reserve and not reserve_met(s))) then
      code = BUY_NOW_GONE
    else
      s.sold, s.winner, s.final, s.price = true, ARGV[3], s.buy_now, s.buy_now
      emit(s, KEYS[2], evs, now, 'sold', ARGV[3], s.final, false)
    end
  end
elseif op == 'bid' then
  code = opening(s, KEYS[2], evs, now) or OK
  local b, max, exact = ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1'
  if code == OK and b == s.leader then
    if max <= s.leader_max then
      code, minimum = TOO_LOW, s.leader_max + 1
    else
      s.leader_max = max
      if s.reserve and s.price < s.reserve then
        local p = math.min(max, s.reserve)
        if p > s.price then
          s.price = p
          emit(s, KEYS[2], evs, now, 'bid', b, p, true)
        end
      end
      extend(s, KEYS[2], evs, now)
      save(KEYS[1], s) -- a raised maximum is state even without an event
    end
  elseif code == OK then
    local mn = s.start_price
    if s.leader ~= '' then mn = s.price + step_at(s, s.price) end
    if max < mn then
      code, minimum = TOO_LOW, mn
    else
      s.bids = s.bids + 1
      if s.leader == '' then
        local price = s.start_price
        if exact then price = max end
        s.leader, s.leader_max, s.price = b, max, raise_to_reserve(s, price, max)
        emit(s, KEYS[2], evs, now, 'bid', b, s.price, false)
      elseif max > s.leader_max then
        local price = math.min(max, s.leader_max + step_at(s, s.leader_max))
        if exact then price = max end
        s.leader, s.leader_max, s.price = b, max, raise_to_reserve(s, price, max)
        emit(s, KEYS[2], evs, now, 'bid', b, s.price, false)
      else
        s.price = raise_to_reserve(s, math.min(s.leader_max, max + step_at(s, max)), s.leader_max)
        emit(s, KEYS[2], evs, now, 'bid', s.leader, s.price, true)
      end
      extend(s, KEYS[2], evs, now)
    end
  end
end
if #evs > 0 then
  save(KEYS[1], s)
end
return {code, minimum, flat(KEYS[1]), evs, redis.call('HGET', KEYS[1], 'cfg')}
