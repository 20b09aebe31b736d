-- delete.lua: remove a room with its line and admissions. UNLINK frees large sets off the main thread.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- Returns 1 if the room existed, 0 otherwise.
local existed = redis.call('EXISTS', KEYS[1])
redis.call('UNLINK', unpack(KEYS))
return existed
