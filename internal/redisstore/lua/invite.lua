-- invite.lua: a room's invite codes: add them, take one for a join, or give one back.
-- KEYS[1] meta  KEYS[2] invites HASH code -> 0 (unused) or 1 (used) (see keys.go)
-- ARGV[1] 'add' (ARGV[2..] the codes), 'take' or 'return' (ARGV[2] the code)
-- Returns -1 for an unknown room; for add, how many codes were new; for take, 1 if the code was listed
-- and unused (and is used now), else 0; for return, 1.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if ARGV[1] == 'add' then
  local added = 0
  for i = 2, #ARGV do
    added = added + redis.call('HSETNX', KEYS[2], ARGV[i], '0')
  end
  return added
elseif ARGV[1] == 'take' then
  if redis.call('HGET', KEYS[2], ARGV[2]) == '0' then
    redis.call('HSET', KEYS[2], ARGV[2], '1')
    return 1
  end
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], '0')
end
return 1
