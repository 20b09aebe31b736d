// Package memstore is the embedded backend: all state lives in this process, so `rushgate serve` needs
// nothing else. Each operation of [room.Store] is one critical section under its room's lock, with time
// taken from an injected clock, which makes the backend the reference that the Redis backend is
// checked against by the shared conformance suite. What must outlive the process goes to disk: room
// configs through [Records] as they change, lines through [Rooms.Save] at a graceful stop. [Open] opens
// the whole backend as one value from what an earlier run kept.
package memstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	mrand "math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

var _ room.Store = (*Rooms)(nil)

// Options tune a Rooms; the zero value is ready for production use.
type Options struct {
	// Clock returns the current time; nil means time.Now. Tests inject a fake so that sessions, rates
	// and idle timeouts can be driven without sleeping.
	Clock func() time.Time
	// Seed, when non-zero, makes the pre-queue shuffle reproducible.
	Seed uint64
	// Recorder, when set, makes room configs durable: a room is recorded before it is created or
	// changed and forgotten before it is deleted, so a restarted instance can Restore every room it
	// acknowledged.
	Recorder Records
}

// Rooms is the in-memory implementation of [room.Store].
type Rooms struct {
	clock    func() time.Time
	seed     uint64
	recorder Records
	journal  *journal // where line changes go, nil for none (see journal.go)
	spent    *Spent   // the spends that share the journal and the snapshot, nil for none
	gen      int64    // the generation of the last snapshot saved or loaded

	// admin serialises room creation, changes and deletion with their records, so that the record
	// holds the config last applied.
	admin sync.Mutex

	mu       sync.Mutex // guards rooms, bySerial and serial; never held while taking a room's lock
	rooms    map[string]*roomState
	serial   uint32
	bySerial map[uint32]*roomState

	// waiting is where each waiting visitor is, across all rooms.
	waiting *index

	// joins serialises joins per visitor (striped), so that one visitor joining two rooms at once
	// still ends up in exactly one line, and a visitor's stale waiter is gone before it can join
	// that room again.
	joins  [64]sync.Mutex
	hasher maphash.Seed
}

// NewRooms returns an empty room store.
func NewRooms(opts Options) *Rooms {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Rooms{
		clock:    clock,
		seed:     opts.Seed,
		recorder: opts.Recorder,
		rooms:    make(map[string]*roomState),
		bySerial: make(map[uint32]*roomState),
		waiting:  newIndex(),
		hasher:   maphash.MakeSeed(),
	}
}

