-- auction_step.lua: a batch of actions on one auction, each applied in turn as if in an atomic step of
-- its own: a read (closing if due), a close, a bid, a buy-now or an operator's new end.
-- KEYS[1] state HASH  KEYS[2] events STREAM  KEYS[3] bidders HASH
-- ARGV[1] now override (ms, '' in production)  ARGV[2] the config revision the actions were checked
-- against ('' any)  ARGV[3] the revision whose config JSON the client holds  ARGV[4] the auction's
-- pub/sub channel, told the last sequence number when the batch appended events, so that other
-- instances' live feeds read them at once; then per action: 'get' | 'close' | 'bid' | 'buynow' |
-- 'reschedule', bidder, maximum (for 'reschedule', the new end in ms), '1' for an exact bid
-- Returns {NOT_FOUND}, {STALE}, or {revision, config JSON (false when the client holds it), answers...},
-- each answer {code, min next bid (for TOO_LOW), state fields (F's first ten), {events as {seq, kind,
-- at, bidder, price, proxy, ends_at}...}}, or only {code, min next bid} when the action changed nothing
-- (the state is the previous answer's): most bids of a hot auction are refused as too low. The first
-- answer is always whole. Events of a close are kept even when the action is refused.
local s = load(KEYS[1])
if not s then
  return {NOT_FOUND}
end
if ARGV[2] ~= '' and ARGV[2] ~= s.rev then
  return {STALE}
end
local now = now_ms(ARGV[1])
local out, changed, seq = {s.rev, false}, false, s.seq
if ARGV[3] ~= s.rev then
  out[2] = redis.call('HGET', KEYS[1], 'cfg')
end
for i = 5, #ARGV, 4 do
  local evs = {}
  local code, minimum, raised = step(s, KEYS[2], evs, now, ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3] == '1')
  if code == OK and (ARGV[i] == 'bid' or ARGV[i] == 'buynow') then
    redis.call('HSETNX', KEYS[3], ARGV[i + 1], '1')
  end
  local moved = raised or #evs > 0
  if moved or #out == 2 then
    out[#out + 1] = {code, minimum, flat(s), evs}
  else
    out[#out + 1] = {code, minimum}
  end
  changed = changed or moved
end
if changed then
  save(KEYS[1], s)
end
if s.seq ~= seq then
  redis.call('PUBLISH', ARGV[4], fmt(s.seq))
end
return out
