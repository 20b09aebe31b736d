package memstore

import (
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

// preQueueSpan separates the scores of visitors who joined before a room opened (random, below it)
// from those who joined after (arrival sequence, above it), so one ordered set serves both and a rank
// is still one O(log N) lookup.
const preQueueSpan = int64(1) << 50

// roomState is one room's line and admissions. Every field is guarded by mu.
type roomState struct {
	mu      sync.Mutex
	id      string
	cfg     room.Config
	epoch   string // distinguishes admissions of a room deleted and created again
	deleted bool
	rng     *mrand.Rand

	seq int64 // arrival sequence: FIFO order comes from it, never from clocks
	// waiting holds each waiting visitor's place and last presence; queue orders them by place and
	// seen by presence, so the front of the line and the longest-idle visitor are both at hand.
	waiting    map[string]waiter
	queue      skiplist
	seen       skiplist
	active     *zset // admitted visitor -> expiry (unix ns)
	admissions map[string]*room.Admission
	window     []int64 // times of the admissions inside the rate window, oldest first

	admissionSeq  int64
	admittedTotal int64
}

// waiter is a waiting visitor's order score and last presence (unix ns).
type waiter struct{ order, seen int64 }

func newRoomState(id string, cfg room.Config, rng *mrand.Rand) *roomState {
	return &roomState{
		id: id, cfg: cfg, epoch: newEpoch(), rng: rng,
		waiting: make(map[string]waiter), queue: newSkiplist(), seen: newSkiplist(), active: newZset(),
		admissions: make(map[string]*room.Admission),
	}
}

func (rs *roomState) position(visitor string) int64 {
	w, ok := rs.waiting[visitor]
	if !ok {
		return 0
	}
	return int64(rs.queue.rank(w.order, visitor))
}

// touch records presence of a waiting visitor and reports whether it is waiting.
func (rs *roomState) touch(visitor string, now int64) bool {
	w, ok := rs.waiting[visitor]
	if !ok {
		return false
	}
	if w.seen != now {
		rs.seen.remove(w.seen, visitor)
		rs.seen.insert(now, visitor)
		w.seen = now
		rs.waiting[visitor] = w
	}
	return true
}

func (rs *roomState) join(visitor string, now int64) room.Status {
	if st := rs.status(visitor, now); st.State != room.StateNone {
		return st
	}
	rs.seq++
	order := preQueueSpan + rs.seq
	if o := rs.cfg.OpensAt; o != nil && now < o.UnixNano() {
		order = 1 + rs.rng.Int64N(preQueueSpan-1)
	}
	rs.waiting[visitor] = waiter{order: order, seen: now}
	rs.queue.insert(order, visitor)
	rs.seen.insert(now, visitor)
	if order > preQueueSpan { // an arrival after the opening always joins at the back
		return room.Status{State: room.StateWaiting, Position: int64(rs.queue.length)}
	}
	return room.Status{State: room.StateWaiting, Position: rs.position(visitor)}
}

// status reads the visitor's standing, recording presence and collecting a fresh admission.
func (rs *roomState) status(visitor string, now int64) room.Status {
	if a, ok := rs.live(visitor, now); ok {
		if !a.Collected {
			a.Collected = true
			a.ExpiresAt = time.Unix(0, now+int64(rs.cfg.SessionTTL)).UTC()
			rs.active.Add(visitor, a.ExpiresAt.UnixNano())
		}
		return room.Status{State: room.StateAdmitted, Admission: *a}
	}
	if rs.touch(visitor, now) {
		return room.Status{State: room.StateWaiting, Position: rs.position(visitor)}
	}
	return room.Status{State: room.StateNone}
}

// live returns the visitor's admission if it has not expired by now. An expired one that no tick has
// swept yet is treated as gone, so that the answer never depends on when the gate last ran.
func (rs *roomState) live(visitor string, now int64) (*room.Admission, bool) {
	exp, ok := rs.active.Score(visitor)
	if !ok || exp <= now {
		return nil, false
	}
	return rs.admissions[visitor], true
}

func (rs *roomState) leaveLine(visitor string) bool {
	w, ok := rs.waiting[visitor]
	if !ok {
		return false
	}
	delete(rs.waiting, visitor)
	rs.queue.remove(w.order, visitor)
	rs.seen.remove(w.seen, visitor)
	return true
}

func (rs *roomState) admit(now int64, max int) room.Tick {
	t := room.Tick{}
	for len(t.Expired) < max {
		v, exp, ok := rs.active.Min()
		if !ok || exp > now {
			break
		}
		rs.active.Remove(v)
		delete(rs.admissions, v)
		t.Expired = append(t.Expired, v)
	}
	idleCut := now - int64(rs.cfg.IdleTimeout)
	for len(t.Idle) < max {
		n := rs.seen.min()
		if n == nil || n.score > idleCut {
			break
		}
		v := n.member
		rs.leaveLine(v)
		t.Idle = append(t.Idle, v)
	}
	budget := rs.budget(now, max)
	for ; budget > 0; budget-- {
		n := rs.queue.min()
		if n == nil {
			break
		}
		v := n.member
		rs.leaveLine(v)
		t.Admitted = append(t.Admitted, room.Admitted{Visitor: v, Admission: *rs.grant(v, now)})
	}
	t.More = len(t.Expired) == max || len(t.Idle) == max || (len(t.Admitted) == max && len(rs.waiting) > 0)
	t.Next = rs.next(now)
	t.AdmittedTotal = rs.admittedTotal
	return t
}

// budget is how many visitors may be admitted now: the least of the batch limit, the free capacity and
// what the rate window still allows. Before the opening or while paused it is zero.
func (rs *roomState) budget(now int64, max int) int {
	if rs.cfg.Paused || (rs.cfg.OpensAt != nil && now < rs.cfg.OpensAt.UnixNano()) {
		return 0
	}
	b := max
	if c := rs.cfg.Capacity; c > 0 {
		b = min(b, c-rs.active.Len())
	}
	if r := rs.cfg.Rate; r != nil {
		cut := now - int64(r.Per)
		i := 0
		for i < len(rs.window) && rs.window[i] <= cut {
			i++
		}
		rs.window = rs.window[i:]
		b = min(b, r.Admits-len(rs.window))
	}
	return b
}

func (rs *roomState) grant(visitor string, now int64) *room.Admission {
	rs.admissionSeq++
	rs.admittedTotal++
	a := &room.Admission{
		ID:        rs.epoch + "." + strconv.FormatInt(rs.admissionSeq, 10),
		ExpiresAt: time.Unix(0, now+int64(rs.cfg.Grace)).UTC(),
	}
	rs.admissions[visitor] = a
	rs.active.Add(visitor, a.ExpiresAt.UnixNano())
	if rs.cfg.Rate != nil {
		rs.window = append(rs.window, now)
	}
	return a
}

// next is the earliest instant at which time alone changes what a tick would do.
func (rs *roomState) next(now int64) time.Time {
	var next int64
	consider := func(t int64) {
		if t > now && (next == 0 || t < next) {
			next = t
		}
	}
	if _, exp, ok := rs.active.Min(); ok {
		consider(exp)
	}
	if n := rs.seen.min(); n != nil {
		consider(n.score + int64(rs.cfg.IdleTimeout))
	}
	if len(rs.waiting) > 0 {
		if o := rs.cfg.OpensAt; o != nil {
			consider(o.UnixNano())
		}
		if r := rs.cfg.Rate; r != nil && len(rs.window) >= r.Admits {
			consider(rs.window[0] + int64(r.Per))
		}
	}
	if next == 0 {
		return time.Time{}
	}
	return time.Unix(0, next).UTC()
}
