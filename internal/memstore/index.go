package memstore

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"
)

// vkey is a visitor id held as a fixed-size value. The store indexes every waiting visitor, a million
// of them in a big on-sale, and the garbage collector has to scan every pointer the heap holds on each
// cycle: with string keys a long line made the collector the largest single cost of a join. Arrays
// carry no pointers, so the maps and slices built on them are never scanned at all.
type vkey [32]byte

// inlineID is the longest id a vkey holds verbatim (after its length byte). Visitor ids are 28 bytes;
// longer ids are held by their SHA-256, which no two ids share in practice, and their line keeps
// their text aside.
const inlineID = len(vkey{}) - 1

// hashedID marks a vkey that holds a digest rather than the id itself.
const hashedID = 0xFF

func keyOf(id string) vkey {
	var k vkey
	if len(id) <= inlineID {
		k[0] = byte(len(id))
		copy(k[1:], id)
		return k
	}
	sum := sha256.Sum256([]byte(id))
	k[0] = hashedID
	copy(k[1:], sum[:])
	return k
}

// place is where a waiting visitor is: the serial of its room and its waiter there.
type place struct {
	room uint32
	slot int32
}

// index maps each waiting visitor to its one place, across all rooms. Being one map for every room,
// it is what keeps a visitor in one line at a time, and a join looks a visitor up once rather than
// once in its room and again in a map of who waits where: in a long line each lookup is a cache miss.
// It is sharded so that rooms do not contend for one lock. Lock order: a room's lock, then a shard's.
type index struct {
	seed   maphash.Seed
	shards [64]shard
}

type shard struct {
	mu sync.Mutex
	m  map[vkey]place
	_  [40]byte // keeps neighbouring shards' locks off one cache line
}

func newIndex() *index {
	x := &index{seed: maphash.MakeSeed()}
	for i := range x.shards {
		x.shards[i].m = make(map[vkey]place)
	}
	return x
}

func (x *index) shard(k *vkey) *shard {
	return &x.shards[maphash.Bytes(x.seed, k[:])%uint64(len(x.shards))]
}

// get returns the visitor's place.
func (x *index) get(k *vkey) (place, bool) {
	sh := x.shard(k)
	sh.mu.Lock()
	p, ok := sh.m[*k]
	sh.mu.Unlock()
	return p, ok
}

// put records the visitor's new place and returns the one it replaces.
func (x *index) put(k *vkey, p place) (place, bool) {
	sh := x.shard(k)
	sh.mu.Lock()
	prev, ok := sh.m[*k]
	sh.m[*k] = p
	sh.mu.Unlock()
	return prev, ok
}

// drop forgets the visitor if it is still at p, and reports whether it was.
func (x *index) drop(k *vkey, p place) bool {
	sh := x.shard(k)
	sh.mu.Lock()
	cur, ok := sh.m[*k]
	ok = ok && cur == p
	if ok {
		delete(sh.m, *k)
	}
	sh.mu.Unlock()
	return ok
}
