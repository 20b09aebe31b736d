-- put.lua: create a room or replace its config, keeping its line and admissions.
-- KEYS[1] meta
-- ARGV[1] capacity  ARGV[2] rate admits (0: none)  ARGV[3] rate per (ms)  ARGV[4] session ttl (ms)
-- ARGV[5] grace (ms)  ARGV[6] idle timeout (ms)  ARGV[7] opens_at (ms, 0: none)  ARGV[8] paused (1/0)
-- ARGV[9] config JSON  ARGV[10] epoch to use if the room is new  ARGV[11] mode ('' for fifo)
-- Returns 1.
redis.call('HSET', KEYS[1], 'capacity', ARGV[1], 'rate_admits', ARGV[2], 'rate_per', ARGV[3], 'ttl', ARGV[4],
  'grace', ARGV[5], 'idle', ARGV[6], 'opens', ARGV[7], 'paused', ARGV[8], 'cfg', ARGV[9],
  'mode', ARGV[11])
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[10])
return 1
