-- line.lua: on Redis Cluster, where the visit script cannot reach the visitor's slot, starts a join that
-- may move a visitor between lines: it takes the visitor's join lock, so that one visitor's joins run
-- one at a time, and points the visitor's line pointer at the room before the place is taken there (see
-- point_line in lib.lua). The pointer therefore always lists every line the visitor may be in, even if
-- the rushgate running the join dies before it ends; the lock keeps a racing join of the same visitor
-- from leaving a line that this join has just taken (or kept) a place in.
-- A lock can outlive neither a stalled rushgate nor a step delayed on its way, so the lock comes with a
-- fence: a number higher than any earlier join of the visitor's, which this join's steps in the rooms'
-- slots carry (visit.lua, leave.lua). A room refuses a step whose fence is lower than one it has seen
-- for the visitor, so once a later join has touched a line, an earlier one can neither take a place in
-- it nor leave it. The fence is the server's time in ms, or one more than the visitor's last fence if
-- the clock went back (a failover), so that rooms can forget fences once no step can carry them.
-- KEYS[1] the visitor's line pointer  KEYS[2] the visitor's join lock  KEYS[3] its last fence (keys.go)
-- ARGV[1] room id  ARGV[2] pointer lifetime (seconds)  ARGV[3] the visitor's origin room ('' for none)
-- ARGV[4] now override (ms, '' in production)  ARGV[5] lock lifetime (ms), longer than any join takes
-- ARGV[6] how long the visitor's last fence is kept (ms): as long as rooms remember fences (admit.lua)
-- Returns {0} if another join of the visitor holds the lock (try again shortly), else {1, the other
-- lines the visitor may still be in, space-separated, or '', the fence}; the lock's value is the fence,
-- and the caller releases it with line_settle.lua.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {0}
end
local fence = string.format('%d', math.max(now_ms(ARGV[4]), tonumber(redis.call('GET', KEYS[3]) or '0') + 1))
redis.call('SET', KEYS[2], fence, 'PX', ARGV[5])
redis.call('SET', KEYS[3], fence, 'PX', ARGV[6])
return {1, point_line(KEYS[1], ARGV[1], ARGV[2], ARGV[3]), fence}
