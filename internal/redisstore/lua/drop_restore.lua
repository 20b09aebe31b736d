-- drop_restore.lua: one step of taking back a drop that Redis lost while the SQL record kept its claims
-- (drop.Store.Restore). The claims come in pieces, a call each; the first piece clears what an earlier
-- attempt left, and the last call creates the drop only if every claim is there, so that a restore cut
-- short never leaves a drop that hands a unit out again. One restore at a time holds the drop
-- (KEYS[6], renewed by each call, lapsing 10 s after the last): another one's first piece is refused
-- meanwhile rather than clearing the pieces sent, which let racing restores clear each other forever.
-- Claims cannot race it: with no meta, the claim script answers "not found".
-- KEYS[1] meta HASH  KEYS[2] claims STREAM  KEYS[3] mine HASH  KEYS[4] keys HASH  KEYS[5] codes LIST
-- KEYS[6] restoring STRING (the token of the restore that holds the drop)
-- ARGV[1] 'first', 'more' or 'last'  ARGV[2] this restore's token
-- 'first' and 'more': ARGV[3..] per claim, in rising order: seq, claim id, code, visitor, at ms,
-- idempotency key ('' none); a claim at or below the stream's last is there already and skipped.
-- 'last': ARGV[3] the number of claims, ARGV[4] stock, ARGV[5] per visitor, ARGV[6] opens_at ms,
-- ARGV[7] closes_at ms (0: never), ARGV[8] config JSON, ARGV[9] the config's revision, ARGV[10..] the
-- codes to hand out in order (none: generated per claim)
-- Returns 0, 6 (STARTED) when the drop has claims, 8 (INCOMPLETE) when the last call finds claims
-- missing or another restore took the drop over, or 9 (BUSY) when another restore holds it.
local claimed = redis.call('HGET', KEYS[1], 'claimed')
if claimed and tonumber(claimed) > 0 then
  return 6
end

local holder = redis.call('GET', KEYS[6])
if ARGV[1] == 'first' then
  if holder and holder ~= ARGV[2] then
    return 9
  end
elseif holder ~= ARGV[2] then
  return 8
end

if ARGV[1] == 'last' then
  local n = tonumber(ARGV[3])
  if redis.call('XLEN', KEYS[2]) ~= n or stream_top(KEYS[2]) ~= n then
    return 8
  end
  create_drop(4, ARGV[3], nil)
  redis.call('DEL', KEYS[6])
  return 0
end

redis.call('SET', KEYS[6], ARGV[2], 'PX', 10000)
if ARGV[1] == 'first' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
end
local last = stream_top(KEYS[2])
for i = 3, #ARGV, 6 do
  local seq, v, key = ARGV[i], ARGV[i + 3], ARGV[i + 5]
  if tonumber(seq) > last then
    if key == '' then
      redis.call('XADD', KEYS[2], seq .. '-1', 'claim_id', ARGV[i + 1], 'code', ARGV[i + 2], 'visitor', v, 'at', ARGV[i + 4])
    else
      redis.call('XADD', KEYS[2], seq .. '-1', 'claim_id', ARGV[i + 1], 'code', ARGV[i + 2], 'visitor', v, 'at', ARGV[i + 4],
        'key', key)
    end
    local mine = redis.call('HGET', KEYS[3], v)
    if mine then
      mine = mine .. ',' .. seq
    else
      mine = seq
    end
    redis.call('HSET', KEYS[3], v, mine)
    if key ~= '' then
      redis.call('HSET', KEYS[4], v .. '\0' .. key, seq)
    end
    last = tonumber(seq)
  end
end
return 0
