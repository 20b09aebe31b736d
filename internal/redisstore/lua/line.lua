-- line.lua: on Redis Cluster, where the visit script cannot reach the visitor's slot, starts a join that
-- may move a visitor between lines: it takes the visitor's join lock, so that one visitor's joins run
-- one at a time, and points the visitor's line pointer at the room before the place is taken there (see
-- point_line in lib.lua). The pointer therefore always lists every line the visitor may be in, even if
-- the rushgate running the join dies before it ends; the lock keeps a racing join of the same visitor
-- from leaving a line that this join has just taken (or kept) a place in.
-- KEYS[1] the visitor's line pointer  KEYS[2] the visitor's join lock (see keys.go)
-- ARGV[1] room id  ARGV[2] pointer lifetime (seconds)  ARGV[3] the visitor's origin room ('' for none)
-- ARGV[4] this join's lock token  ARGV[5] lock lifetime (ms), longer than any join takes
-- Returns {0} if another join of the visitor holds the lock (try again shortly), else {1, the other
-- lines the visitor may still be in, space-separated, or ''}; the caller releases the lock with
-- line_settle.lua.
if not redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[5]) then
  return {0}
end
return {1, point_line(KEYS[1], ARGV[1], ARGV[2], ARGV[3])}
