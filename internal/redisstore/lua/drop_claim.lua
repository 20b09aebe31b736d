-- drop_claim.lua: a batch of claims on one drop, each checked and taken in turn as if in a step of its
-- own, and appended to the claims stream (the drop's log and its outbox to SQL) in the same step.
-- KEYS[1] meta HASH  KEYS[2] claims STREAM (id seq-1)  KEYS[3] mine HASH (visitor -> "seq,seq")
-- KEYS[4] keys HASH (visitor NUL idempotency key -> seq)  KEYS[5] codes LIST
-- ARGV[1] now override (ms)  ARGV[2] drop id  ARGV[3] the config revision the claims were checked
-- against ('' any), then per claim: visitor, idempotency key ('' none), the drawn part of a generated
-- code, to which take adds '-' and the claim's number, as drop.GeneratedCode does
-- Returns {1} not found, {7} stale (another revision), or {now ms, one answer per claim...}. An answer is
-- {seq, code} for a new claim (made now, its id the drop's id '.' seq); the number 2 (not open) or 3
-- (sold out); or {code, created (1/0), {claim as seq, id, code, visitor, at ms}...} for an idempotent
-- replay (0, 0, the claim) or a visitor at the limit (4, 0, the visitor's claims). A crowd's claims are
-- almost all new, so their answers are the smallest.
local m = redis.call('HMGET', KEYS[1], 'stock', 'per_visitor', 'opens', 'closes', 'claimed', 'listed', 'rev')
if not m[1] then
  return {1}
end
if ARGV[3] ~= '' and ARGV[3] ~= m[7] then
  return {7}
end
local now = now_ms(ARGV[1])
local stock, per, opens, closes, listed = tonumber(m[1]), tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), (tonumber(m[6]) or 0) > 0
local claimed = tonumber(m[5])
local open = now >= opens and (closes == 0 or now < closes)
local at = string.format('%d', now)

local function claim_of(seq)
  local e = redis.call('XRANGE', KEYS[2], seq .. '-1', seq .. '-1')[1]
  local f = {}
  for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
  return {seq, f.claim_id, f.code, f.visitor, f.at}
end

-- take records claim seq (the claims' count, already raised) as visitor v's, under its idempotency key
-- if any (kept in the entry too, for the SQL record), and answers it.
local function take(seq, v, key, code)
  if listed then
    code = redis.call('LINDEX', KEYS[5], claimed - 1)
  else
    code = code .. '-' .. seq
  end
  if key == '' then
    redis.call('XADD', KEYS[2], seq .. '-1', 'claim_id', ARGV[2] .. '.' .. seq, 'code', code, 'visitor', v, 'at', at)
  else
    redis.call('XADD', KEYS[2], seq .. '-1', 'claim_id', ARGV[2] .. '.' .. seq, 'code', code, 'visitor', v, 'at', at,
      'key', key)
    redis.call('HSET', KEYS[4], v .. '\0' .. key, seq)
  end
  return {seq, code}
end

local function claim(v, key, code)
  if key ~= '' then
    local seq = redis.call('HGET', KEYS[4], v .. '\0' .. key)
    if seq then
      return {0, 0, claim_of(seq)}
    end
  end
  if not open then
    return 2
  end
  -- A visitor's first claim, the common case, is counted and kept in one command. Every limit is at
  -- least one, so a visitor with no claim yet is under it.
  if claimed < stock then
    local seq = string.format('%d', claimed + 1)
    if redis.call('HSETNX', KEYS[3], v, seq) == 1 then
      claimed = claimed + 1
      return take(seq, v, key, code)
    end
  end
  local mine = redis.call('HGET', KEYS[3], v) or ''
  local count = 0
  if mine ~= '' then
    count = select(2, string.gsub(mine, ',', ',')) + 1
  end
  if count >= per then
    local out = {4, 0}
    for seq in string.gmatch(mine, '%d+') do out[#out + 1] = claim_of(seq) end
    return out
  end
  if claimed >= stock then
    return 3
  end
  claimed = claimed + 1
  local seq = string.format('%d', claimed)
  redis.call('HSET', KEYS[3], v, mine .. ',' .. seq) -- mine holds a claim: HSETNX refused it
  return take(seq, v, key, code)
end

local out = {at}
for i = 4, #ARGV, 3 do
  out[#out + 1] = claim(ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
if claimed ~= tonumber(m[5]) then
  redis.call('HSET', KEYS[1], 'claimed', string.format('%d', claimed))
end
return out
