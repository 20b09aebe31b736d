-- drop_claim.lua: one claim, checked and taken in one step, and appended to the claims stream (the
-- drop's log and its outbox to SQL) in the same step.
-- KEYS[1] meta HASH  KEYS[2] claims STREAM (id seq-1)  KEYS[3] mine HASH (visitor -> "seq,seq")
-- KEYS[4] keys HASH (visitor NUL idempotency key -> seq)  KEYS[5] codes LIST
-- ARGV[1] visitor  ARGV[2] idempotency key ('' none)  ARGV[3] generated code  ARGV[4] now override (ms)
-- ARGV[5] drop id
-- Returns {code, created (1/0), {claim as seq, id, code, visitor, at ms}...}: code 0 ok, 1 not found,
-- 2 not open, 3 sold out, 4 already claimed (with the visitor's claims).
local m = redis.call('HMGET', KEYS[1], 'stock', 'per_visitor', 'opens', 'closes', 'claimed', 'listed')
if not m[1] then
  return {1, 0}
end
local now = now_ms(ARGV[4])
local v, key = ARGV[1], ARGV[2]
local function claim_of(seq)
  local e = redis.call('XRANGE', KEYS[2], seq .. '-1', seq .. '-1')[1]
  local f = {}
  for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
  return {seq, f.claim_id, f.code, f.visitor, f.at}
end
if key ~= '' then
  local seq = redis.call('HGET', KEYS[4], v .. '\0' .. key)
  if seq then
    return {0, 0, claim_of(seq)}
  end
end
local opens, closes = tonumber(m[3]), tonumber(m[4])
if now < opens or (closes > 0 and now >= closes) then
  return {2, 0}
end
local mine = redis.call('HGET', KEYS[3], v) or ''
local count = 0
if mine ~= '' then
  count = select(2, string.gsub(mine, ',', ',')) + 1
end
if count >= tonumber(m[2]) then
  local out = {4, 0}
  for seq in string.gmatch(mine, '%d+') do out[#out + 1] = claim_of(seq) end
  return out
end
local claimed = tonumber(m[5])
if claimed >= tonumber(m[1]) then
  return {3, 0}
end
local seq = string.format('%d', claimed + 1)
local code = ARGV[3]
if m[6] == '1' then
  code = redis.call('LINDEX', KEYS[5], claimed)
end
local id = ARGV[5] .. '.' .. seq
local at = string.format('%d', now)
redis.call('XADD', KEYS[2], seq .. '-1', 'claim_id', id, 'code', code, 'visitor', v, 'at', at)
redis.call('HSET', KEYS[1], 'claimed', seq)
if mine == '' then mine = seq else mine = mine .. ',' .. seq end
redis.call('HSET', KEYS[3], v, mine)
if key ~= '' then
  redis.call('HSET', KEYS[4], v .. '\0' .. key, seq)
end
return {0, 1, {seq, id, code, v, at}}
