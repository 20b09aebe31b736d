-- secret_swap.lua: replaces a shared secret only if it still holds what the caller read, so that two
-- instances rotating the signing keys at once cannot lose each other's key.
-- KEYS[1] the secret (see keys.go)
-- ARGV[1] the value the caller read ('' when there was none)  ARGV[2] the new value
-- Returns 1 if replaced, 0 if the secret had changed meanwhile.
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
