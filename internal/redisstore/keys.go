package redisstore

import (
	"strconv"
	"strings"
)

// keys names every Redis key rushgate uses; no key string is assembled anywhere else. All keys of one
// room, drop or auction share a hash tag ({room:ID}, {drop:ID}, {auction:ID}), so each of their
// scripts touches one Cluster slot; the per-visitor keys have their own tag, which is why the
// one-line-per-visitor rule is kept by separate steps (see Join).
type keys struct{ prefix string }

// room returns a room's keys in the order every room script declares them in its header:
//
//	KEYS[1] meta    HASH  config fields, epoch, seq (arrival counter), aseq (admission counter), total,
//	                      and of the drop it follows: units, stock, written, soldout (lua/stock.lua)
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

// invites is a HASH of a room's invite codes: code -> "0" unused, "1" used (see lua/invite.lua).
func (k keys) invites(id string) string { return k.prefix + ":{room:" + id + "}:invites" }

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

// history is a LIST of an entity's per-second samples, "unix second,figure,figure,...", oldest first.
// entity is "room:ID", "drop:ID" or "auction:ID", so the list shares its entity's hash tag.
func (k keys) history(entity string) string { return k.prefix + ":{" + entity + "}:history" }

// audit is a STREAM of operators' changes, one JSON entry in field "e" each, capped near auditKeep.
func (k keys) audit() string { return k.prefix + ":audit" }

// spent is a STRING that exists while a used one-time thing (a solved challenge, by its hash) may not be
// used again; it expires with it.
func (k keys) spent(hash string) string { return k.prefix + ":spent:" + hash }

// released is the pub/sub channel on which instances announce admissions ended early: "id unix-expiry".
func (k keys) released() string { return k.prefix + ":released" }

// releases holds the admissions ended early until their tokens expire (a sorted set by expiry, ms), for
// instances that were not listening when they were announced.
func (k keys) releases() string { return k.prefix + ":releases" }

// catalog is a ZSET of the ids of one kind ("rooms", "drops", "auctions"), all scored 0, so that the
// admin lists page through them in id order (ZRANGE BYLEX) without scanning the keyspace.
func (k keys) catalog(kind string) string { return k.prefix + ":catalog:" + kind }

// secret is a STRING holding a shared secret (signing keys, the visitor-token secret, the admin key)
// that every instance must agree on.
func (k keys) secret(name string) string { return k.prefix + ":secret:" + name }

// auction returns an auction's keys in the order the auction scripts declare them:
//
//	KEYS[1] state   HASH    price, leader, bids, ends_at, closed, sold, seq... and the config as JSON
//	                        (a deleted auction leaves only seq, see lua/auction_delete.lua)
//	KEYS[2] events  STREAM  the auction's events by sequence (ID seq-1): its feed, and the outbox the
//	                        recorders copy into SQL; a deleted auction's stay, for one made again
//	KEYS[3] bidders HASH    bidder -> 1, each bidder whose bid or buy-now was taken, counted for the
//	                        operator's history
func (k keys) auction(id string) []string {
	p := k.prefix + ":{auction:" + id + "}:"
	return []string{p + "state", p + "events", p + "bidders"}
}

// auctionChanges is the pub/sub channel on which the step script announces an auction's new events,
// with the last one's sequence number.
func (k keys) auctionChanges(id string) string { return k.prefix + ":{auction:" + id + "}:changes" }

// auctionDeadlines is a ZSET of open auction id -> end (ms): the closers' deadline index.
func (k keys) auctionDeadlines() string { return k.prefix + ":auction-deadlines" }

// auctions is a SET of the auction ids the recorders poll: created ones, until they are over and
// recorded (see retire in recorder.go).
func (k keys) auctions() string { return k.prefix + ":auctions" }

// drop returns a drop's keys in the order the drop scripts declare them:
//
//	KEYS[1] meta    HASH    stock, per_visitor, opens, closes, claimed, listed (how many codes the
//	                        codes list started with; 0: generated), the config as JSON without them,
//	                        rev, written (drop.Info.Written)
//	KEYS[2] claims  STREAM  the claims by sequence (ID seq-1): the drop's log and its outbox to SQL
//	                        (claim_id, code, visitor, at, and key: its idempotency key, if any)
//	KEYS[3] mine    HASH    visitor -> its claims' sequences, "seq,seq"
//	KEYS[4] keys    HASH    visitor NUL idempotency key -> sequence
//	KEYS[5] codes   LIST    the codes to hand out in order, when the config lists them
func (k keys) drop(id string) []string {
	p := k.prefix + ":{drop:" + id + "}:"
	return []string{p + "meta", p + "claims", p + "mine", p + "keys", p + "codes"}
}

// recording returns the keys by which recorders share the outbox of an entity ("drop:ID" or
// "auction:ID", so that they share its hash tag), in the order lua/record_lease.lua declares them:
//
//	KEYS[1] lease   STRING  the recorder copying the entity's stream now; it expires unless renewed
//	KEYS[2] cursor  STRING  the sequence number up to which the stream is in the SQL record
func (k keys) recording(entity string) []string {
	p := k.prefix + ":{" + entity + "}:"
	return []string{p + "lease", p + "recorded"}
}

// restoring is a STRING that holds a drop or an auction ("drop:ID" or "auction:ID", so that it shares
// the entity's hash tag) for one restore at a time: its token, expiring unless renewed (the last KEYS
// of lua/drop_restore.lua and lua/auction_restore.lua).
func (k keys) restoring(entity string) string { return k.prefix + ":{" + entity + "}:restoring" }

// drops is a SET of the drop ids the recorders poll: created ones, until they are sold out and
// recorded.
func (k keys) drops() string { return k.prefix + ":drops" }

// health is a STRING that health checks write (see Rooms.Ping), expiring a minute after the last.
func (k keys) health() string { return k.prefix + ":health" }

// healthIn is a health key in Cluster slot slot, so that a check writes to every master (see
// Rooms.Ping): "{health:N}" for the first N that hashes there, some 16,384 tries. It is health() when
// the prefix holds a hash tag, which puts every key of the deployment in that one slot.
func (k keys) healthIn(slot uint16) string {
	if tag(k.health()) != k.health() {
		return k.health()
	}
	for n := 0; n < 1<<24; n++ {
		if key := k.prefix + ":{health:" + strconv.Itoa(n) + "}"; slotOf(key) == slot {
			return key
		}
	}
	return k.health() // not reached: CRC16 meets every slot long before
}

// slotOf is the Cluster slot of key, as Redis computes it: CRC16 (XMODEM) of its hash tag, mod 16384.
func slotOf(key string) uint16 {
	key = tag(key)
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % clusterSlots
}

// clusterSlots is how many slots a Redis Cluster shares among its masters.
const clusterSlots = 16384

// tag is what of key Redis hashes: between its first "{" and the next "}" if that is not empty, else
// all of it.
func tag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// records is a HASH of the SQL records the instances record into, by id, with when an instance last
// said so (lua/record_seen.lua): more than one splits the record of drops and auctions between them.
func (k keys) records() string { return k.prefix + ":records" }
