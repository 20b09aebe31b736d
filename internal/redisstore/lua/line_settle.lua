-- line_settle.lua: ends a join that moved a visitor between lines. Once the join has left the other
-- lines its pointer listed, the pointer names only the room it joined; a later join that changed the
-- pointer meanwhile wins, and then the pointer stays as it is. On Cluster it also releases the join's
-- lock (line.lua), if the join still holds it.
-- KEYS[1] the visitor's line pointer  KEYS[2] the visitor's join lock (see keys.go)
-- ARGV[1] the pointer as the join left it ('room other ...'), or '' when there is nothing to settle
-- ARGV[2] the room alone  ARGV[3] the join's fence, its lock's value (line.lua), or '' when it holds no
-- lock (standalone Redis)
-- Returns 1 if settled, 0 if not.
local settled = 0
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  settled = 1
end
if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) == ARGV[3] then
  redis.call('DEL', KEYS[2])
end
return settled
