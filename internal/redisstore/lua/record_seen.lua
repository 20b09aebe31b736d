-- record_seen.lua: an instance says which SQL record it records into, and hears how many different
-- records the instances heard from within the horizon record into; older words are forgotten.
-- KEYS[1] records HASH (record id -> when an instance last said it records into it, ms)
-- ARGV[1] the record's id  ARGV[2] the horizon (ms)
-- Returns the number of different records.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now)
local heard = redis.call('HGETALL', KEYS[1])
local n = 0
for i = 1, #heard, 2 do
  if now - tonumber(heard[i + 1]) > tonumber(ARGV[2]) then
    redis.call('HDEL', KEYS[1], heard[i])
  else
    n = n + 1
  end
end
return n
