-- drop_lib.lua: what the scripts that write a drop's config share (drop_put.lua, drop_restore.lua,
-- drop_amend.lua), prepended to them (not a script of its own).

-- written numbers a write of a drop's config (drop.Info.Written): the server's clock in milliseconds,
-- past was, the number of the write before (nil: none).
local function written(was)
  return string.format('%d', math.max(now_ms(nil), (tonumber(was) or 0) + 1))
end

-- create_drop writes the drop's meta (KEYS[1] HASH) holding claimed claims, and its list of codes
-- (KEYS[5] LIST), from ARGV[from..]: stock, per visitor, opens_at ms, closes_at ms (0: never), config
-- JSON, the config's revision, then the codes to hand out in order (none: generated per claim). was is
-- the number of the drop's last config write, if the drop existed before (see written).
local function create_drop(from, claimed, was)
  redis.call('DEL', KEYS[5])
  local listed = string.format('%d', math.max(0, #ARGV - (from + 5)))
  if #ARGV > from + 5 then
    for i = from + 6, #ARGV, 1000 do
      redis.call('RPUSH', KEYS[5], unpack(ARGV, i, math.min(i + 999, #ARGV)))
    end
  end
  redis.call('HSET', KEYS[1], 'stock', ARGV[from], 'per_visitor', ARGV[from + 1], 'opens', ARGV[from + 2],
    'closes', ARGV[from + 3], 'claimed', claimed, 'listed', listed, 'cfg', ARGV[from + 4], 'rev', ARGV[from + 5],
    'written', written(was))
end
