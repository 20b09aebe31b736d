package redisstore

// keys names every Redis key rushgate uses; no key string is assembled anywhere else. All keys of one
// room share the hash tag {room:ID}, so each room script touches one Cluster slot; the per-visitor key
// has its own tag, which is why the one-line-per-visitor rule is kept by separate steps (see Join).
type keys struct{ prefix string }

// room returns a room's keys in the order every room script declares them in its header:
//
//	KEYS[1] meta    HASH  config fields, epoch, seq (arrival counter), aseq (admission counter), total
//	KEYS[2] queue   ZSET  waiting visitor -> order (arrival sequence, or a random draw before opening)
//	KEYS[3] seen    ZSET  waiting visitor -> last presence (ms)
//	KEYS[4] active  ZSET  admitted visitor -> expiry (ms): counted and swept in the same script
//	KEYS[5] adm     HASH  admitted visitor -> "admissionID|collected"
//	KEYS[6] window  ZSET  admission id -> admission time (ms), the sliding rate window
//	KEYS[7] fences  ZSET  visitor -> fence of the latest Cluster join that touched its place here (see
//	                      lua/line.lua), kept for a while so that a stale join's late step is refused
func (k keys) room(id string) []string {
	p := k.prefix + ":{room:" + id + "}:"
	return []string{p + "meta", p + "queue", p + "seen", p + "active", p + "adm", p + "window", p + "fences"}
}

// changes is the pub/sub channel on which room scripts announce visitors whose state changed.
func (k keys) changes(id string) string { return k.prefix + ":{room:" + id + "}:changes" }

// rooms is a SET of room ids, so that an instance can find every room without scanning the keyspace.
func (k keys) rooms() string { return k.prefix + ":rooms" }

// line is a STRING holding the room whose line the visitor is in, followed by any lines it may still
// have to leave (see point_line in lua/lib.lua).
func (k keys) line(visitor string) string { return k.prefix + ":{visitor:" + visitor + "}:line" }

// joining is a STRING, present while a join holds the visitor's join lock on Cluster (see lua/line.lua).
func (k keys) joining(visitor string) string { return k.prefix + ":{visitor:" + visitor + "}:joining" }

// fence is a STRING holding the fence of the visitor's latest join on Cluster, so that the next one's is
// higher even if the server's clock went back (see lua/line.lua); it lives as long as rooms remember
// fences, not as long as the line pointer, so a crowd reloading on Cluster leaves no key for a day.
func (k keys) fence(visitor string) string { return k.prefix + ":{visitor:" + visitor + "}:fence" }

// moving returns a visitor's line pointer, join lock and fence, in the order line.lua declares them;
// line_settle.lua takes the first two.
func (k keys) moving(visitor string) []string {
	return []string{k.line(visitor), k.joining(visitor), k.fence(visitor)}
}

// secret is a STRING holding a shared secret (signing keys, the visitor-token secret, the admin key)
// that every instance must agree on.
func (k keys) secret(name string) string { return k.prefix + ":secret:" + name }
