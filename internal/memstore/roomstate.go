package memstore

import (
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

// roomState is one room's line and admissions. Every field is guarded by mu.
type roomState struct {
	mu      sync.Mutex
	id      string
	cfg     room.Config
	epoch   string // distinguishes admissions of a room deleted and created again
	deleted bool
	rng     *mrand.Rand

	serial uint32 // names this incarnation of the room in the store's index of lines
	// waiting orders the line by arrival (FIFO order comes from it, never from clocks) and by
	// presence, so the front of the line and the longest-idle visitor are both at hand.
	waiting    line
	active     *zset // admitted visitor -> expiry (unix ns)
	admissions map[string]*room.Admission
	window     []int64 // times of the admissions inside the rate window, oldest first

	admissionSeq  int64
	admittedTotal int64
	// joinedTotal, idleTotal and graceTotal count places taken, waiters gone idle and admissions never
	// collected, for the room's history.
	joinedTotal, idleTotal, graceTotal int64

	// units counts the unclaimed units of the drop the room follows, -1 when it follows none; stock is
	// that drop's stock, opens its opening and closes its closing (Unix ns, 0 for none) as the room
	// last heard of them, of the drop's config write numbered written (see room.Store.Restock); soldOut
	// is set once that drop has none left (see rushgate.Gatekeeper). None of them is journaled: a start
	// counts them afresh from the drop.
	units   int
	stock   int
	written int64
	opens   int64
	closes  int64
	soldOut bool
	// invites are the room's invite codes and whether each is used, when there is no record to keep
	// them.
	invites map[string]bool

	j *journal // where line changes go, nil for none (see journal.go)
}

func newRoomState(id string, idx *index, serial uint32, cfg room.Config, rng *mrand.Rand) *roomState {
	return &roomState{
		id: id, serial: serial, cfg: cfg, epoch: newEpoch(), rng: rng,
		waiting: newLine(idx, serial), active: newZset(), admissions: make(map[string]*room.Admission), units: -1,
	}
}

// touch records presence of a waiting visitor and reports whether it is waiting, with its position.
func (rs *roomState) touch(k *vkey, now int64) (int64, bool) {
	i, ok := rs.waiting.find(k)
	if !ok {
		return 0, false
	}
	rs.waiting.touch(i, now)
	return rs.waiting.position(i), true
}

// join puts the visitor in line unless it is here already. When the visitor was waiting in another
// room it returns that place, which the caller must leave once this room's lock is released. In a room
// that rejects new joins, a visitor not here already gets StateNone.
func (rs *roomState) join(visitor string, k *vkey, now int64) (room.Status, place, bool) {
	if st := rs.status(visitor, k, now); st.State != room.StateNone {
		return st, place{}, false
	}
	if rs.cfg.Mode == room.ModeReject || rs.soldOut {
		return room.Status{State: room.StateNone}, place{}, false // no new place: the caller refuses
	}
	if o := rs.cfg.OpensAt; o != nil && now < unixNano(*o) {
		draw := rs.rng.Int64()
		rs.joinedTotal++
		i, prev, moved := rs.waiting.add(visitor, k, now, true, draw)
		rs.j.record(recJoin, rs.id, visitor, true, draw)
		return room.Status{State: room.StateWaiting, Position: rs.waiting.position(i)}, prev, moved
	}
	// An arrival after the opening always joins at the back.
	rs.joinedTotal++
	_, prev, moved := rs.waiting.add(visitor, k, now, false, 0)
	rs.j.record(recJoin, rs.id, visitor, false, int64(0))
	return room.Status{State: room.StateWaiting, Position: int64(rs.waiting.Len())}, prev, moved
}

// status reads the visitor's standing, recording presence and collecting a fresh admission.
func (rs *roomState) status(visitor string, k *vkey, now int64) room.Status {
	if a, ok := rs.live(visitor, now); ok {
		if !a.Collected {
			a.Collected = true
			a.ExpiresAt = time.Unix(0, now+int64(rs.cfg.SessionTTL)).UTC()
			rs.active.Add(visitor, unixNano(a.ExpiresAt))
			rs.j.record(recCollect, rs.id, visitor, unixNano(a.ExpiresAt))
		}
		return room.Status{State: room.StateAdmitted, Admission: *a}
	}
	if pos, ok := rs.touch(k, now); ok {
		if rs.soldOut {
			return room.Status{State: room.StateSoldOut}
		}
		return room.Status{State: room.StateWaiting, Position: pos}
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
	k := keyOf(visitor)
	i, ok := rs.waiting.find(&k)
	if ok {
		rs.waiting.remove(i)
		rs.j.record(recGone, rs.id, visitor)
	}
	return ok
}

// endAdmission ends the visitor's admission, reporting whether it had one; lapsed says it expired
// uncollected, which the journal keeps for the room's count of them.
func (rs *roomState) endAdmission(visitor string, lapsed bool) bool {
	if !rs.active.Remove(visitor) {
		return false
	}
	delete(rs.admissions, visitor)
	rs.j.record(recEnd, rs.id, visitor, lapsed)
	return true
}

func (rs *roomState) admit(now int64, max int) room.Tick {
	t := room.Tick{}
	for len(t.Expired) < max {
		v, exp, ok := rs.active.Min()
		if !ok || exp > now {
			break
		}
		a := rs.admissions[v]
		lapsed := a != nil && !a.Collected
		if lapsed {
			rs.graceTotal++
		}
		rs.endAdmission(v, lapsed)
		t.Expired = append(t.Expired, v)
	}
	idleCut := now - int64(rs.cfg.IdleTimeout)
	for len(t.Idle) < max {
		i, seen, ok := rs.waiting.idlest()
		if !ok || seen > idleCut {
			break
		}
		v := rs.waiting.id(i)
		t.Idle = append(t.Idle, v)
		rs.idleTotal++
		rs.waiting.remove(i)
		rs.j.record(recGone, rs.id, v, true)
	}
	// A step whose sweep stopped at its limit may have left idle waiters at the front: it lets nobody
	// in, and the next step, at once (More), sweeps on before it does.
	budget := 0
	if len(t.Idle) < max {
		budget = rs.budget(now, max)
	}
	for ; budget > 0; budget-- {
		i, ok := rs.waiting.front()
		if !ok {
			break
		}
		v := rs.waiting.id(i)
		rs.waiting.remove(i)
		t.Admitted = append(t.Admitted, room.Admitted{Visitor: v, Admission: *rs.grant(v, now)})
	}
	t.More = len(t.Expired) == max || len(t.Idle) == max || (len(t.Admitted) == max && rs.waiting.Len() > 0)
	t.Next = rs.next(now)
	t.AdmittedTotal = rs.admittedTotal
	t.Waiting = int64(rs.waiting.Len())
	if c := rs.cfg.Capacity; c > 0 {
		free := c - rs.active.Len()
		if rs.units >= 0 {
			free = min(free, rs.units-rs.active.Len())
		}
		if free > 0 {
			t.Free = int64(free)
		}
	}
	t.DropClosed = rs.dropClosed(now)
	if rs.dropEarly(now) {
		t.DropOpens = time.Unix(0, rs.opens).UTC()
	}
	return t
}

// holds reports whether the room lets nobody in now: it holds everybody (see room.Config.Holds), is
// sold out, or the drop it follows is not open yet or closed.
func (rs *roomState) holds(now int64) bool {
	return rs.cfg.Holds(time.Unix(0, now)) || rs.soldOut || rs.dropEarly(now) || rs.dropClosed(now)
}

// dropEarly reports whether the drop the room follows takes no claims at now because its opening is
// still to come.
func (rs *roomState) dropEarly(now int64) bool {
	return rs.units >= 0 && rs.opens != 0 && now < rs.opens
}

// dropClosed reports whether the drop the room follows takes no claims at now: its closing has come.
func (rs *roomState) dropClosed(now int64) bool {
	return rs.units >= 0 && rs.closes != 0 && now >= rs.closes
}

// budget is how many visitors may be admitted now: the least of the batch limit, the free capacity and
// what the rate window still allows. Before the opening or while paused it is zero.
func (rs *roomState) budget(now int64, max int) int {
	if rs.holds(now) {
		return 0
	}
	if rs.units >= 0 { // never more admissions than units left
		max = min(max, rs.units-rs.active.Len())
	}
	if rs.cfg.Mode == room.ModePassthrough {
		return max
	}
	b := max
	if c := rs.cfg.Capacity; c > 0 {
		b = min(b, c-rs.active.Len())
	}
	if r := rs.cfg.Rate; r != nil {
		b = min(b, r.Admits-len(rs.counted(now, r)))
	}
	return b
}

// counted is the part of the rate window that counts at now. Only a grant cuts the rest off, and the
// journal says where, so that a restart replays the window the room had, whatever the rate is then.
func (rs *roomState) counted(now int64, r *room.Rate) []int64 {
	return after(rs.window, now-int64(r.Per))
}

// after is the part of times, oldest first, later than cut.
func after(times []int64, cut int64) []int64 {
	i := 0
	for i < len(times) && times[i] <= cut {
		i++
	}
	return times[i:]
}

func (rs *roomState) grant(visitor string, now int64) *room.Admission {
	rs.admissionSeq++
	rs.admittedTotal++
	a := &room.Admission{
		ID:        rs.epoch + "." + strconv.FormatInt(rs.admissionSeq, 10),
		ExpiresAt: time.Unix(0, now+int64(rs.cfg.Grace)).UTC(),
	}
	rs.admissions[visitor] = a
	rs.active.Add(visitor, unixNano(a.ExpiresAt))
	windowed, cut := int64(0), int64(0)
	if r := rs.cfg.Rate; r != nil {
		rs.window = append(rs.counted(now, r), now)
		windowed, cut = now, now-int64(r.Per)
	}
	rs.j.record(recAdmit, rs.id, visitor, a.ID, unixNano(a.ExpiresAt), windowed, cut)
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
	if _, seen, ok := rs.waiting.idlest(); ok {
		consider(seen + int64(rs.cfg.IdleTimeout))
	}
	if rs.units >= 0 {
		consider(rs.opens)  // the line moves at the drop's opening
		consider(rs.closes) // and hears of its closing when it comes
	}
	if rs.waiting.Len() > 0 {
		if o := rs.cfg.OpensAt; o != nil {
			consider(unixNano(*o))
		}
		// While the room holds everybody the rate lets nobody in, and in passthrough it does not count.
		if r := rs.cfg.Rate; r != nil && !rs.holds(now) && rs.cfg.Mode != room.ModePassthrough {
			// The rate lets the next one in when all but Admits-1 of those it counts have aged out.
			if w := rs.counted(now, r); len(w) >= r.Admits {
				consider(w[len(w)-r.Admits] + int64(r.Per))
			}
		}
	}
	if next == 0 {
		return time.Time{}
	}
	return time.Unix(0, next).UTC()
}
