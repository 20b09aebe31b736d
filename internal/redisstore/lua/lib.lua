-- lib.lua: helpers prepended to every rushgate room script (not a script of its own).
-- Time is the server's (TIME) unless a test passes a fixed instant: every decision about time is taken
-- here, inside the atomic step, never by a client's clock.
local SPAN = 1125899906842624 -- 2^50: orders below are pre-queue draws, above are arrival sequences

-- The presence set (seen) holds, besides visitors, one entry per step that added visitors to the back of
-- the line: '\0arrivals:FIRST:LAST', scored with the step's time, stands for the presence of arrivals
-- FIRST..LAST (sequences) that have shown none since. A crowd's joins thus write one presence entry per
-- batch instead of one per visitor; the admission step sweeps such an entry like a visitor's (admit.lua).
local ARRIVALS = '\0arrivals:'

-- arrivals returns the sequences an entry of the presence set stands for, or nil for a visitor's entry.
local function arrivals(member)
  local first, last = string.match(member, '^%zarrivals:(%d+):(%d+)$')
  if first then
    return tonumber(first), tonumber(last)
  end
  return nil
end

-- stream_top returns the sequence number of the last entry of a drop's or an auction's stream (IDs
-- seq-1), 0 when it has none.
local function stream_top(key)
  local e = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
  if not e then
    return 0
  end
  return tonumber(string.match(e[1], '^(%d+)'))
end

local function now_ms(override)
  if override ~= nil and override ~= '' then
    return tonumber(override)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- room_cfg reads the config fields a script needs, or nil when the room does not exist. mode is '' (fifo),
-- 'fifo', 'passthrough', 'reject' or 'queue_all' (see room.Mode); units is the units left of the drop the
-- room follows (-1: none), soldout whether that drop has none, drop_opens and closes its opening and
-- closing (ms, 0: none).
local function room_cfg(meta)
  local v = redis.call('HMGET', meta, 'capacity', 'rate_admits', 'rate_per', 'ttl', 'grace', 'idle', 'opens', 'paused', 'epoch',
    'mode', 'units', 'soldout', 'closes', 'drop_opens')
  if not v[9] then
    return nil
  end
  return {
    capacity = tonumber(v[1]), rate_admits = tonumber(v[2]), rate_per = tonumber(v[3]),
    ttl = tonumber(v[4]), grace = tonumber(v[5]), idle = tonumber(v[6]), opens = tonumber(v[7]),
    paused = v[8] == '1', epoch = v[9], mode = v[10] or '', units = tonumber(v[11] or '-1'), soldout = v[12] == '1',
    closes = tonumber(v[13] or '0'), drop_opens = tonumber(v[14] or '0'),
  }
end

-- room_drop returns the drop the room's config follows ('' for none), read from the config itself,
-- which every version writes whole, so that no field of its own can go stale.
local function room_drop(meta)
  local c = redis.call('HGET', meta, 'cfg')
  local d = c and cjson.decode(c).drop
  if type(d) ~= 'string' then
    return ''
  end
  return d
end

-- live returns a visitor's admission id, expiry and collected flag if it has not expired by now.
local function live(active, adm, v, now)
  local exp = redis.call('ZSCORE', active, v)
  if not exp or tonumber(exp) <= now then
    return nil
  end
  local a = redis.call('HGET', adm, v)
  local id, collected = string.match(a, '^(.*)|(%d)$')
  return id, tonumber(exp), collected == '1'
end

-- fenced lets a step of a Cluster join carrying fence (see line.lua) touch the visitor's place in this
-- room unless a later join of the visitor has touched it, and then remembers the fence; false refuses
-- the step.
local function fenced(fences, v, fence)
  local last = redis.call('ZSCORE', fences, v)
  if last and tonumber(last) > tonumber(fence) then
    return false
  end
  redis.call('ZADD', fences, fence, v)
  return true
end

-- point_line points a visitor's line pointer (a STRING) at room and returns, space-separated, the other
-- lines the visitor may still be in, which the caller must leave. The pointer keeps those lines after
-- the room until the caller has left them (line_settle.lua), so that if the caller dies first, the
-- visitor's next join leaves them instead: a visitor is never left in two lines for good. Room ids hold
-- no spaces (room.ValidID).
-- A visitor with no pointer is in no line but its origin's (the room whose join issued its token, ''
-- for none; see room.Entrant): a join of the origin writes no pointer, and elsewhere the origin is the
-- line to leave. The common cases cost one EXISTS (a crowd's visitor joining its origin again) or one
-- SET (a visitor in no other line).
local function point_line(key, room, ttl, origin)
  if origin == room and redis.call('EXISTS', key) == 0 then
    return ''
  end
  local prev = redis.call('SET', key, room, 'GET', 'EX', ttl) or origin
  if prev == '' or prev == room then
    return ''
  end
  local others = {}
  for r in string.gmatch(prev, '%S+') do
    if r ~= room then
      others[#others + 1] = r
    end
  end
  if #others == 0 then
    return ''
  end
  local rest = table.concat(others, ' ')
  redis.call('SET', key, room .. ' ' .. rest, 'EX', ttl)
  return rest
end
