-- line_settle.lua: once a joining visitor has left the other lines its pointer listed, the pointer names
-- only the room it joined. A later join that changed the pointer meanwhile wins: then nothing changes.
-- KEYS[1] the visitor's line pointer (see keys.go)
-- ARGV[1] the pointer as the join left it ('room other ...')  ARGV[2] the room alone
-- Returns 1 if settled, 0 if the pointer had moved on.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
