-- delete.lua: remove a room with its line and admissions. UNLINK frees large sets off the main thread.
-- KEYS[1..6] meta, queue, seen, active, adm, window (see keys.go)
-- Returns 1 if the room existed, 0 otherwise.
local existed = redis.call('EXISTS', KEYS[1])
redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
return existed