// PutRoom implements [room.Store].
func (s *Rooms) PutRoom(ctx context.Context, id string, cfg room.Config) error {
	s.admin.Lock()
	defer s.admin.Unlock()
	if s.recorder != nil {
		if err := s.recorder.RecordRoom(ctx, id, cfg); err != nil {
			return fmt.Errorf("%w: recording room %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	s.put(id, cfg)
	return nil
}

// Restore creates a room saved by an earlier run, without recording it again. Its line starts empty;
// Load puts back the line a graceful shutdown saved.
func (s *Rooms) Restore(id string, cfg room.Config) {
	s.admin.Lock()
	defer s.admin.Unlock()
	s.put(id, cfg)
}

// put creates the room or changes its config.
func (s *Rooms) put(id string, cfg room.Config) {
	s.mu.Lock()
	rs, ok := s.rooms[id]
	if !ok {
		s.serial++
		rs = newRoomState(id, s.waiting, s.serial, cfg, s.rng(id))
		rs.j = s.journal
		s.rooms[id] = rs
		s.bySerial[rs.serial] = rs
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	rs.mu.Lock()
	rs.cfg = cfg
	rs.mu.Unlock()
}

func (s *Rooms) rng(id string) *mrand.Rand {
	if s.seed != 0 {
		return mrand.New(mrand.NewPCG(s.seed, uint64(len(id))))
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return mrand.New(mrand.NewChaCha8(([32]byte)(append(b[:], b[:]...))))
}

// Room implements [room.Store].
func (s *Rooms) Room(_ context.Context, id string) (room.Config, error) {
	rs, err := s.lookup(id)
	if err != nil {
		return room.Config{}, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.cfg, nil
}

// DeleteRoom implements [room.Store].
func (s *Rooms) DeleteRoom(ctx context.Context, id string) error {
	s.admin.Lock()
	defer s.admin.Unlock()
	if _, err := s.lookup(id); err != nil {
		return err
	}
	if s.recorder != nil {
		if err := errors.Join(s.recorder.ForgetRoom(ctx, id), s.recorder.ForgetInvites(ctx, id)); err != nil {
			return fmt.Errorf("%w: forgetting room %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	s.mu.Lock()
	rs, ok := s.rooms[id]
	delete(s.rooms, id)
	if ok {
		delete(s.bySerial, rs.serial)
	}
	s.mu.Unlock()
	if !ok {
		return room.ErrNotFound
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.deleted = true
	rs.waiting.forget()
	rs.j.record(recDelete, rs.id, "") // a room created again under the id starts with an empty line
	return nil
}

// Rooms implements [room.Store].
func (s *Rooms) Rooms(context.Context) ([]string, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.rooms))
	for id := range s.rooms {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	return ids, nil
}

// lookup returns the room locked-free; callers lock it and must check deleted.
func (s *Rooms) lookup(id string) (*roomState, error) {
	s.mu.Lock()
	rs, ok := s.rooms[id]
	s.mu.Unlock()
	if !ok {
		return nil, room.ErrNotFound
	}
	return rs, nil
}

// with runs fn under the room's lock with the store's time, refusing rooms deleted meanwhile.
func (s *Rooms) with(id string, fn func(rs *roomState, now int64) error) error {
	rs, err := s.lookup(id)
	if err != nil {
		return err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.deleted {
		return room.ErrNotFound
	}
	return fn(rs, unixNano(s.clock()))
}

// Join implements [room.Store]. The store's one index of who waits where is authoritative, so it needs
// neither the entrant's origin nor whether it is new; a join without Switch reads it, under the
// visitor's join lock, to refuse moving a visitor that waits elsewhere.
func (s *Rooms) Join(_ context.Context, id string, e room.Entrant) (room.Status, error) {
	visitor := e.Visitor
	jl := &s.joins[maphash.String(s.hasher, visitor)%uint64(len(s.joins))]
	jl.Lock()
	defer jl.Unlock()
	k := keyOf(visitor)
	var st room.Status
	var prev place
	var moved bool
	err := s.with(id, func(rs *roomState, now int64) error {
		if !e.Switch && !e.New {
			if p, ok := s.waiting.get(&k); ok && p.room != rs.serial {
				if other := s.roomOf(p.room); other != "" {
					return &room.ElsewhereError{Room: other}
				}
			}
		}
		st, prev, moved = rs.join(visitor, &k, now)
		if st.State == room.StateNone && rs.soldOut {
			return rushgate.ErrSoldOut
		}
		if st.State == room.StateNone {
			return room.ErrClosed
		}
		return nil
	})
	if err == nil && moved {
		s.leaveMoved(prev, &k, visitor)
	}
	return st, err
}

// roomOf returns the id of the room with the given serial, "" if it is gone.
func (s *Rooms) roomOf(serial uint32) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.bySerial[serial]; rs != nil {
		return rs.id
	}
	return ""
}

// leaveMoved takes a visitor who has just joined another room out of the line it was in. The index
// already records the new place, so until this runs the old waiter is merely stale: no other room
// counts it as waiting, and its own room skips it. The journal says so in the old room's name: a
// replay skips the join of a room deleted since, and would leave the visitor in the old line.
func (s *Rooms) leaveMoved(p place, k *vkey, visitor string) {
	s.mu.Lock()
	rs := s.bySerial[p.room]
	s.mu.Unlock()
	if rs == nil {
		return
	}
	rs.mu.Lock()
	if rs.waiting.moved(p.slot, k) {
		rs.j.record(recGone, rs.id, visitor)
	}
	rs.mu.Unlock()
}

// Status implements [room.Store].
func (s *Rooms) Status(_ context.Context, id, visitor string) (room.Status, error) {
	var st room.Status
	err := s.with(id, func(rs *roomState, now int64) error {
		k := keyOf(visitor)
		if st = rs.status(visitor, &k, now); st.State == room.StateNone && rs.soldOut {
			st.State = room.StateSoldOut
		}
		return nil
	})
	return st, err
}

// Touch implements [room.Store].
func (s *Rooms) Touch(_ context.Context, id string, visitors []string) error {
	return s.with(id, func(rs *roomState, now int64) error {
		for _, v := range visitors {
			k := keyOf(v)
			rs.touch(&k, now)
		}
		return nil
	})
}

// Leave implements [room.Store].
func (s *Rooms) Leave(_ context.Context, id, visitor string) (bool, error) {
	left := false
	err := s.with(id, func(rs *roomState, _ int64) error {
		if rs.leaveLine(visitor) {
			left = true
		}
		if rs.endAdmission(visitor, false) {
			left = true
		}
		return nil
	})
	return left, err
}

// Release implements [room.Store].
func (s *Rooms) Release(_ context.Context, id, visitor, admissionID string) error {
	return s.with(id, func(rs *roomState, now int64) error {
		a, ok := rs.live(visitor, now)
		if !ok || (admissionID != "" && a.ID != admissionID) {
			return room.ErrNotAdmitted
		}
		rs.endAdmission(visitor, false)
		return nil
	})
}

// Active implements [room.Store].
func (s *Rooms) Active(_ context.Context, id, visitor, admissionID string) (bool, error) {
	ok := false
	err := s.with(id, func(rs *roomState, now int64) error {
		a, live := rs.live(visitor, now)
		ok = live && a.ID == admissionID
		return nil
	})
	return ok, err
}

// SetUnits implements [room.Store].
func (s *Rooms) SetUnits(_ context.Context, id, drop string, l rushgate.Level) error {
	return s.with(id, func(rs *roomState, _ int64) error {
		if rs.cfg.Drop != drop {
			return nil
		}
		rs.units, rs.stock, rs.written = max(l.Left, -1), l.Stock, l.Written
		rs.opens, rs.closes = unixNanoOr0(l.Opens), unixNanoOr0(l.Closes)
		rs.soldOut = l.Left == 0 // a link is sold out exactly when its drop has none left
		if l.Left < 0 {
			rs.stock, rs.written, rs.opens, rs.closes = 0, 0, 0, 0
		}
		return nil
	})
}

// Restock implements [room.Store].
func (s *Rooms) Restock(_ context.Context, id, drop string, l rushgate.Level) (bool, error) {
	news := false
	err := s.with(id, func(rs *roomState, _ int64) error {
		if rs.units < 0 || rs.cfg.Drop != drop || l.Written < rs.written {
			return nil
		}
		rs.written, rs.opens, rs.closes = l.Written, unixNanoOr0(l.Opens), unixNanoOr0(l.Closes)
		if rs.stock != l.Stock {
			rs.units, rs.stock, news = max(0, rs.units+l.Stock-rs.stock), l.Stock, true
		}
		return nil
	})
	return news, err
}

// unixNanoOr0 is t in Unix nanoseconds, 0 for the zero time (none).
func unixNanoOr0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return unixNano(t)
}

// Hold implements [room.Store].
func (s *Rooms) Hold(_ context.Context, id, drop, visitor, admissionID string) (bool, error) {
	held := false
	err := s.with(id, func(rs *roomState, now int64) error {
		a, live := rs.live(visitor, now)
		switch {
		case !live || a.ID != admissionID:
			return room.ErrNotAdmitted
		case rs.units < 0 || rs.cfg.Drop != drop:
			return nil
		case rs.units == 0 || rs.soldOut:
			return rushgate.ErrSoldOut
		}
		rs.units--
		held = true
		return nil
	})
	return held, err
}

// Unhold implements [room.Store].
func (s *Rooms) Unhold(_ context.Context, id, drop string) error {
	return s.with(id, func(rs *roomState, _ int64) error {
		if rs.units >= 0 && rs.cfg.Drop == drop {
			rs.units++
		}
		return nil
	})
}

// AddInvites implements [room.Store]: in the record when there is one, so that a code is used once
// across restarts, else in memory.
func (s *Rooms) AddInvites(ctx context.Context, id string, codes []string) (int, error) {
	added := 0
	err := s.with(id, func(rs *roomState, _ int64) error {
		if s.recorder != nil {
			return nil
		}
		if rs.invites == nil {
			rs.invites = make(map[string]bool)
		}
		for _, c := range codes {
			if _, ok := rs.invites[c]; !ok {
				rs.invites[c] = false
				added++
			}
		}
		return nil
	})
	if err != nil || s.recorder == nil {
		return added, err
	}
	added, err = s.recorder.AddInvites(ctx, id, codes)
	return added, recorded(err)
}

// TakeInvite implements [room.Store].
func (s *Rooms) TakeInvite(ctx context.Context, id, code string) (bool, error) {
	taken := false
	err := s.with(id, func(rs *roomState, _ int64) error {
		if used, ok := rs.invites[code]; s.recorder == nil && ok && !used {
			rs.invites[code], taken = true, true
		}
		return nil
	})
	if err != nil || s.recorder == nil {
		return taken, err
	}
	taken, err = s.recorder.TakeInvite(ctx, id, code)
	return taken, recorded(err)
}

// ReturnInvite implements [room.Store].
func (s *Rooms) ReturnInvite(ctx context.Context, id, code string) error {
	err := s.with(id, func(rs *roomState, _ int64) error {
		if _, ok := rs.invites[code]; s.recorder == nil && ok {
			rs.invites[code] = false
		}
		return nil
	})
	if err != nil || s.recorder == nil {
		return err
	}
	return recorded(s.recorder.ReturnInvite(ctx, id, code))
}

// recorded reports a failure of the record as the store being unavailable.
func recorded(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", rushgate.ErrUnavailable, err)
	}
	return nil
}

// SoldOut implements [room.Store].
func (s *Rooms) SoldOut(_ context.Context, id, drop string) error {
	return s.with(id, func(rs *roomState, _ int64) error {
		rs.soldOut = rs.soldOut || rs.cfg.Drop == drop
		return nil
	})
}

// Stats implements [room.Store].
func (s *Rooms) Stats(_ context.Context, id string) (room.Stats, error) {
	var st room.Stats
	err := s.with(id, func(rs *roomState, now int64) error {
		st = room.Stats{
			Waiting:       int64(rs.waiting.Len()),
			Active:        int64(rs.active.Len() - rs.active.CountAtMost(now)),
			AdmittedTotal: rs.admittedTotal,
			JoinedTotal:   rs.joinedTotal,
			IdleTotal:     rs.idleTotal,
			GraceTotal:    rs.graceTotal,
		}
		return nil
	})
	return st, err
}

// Admit implements [room.Store].
func (s *Rooms) Admit(_ context.Context, id string, max int) (room.Tick, error) {
	var t room.Tick
	err := s.with(id, func(rs *roomState, now int64) error {
		t = rs.admit(now, max)
		return nil
	})
	return t, err
}

func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// unixNano is t in Unix nanoseconds, saturated rather than wrapped outside the years 1678-2262 that an
// int64 holds: a far deadline stays far instead of turning into one long past. Configs refuse such
// times (rushgate.MaxTime); this keeps a record written before they did from misbehaving.
func unixNano(t time.Time) int64 {
	switch {
	case t.After(maxNano):
		return math.MaxInt64
	case t.Before(minNano):
		return math.MinInt64
	}
	return t.UnixNano()
}

var minNano, maxNano = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
