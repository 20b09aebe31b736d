-- admit.lua: one admission step. Expires ended sessions and idle waiters, then admits from the front of
-- the line within capacity (active admissions, counted after the sweep) and the sliding rate window.
-- Cost: O((expired + idle + admitted + fences forgotten) * log N); nothing here walks the line (an
-- arrivals entry of the presence set covers one step's arrivals, at most a visit batch).
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go); meta counts the admissions
--   never collected (graced) and the waiters gone idle (idled) for the room's history
-- ARGV[1] most visitors to admit, and to expire of each kind  ARGV[2] now override (ms)
-- ARGV[3] pub/sub channel for changes  ARGV[4] how long a fence is kept (ms; see line.lua)
-- Returns {-1} for an unknown room, else
--   {{visitor, admission id, expiry ms, ...}, {expired...}, {idle...}, more (1/0), next ms (0: none), total,
--   waiting (the line's length after the step), drop closed (1/0: the drop the room follows is past its
--   closing, see stock.lua), drop opens (ms: that drop's opening while it is to come, else 0), free (the
--   slots left free: capacity less the live admissions, at most the units left; 0 without a capacity)}
local cfg = room_cfg(KEYS[1])
if not cfg then
  return {-1}
end
local max = tonumber(ARGV[1])
local now = now_ms(ARGV[2])
local changed = {}

-- A fence is forgotten once no step of its join can still be on its way.
redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - tonumber(ARGV[4]))

local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, max)
local graced = 0
for _, v in ipairs(expired) do
  local a = redis.call('HGET', KEYS[5], v)
  if a and string.sub(a, -2) == '|0' then
    graced = graced + 1
  end
  redis.call('ZREM', KEYS[4], v)
  redis.call('HDEL', KEYS[5], v)
  changed[#changed + 1] = v
end
if graced > 0 then
  redis.call('HINCRBY', KEYS[1], 'graced', graced)
end

-- Idle waiters: visitors whose last presence is older than the idle timeout, and arrivals whose step's
-- entry is (see ARRIVALS in lib.lua) and who have shown no presence of their own since; those who have
-- are kept, or swept by their own entry. The step looks at about max visitors (an arrivals entry is
-- taken whole), leaving the rest of the stale entries to the next.
local idle = {}
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - cfg.idle, 'LIMIT', 0, max)
local looked, swept = 0, 0
for _, v in ipairs(stale) do
  if looked >= max then
    break
  end
  swept = swept + 1
  redis.call('ZREM', KEYS[3], v)
  local from, to = arrivals(v)
  if from then
    local covered = redis.call('ZRANGEBYSCORE', KEYS[2], SPAN + from, SPAN + to)
    looked = looked + #covered
    for _, w in ipairs(covered) do
      if not redis.call('ZSCORE', KEYS[3], w) then
        redis.call('ZREM', KEYS[2], w)
        idle[#idle + 1] = w
      end
    end
  else
    looked = looked + 1
    if redis.call('ZREM', KEYS[2], v) == 1 then
      idle[#idle + 1] = v
    end
  end
end
for _, v in ipairs(idle) do
  changed[#changed + 1] = v
end
if #idle > 0 then
  redis.call('HINCRBY', KEYS[1], 'idled', #idle)
end

-- The room holds everybody while paused, before its opening, in queue_all until an opening, and
-- before the opening and from the closing of the drop it follows on; in passthrough it lets everybody
-- in, whatever its capacity and rate (see room.Config.Holds).
local budget = 0
local closed = cfg.units >= 0 and cfg.closes > 0 and now >= cfg.closes
local early = cfg.units >= 0 and cfg.drop_opens > 0 and now < cfg.drop_opens
local holds = cfg.paused or cfg.soldout or closed or early or (cfg.opens > 0 and now < cfg.opens) or
  (cfg.mode == 'queue_all' and cfg.opens == 0)
local most = max
if not holds and cfg.units >= 0 then -- never more admissions than units left of the drop it follows
  most = math.min(max, cfg.units - redis.call('ZCARD', KEYS[4]))
end
if not holds and cfg.mode == 'passthrough' then
  budget = most
elseif not holds then
  budget = most
  if cfg.capacity > 0 then
    budget = math.min(budget, cfg.capacity - redis.call('ZCARD', KEYS[4]))
  end
  if cfg.rate_admits > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now - cfg.rate_per)
    budget = math.min(budget, cfg.rate_admits - redis.call('ZCARD', KEYS[6]))
  end
end

-- A sweep that stopped at its limit may have left idle waiters at the front: the step lets nobody in,
-- and the next, at once (more), sweeps on before it does.
if #stale == max or swept < #stale then
  budget = 0
end

local admitted = {}
local n = 0
if budget > 0 then
  local front = redis.call('ZRANGE', KEYS[2], 0, budget - 1)
  n = #front
  for _, v in ipairs(front) do
    local id = cfg.epoch .. '.' .. redis.call('HINCRBY', KEYS[1], 'aseq', 1)
    local exp = now + cfg.grace
    redis.call('ZREM', KEYS[2], v)
    redis.call('ZREM', KEYS[3], v)
    redis.call('ZADD', KEYS[4], exp, v)
    redis.call('HSET', KEYS[5], v, id .. '|0')
    if cfg.rate_admits > 0 then
      redis.call('ZADD', KEYS[6], now, id)
    end
    admitted[#admitted + 1] = v
    admitted[#admitted + 1] = id
    admitted[#admitted + 1] = exp
    changed[#changed + 1] = v
  end
end
local total = redis.call('HINCRBY', KEYS[1], 'total', n)
local waiting = redis.call('ZCARD', KEYS[2])
local more = 0
if #expired == max or #stale == max or swept < #stale or (n == max and waiting > 0) then
  more = 1
end

local next = 0
local function consider(t)
  if t > now and (next == 0 or t < next) then
    next = t
  end
end
local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if first[2] then consider(tonumber(first[2])) end
first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if first[2] then consider(tonumber(first[2]) + cfg.idle) end
if cfg.units >= 0 then -- the line moves at the drop's opening, and hears of its closing then
  consider(cfg.drop_opens)
  consider(cfg.closes)
end
if waiting > 0 then
  if cfg.opens > 0 then consider(cfg.opens) end
  if cfg.rate_admits > 0 and redis.call('ZCARD', KEYS[6]) >= cfg.rate_admits then
    first = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
    consider(tonumber(first[2]) + cfg.rate_per)
  end
end
if #changed > 0 then
  redis.call('PUBLISH', ARGV[3], table.concat(changed, ' '))
end
local free = 0
if cfg.capacity > 0 then
  local live = redis.call('ZCARD', KEYS[4])
  free = cfg.capacity - live
  if cfg.units >= 0 then free = math.min(free, cfg.units - live) end
  free = math.max(0, free)
end
return {admitted, expired, idle, more, next, total, waiting, closed and 1 or 0, early and cfg.drop_opens or 0, free}
