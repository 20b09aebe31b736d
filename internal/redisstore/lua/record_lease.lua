-- record_lease.lua: a recorder takes or renews its lease on one entity's outbox (the entity's stream),
-- and moves the entity's cursor once what it read is committed to SQL (see recorder.go).
-- KEYS[1] lease STRING (the recorder holding it, expiring)  KEYS[2] cursor STRING (sequence number)
-- ARGV[1] the recorder  ARGV[2] the lease's length (ms)  ARGV[3] the last sequence number it recorded
-- ('' nothing yet)
-- Returns the cursor (the sequence number up to which the stream is recorded, 0 for none), or false
-- while another recorder holds the lease. The cursor only moves forward: two recorders that both wrote
-- the same entries (one of them after its lease lapsed) may move it in either order.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return false
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local cursor = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[3] ~= '' and tonumber(ARGV[3]) > cursor then
  cursor = tonumber(ARGV[3])
  redis.call('SET', KEYS[2], ARGV[3])
end
return cursor
