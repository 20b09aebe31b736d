package memstore

// none marks the end of a list of waiters, and a place in the arrival order whose visitor has left;
// unused marks, as its prev, a waiter that is on the free list.
const (
	none   = -1
	unused = -2
)

// waiter is one waiting visitor. Waiters live in pages of a line and refer to each other by index.
type waiter struct {
	key vkey
	// seq is the index of the waiter in the arrival order, or its random draw if it is in the
	// pre-queue.
	seq        int64
	seen       int64 // last presence, unix ns
	prev, next int32 // neighbours in presence order; next also links the free waiters
	pre        bool
}

// pageSize is how many waiters are allocated at a time (64 KiB).
const pageSize = 1024

// line is a room's waiting line: who waits, in which order, and who has been quiet longest.
//
// Visitors who arrive after the opening, which is nearly everybody, are kept in arrival order in a
// slice with a Fenwick tree of who is still there, so that joining is an append, a position is a
// prefix sum and admitting the front is a step forward: each O(log N) at most and pointer-free.
// Visitors who arrive before the opening are placed at random among themselves, which needs inserts
// in the middle; they sit in a skip list ahead of every later arrival.
type line struct {
	idx  *index // the store's index of who waits where
	room uint32 // this line's serial in idx

	pages [][]waiter      // waiter i is pages[i/pageSize][i%pageSize]: growing never copies them
	used  int32           // waiters ever allocated
	free  int32           // first reusable waiter, or none
	long  map[vkey]string // ids too long for a vkey, by their digest

	order    []int32 // waiter at each arrival index, or none once it left
	present  fenwick // 1 at each arrival index whose waiter is still there
	head     int     // order[:head] has all left
	arrivals int     // waiters in order, that is everyone but the pre-queue

	pre      skiplist         // the pre-queue, by random draw
	preSlots map[string]int32 // the waiter of each visitor in the pre-queue

	oldest, newest int32 // ends of the presence order
}

func newLine(idx *index, room uint32) line {
	return line{
		idx: idx, room: room, long: make(map[vkey]string), free: none, oldest: none, newest: none,
		pre: newSkiplist(), preSlots: make(map[string]int32),
	}
}

// Len returns the number of waiting visitors, counting any whose visitor has just moved to another
// line and is not yet taken out.
func (l *line) Len() int { return l.arrivals + l.pre.length }

// find returns the visitor's waiter if the visitor waits in this line.
func (l *line) find(k *vkey) (int32, bool) {
	p, ok := l.idx.get(k)
	if !ok || p.room != l.room {
		return none, false
	}
	return p.slot, true
}

// owns reports whether waiter i is its visitor's current place. A visitor who joins another room is
// recorded there first and taken out of this line just after; until then its waiter here is stale and
// must neither be admitted nor reported idle.
func (l *line) owns(i int32) bool {
	w := l.at(i)
	p, ok := l.idx.get(&w.key)
	return ok && p == place{l.room, i}
}

// id returns the visitor id of a waiter.
func (l *line) id(i int32) string {
	k := &l.at(i).key
	if k[0] == hashedID {
		return l.long[*k]
	}
	return string(k[1 : 1+k[0]])
}

// add puts a visitor who is not waiting here at the back of the arrivals, or into the pre-queue at
// draw when pre is set. It returns the new waiter and the visitor's place in another line, if it had
// one, which the caller must then leave.
func (l *line) add(visitor string, k *vkey, now int64, pre bool, draw int64) (int32, place, bool) {
	if k[0] == hashedID {
		l.long[*k] = visitor
	}
	i := l.alloc()
	w := l.at(i)
	*w = waiter{key: *k, seen: now, prev: none, next: none, pre: pre}
	if pre {
		w.seq = draw
		l.pre.insert(draw, visitor)
		l.preSlots[visitor] = i
	} else {
		w.seq = int64(len(l.order))
		l.order = append(l.order, i)
		l.present.push(1)
		l.arrivals++
	}
	l.link(i)
	prev, moved := l.idx.put(k, place{l.room, i})
	return i, prev, moved
}

func (l *line) alloc() int32 {
	if i := l.free; i != none {
		l.free = l.at(i).next
		return i
	}
	if int(l.used) == len(l.pages)*pageSize {
		l.pages = append(l.pages, make([]waiter, pageSize))
	}
	l.used++
	return l.used - 1
}

// at returns waiter i.
func (l *line) at(i int32) *waiter { return &l.pages[i/pageSize][i%pageSize] }

// position returns the 1-based place of a waiter in the line.
func (l *line) position(i int32) int64 {
	w := l.at(i)
	if w.pre {
		return int64(l.pre.rank(w.seq, l.id(i)))
	}
	return int64(l.pre.length) + int64(l.present.sum(int(w.seq)+1))
}

