-- visit.lua: the joins and status reads of one room's visitors, a batch of them in one step.
-- KEYS[1..7] meta, queue, seen, active, adm, window, fences (see keys.go)
-- KEYS[7+j]  (standalone Redis only, where scripts may span slots) the line pointer of the j-th visitor
--            whose mode is 'join': a join that leaves the visitor waiting points it at this room in the
--            same step, saving a round trip
-- ARGV[1] now override (ms, '' in production)  ARGV[2] room id  ARGV[3] line pointer lifetime (seconds)
-- ARGV[4i .. 4i+3] the i-th visitor (from 1): its id; 'new' (a join of a visitor whose token this join
--            issued: in no line, holding no admission, with no pointer), 'join', 'fenced' (a join on
--            Cluster, see line.lua) or 'status'; the random order drawn in case it arrives in the
--            pre-queue (1 .. 2^50-1); for 'join' its origin room ('' for none, see point_line), for
--            'fenced' the join's fence, else ''. At most a few hundred visitors, whose ids and presence go
--            through Lua's unpack (which takes some thousands of values)
-- Visitors are served in ARGV order, each exactly as if it had a step of its own: an admitted visitor's
-- admission is collected (grace turns into the session); a waiting visitor's presence is recorded; a join
-- of a visitor in neither state takes a place at the back.
-- Arrivals at the back show their presence through one entry of the presence set for the whole step (see
-- ARRIVALS in lib.lua); every other visit records the visitor's own.
-- Returns {-1} for an unknown room, else three fields per visitor: 0, 0, '' none; 1, position, the other
-- lines it may still be in (space-separated, see point_line in lib.lua) or '' waiting; 2, admission id,
-- expiry ms admitted; 3, 0, '' a fenced join refused, a later join of the visitor having come first; 4, 0,
-- '' a join refused because the room takes no new joins (mode reject); 5, 0, '' waiting, or reading the
-- status without a place, in a room whose drop is sold out; 6, 0, '' a join refused for that.
local cfg = room_cfg(KEYS[1])
if not cfg then
  return {-1}
end
local now = now_ms(ARGV[1])
local lines = #KEYS > 7
local preopen = cfg.opens > 0 and now < cfg.opens
local n = (#ARGV - 3) / 4

-- Where everyone but the new stood before this step, in one command per sorted set for the whole batch:
-- a visit only ever adds to these (a place in line, a longer session), so a visitor found in neither is
-- in neither unless this step put it there. New visitors are in neither by definition, and most of a
-- crowd's joins are new.
local ids = {}      -- the visitors to look up
local at = {}       -- i -> the i-th visitor's index in ids, if looked up
local pointers = {} -- i -> the i-th visitor's line pointer key, for joins on standalone Redis
for i = 1, n do
  local mode = ARGV[4 * i + 1]
  if mode ~= 'new' then
    ids[#ids + 1] = ARGV[4 * i]
    at[i] = #ids
  end
  if mode == 'join' and lines then
    pointers[i] = KEYS[8 + #pointers]
  end
end
local expiries, orders = {}, {}
if #ids > 0 then
  expiries = redis.call('ZMSCORE', KEYS[4], unpack(ids))
  orders = redis.call('ZMSCORE', KEYS[2], unpack(ids))
end

-- Arrivals after opening go to the back of the line, behind everyone, so adding them at the end of the
-- step changes no answer given in it: they are written once, in one command each, for the whole batch.
-- Arrivals before opening are placed at random among the others and are written at once.
local back = {}   -- visitor -> its position, for arrivals at the back in this step
local placed = {} -- visitor -> true, for arrivals in the pre-queue in this step
local queue = {}  -- ZADD arguments for the queue: order, visitor, ...
local seen = {}   -- ZADD arguments for presence: time, visitor, ...
local seq, card   -- the arrival counter and the line's length before this step's arrivals at the back
local first       -- the sequence of this step's first arrival at the back

-- point the i-th visitor's line at this room, returning the lines it may still be in
local function point(i, origin)
  if not pointers[i] then
    return ''
  end
  return point_line(pointers[i], ARGV[2], ARGV[3], origin)
end

local function present(v)
  seen[#seen + 1] = now
  seen[#seen + 1] = v
end

-- arrive takes a place for a visitor in no line and returns its position.
local prejoined = 0 -- arrivals before the opening, which take no sequence number, for the joined total
local function arrive(v, draw)
  if preopen then
    prejoined = prejoined + 1
    present(v)
    redis.call('ZADD', KEYS[2], tonumber(draw), v)
    placed[v] = true
    return redis.call('ZRANK', KEYS[2], v) + 1
  end
  if not seq then
    seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
    card = redis.call('ZCARD', KEYS[2])
    first = seq + 1
  end
  seq, card = seq + 1, card + 1
  queue[#queue + 1] = SPAN + seq
  queue[#queue + 1] = v
  back[v] = card
  return card
end

-- admitted collects the visitor's admission if it holds a live one; the expiry read before the step
-- says who may.
local function admitted(i, v)
  local before = at[i] and expiries[at[i]]
  if not before or tonumber(before) <= now then
    return nil
  end
  local id, exp, collected = live(KEYS[4], KEYS[5], v, now)
  if id and not collected then
    exp = now + cfg.ttl
    redis.call('ZADD', KEYS[4], exp, v)
    redis.call('HSET', KEYS[5], v, id .. '|1')
  end
  return id, exp
end

local function visit(i, v, mode, draw, arg)
  if mode == 'fenced' and not fenced(KEYS[7], v, arg) then
    return 3, 0, ''
  end
  local id, exp = admitted(i, v)
  if id then
    return 2, id, exp
  end
  local position = back[v]
  if not position and ((at[i] and orders[at[i]]) or placed[v]) then
    position = redis.call('ZRANK', KEYS[2], v) + 1
  end
  if position then
    present(v)
    if cfg.soldout then
      return 5, 0, ''
    end
    return 1, position, point(i, arg)
  end
  if cfg.soldout then -- a read is told so, as a join is refused for it
    return mode == 'status' and 5 or 6, 0, ''
  end
  if mode == 'status' then
    return 0, 0, ''
  end
  if cfg.mode == 'reject' then
    return 4, 0, ''
  end
  return 1, arrive(v, draw), point(i, arg)
end

-- zadd writes flat score/member pairs in one command.
local function zadd(key, flat)
  if #flat > 0 then
    redis.call('ZADD', key, unpack(flat))
  end
end

local out = {}
for i = 1, n do
  local a, o = 4 * i, 3 * i
  out[o - 2], out[o - 1], out[o] = visit(i, ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
end
zadd(KEYS[2], queue)
if seq then
  seen[#seen + 1] = now
  seen[#seen + 1] = ARRIVALS .. first .. ':' .. seq
  redis.call('HSET', KEYS[1], 'seq', seq)
end
if prejoined > 0 then
  redis.call('HINCRBY', KEYS[1], 'prejoined', prejoined)
end
zadd(KEYS[3], seen)
return out
