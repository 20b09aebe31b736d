-- line.lua: on Redis Cluster, where the visit script cannot reach the visitor's slot, points a joining
-- visitor's line pointer at the room it joined (see point_line in lib.lua).
-- KEYS[1] the visitor's line pointer (see keys.go)
-- ARGV[1] room id  ARGV[2] pointer lifetime (seconds)
-- Returns the other lines the visitor may still be in, space-separated, or ''.
return point_line(KEYS[1], ARGV[1], ARGV[2])