// touch records presence, moving the waiter behind everyone seen earlier. The presence order stays
// sorted by time even if the clock were to step back, at the cost of such a visitor counting as seen a
// little later than it was.
func (l *line) touch(i int32, now int64) {
	if i != l.newest {
		l.unlink(i)
		now = max(now, l.at(l.newest).seen)
		l.link(i)
	}
	w := l.at(i)
	w.seen = max(w.seen, now)
}

// link appends a waiter at the newest end of the presence order.
func (l *line) link(i int32) {
	w := l.at(i)
	w.prev, w.next = l.newest, none
	if l.newest != none {
		l.at(l.newest).next = i
	} else {
		l.oldest = i
	}
	l.newest = i
}

func (l *line) unlink(i int32) {
	w := l.at(i)
	if w.prev != none {
		l.at(w.prev).next = w.next
	} else {
		l.oldest = w.next
	}
	if w.next != none {
		l.at(w.next).prev = w.prev
	} else {
		l.newest = w.prev
	}
}

// front returns the next waiter to admit, taking out stale waiters on the way.
func (l *line) front() (int32, bool) {
	for {
		i, ok := l.first()
		if !ok || l.owns(i) {
			return i, ok
		}
		l.discard(i)
	}
}

func (l *line) first() (int32, bool) {
	if n := l.pre.min(); n != nil {
		return l.preSlots[n.member], true
	}
	for l.head < len(l.order) && l.order[l.head] == none {
		l.head++
	}
	if l.head == len(l.order) {
		return none, false
	}
	return l.order[l.head], true
}

// idlest returns the waiter seen longest ago and when that was, taking out stale waiters on the way.
func (l *line) idlest() (int32, int64, bool) {
	for l.oldest != none && !l.owns(l.oldest) {
		l.discard(l.oldest)
	}
	if l.oldest == none {
		return none, 0, false
	}
	return l.oldest, l.at(l.oldest).seen, true
}

// remove takes a waiter out of the line and forgets its visitor's place.
func (l *line) remove(i int32) {
	l.idx.drop(&l.at(i).key, place{l.room, i})
	l.discard(i)
}

// moved takes out waiter i after its visitor joined another line, unless the waiter has been reused
// for somebody else meanwhile; it reports whether it did.
func (l *line) moved(i int32, k *vkey) bool {
	if int(i) < int(l.used) && l.at(i).key == *k && l.at(i).prev != unused {
		l.discard(i)
		return true
	}
	return false
}

// discard takes a waiter out of the line's own order, leaving the index alone.
func (l *line) discard(i int32) {
	w := l.at(i)
	l.unlink(i)
	if w.pre {
		id := l.id(i)
		l.pre.remove(w.seq, id)
		delete(l.preSlots, id)
	} else {
		l.order[w.seq] = none
		l.present.add(int(w.seq)+1, -1)
		l.arrivals--
	}
	if w.key[0] == hashedID {
		delete(l.long, w.key)
	}
	*w = waiter{prev: unused, next: l.free}
	l.free = i
	l.compact()
}

// compact drops the places of visitors who left once they are most of the arrival order, so that a
// line's memory follows the visitors it holds rather than all who ever joined. Each compaction is
// paid for by the removals before it.
func (l *line) compact() {
	if len(l.order) < 1024 || 2*l.arrivals > len(l.order) {
		return
	}
	n := 0
	for _, i := range l.order {
		if i != none {
			l.order[n] = i
			l.at(i).seq = int64(n)
			n++
		}
	}
	l.order = l.order[:n]
	l.head = 0
	l.present.reset(n)
}

// forget drops the index entries of every visitor waiting here, for a room being deleted.
func (l *line) forget() {
	for i := l.oldest; i != none; i = l.at(i).next {
		l.idx.drop(&l.at(i).key, place{l.room, i})
	}
}

// fenwick is a binary indexed tree over 1-based positions: prefix sums and point updates in O(log N),
// and appends at the end in amortised O(1).
type fenwick struct{ t []int32 }

// push appends position len+1 holding v.
func (f *fenwick) push(v int32) {
	i := len(f.t) + 1
	s := v
	for j := i - 1; j > i-(i&-i); j -= j & -j { // the positions t[i] covers besides i itself
		s += f.t[j-1]
	}
	f.t = append(f.t, s)
}

// add adds d at position i.
func (f *fenwick) add(i int, d int32) {
	for ; i <= len(f.t); i += i & -i {
		f.t[i-1] += d
	}
}

// sum returns the total of positions 1..i.
func (f *fenwick) sum(i int) int32 {
	var s int32
	for ; i > 0; i -= i & -i {
		s += f.t[i-1]
	}
	return s
}

// reset makes the tree n positions long, each holding 1, in O(n).
func (f *fenwick) reset(n int) {
	f.t = f.t[:n]
	for i := range f.t {
		f.t[i] = 1
	}
	for i := 1; i <= n; i++ {
		if j := i + (i & -i); j <= n {
			f.t[j-1] += f.t[i-1]
		}
	}
}
