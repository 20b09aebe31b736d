package memstore

import (
	"cmp"
	"encoding/gob"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

// The embedded backend keeps its lines in memory, so a restart would send every waiting visitor to the
// back of a new line. A snapshot keeps them instead (Save, Load): the places, the admissions with their
// ids (which admission tokens carry), and the counters that name the next admissions. The journal of
// later changes (journal.go) is replayed onto it, so that a crash loses no more than its last
// moments; the room configs themselves are recorded as they change (Options.Recorder).

// snapshot is what Save writes: every room's line and admissions, and the generation that a journal
// of later changes names (see journal.go; 0 in snapshots older than journals).
type snapshot struct {
	Rooms      []roomSnapshot
	Generation int64
	Spent      []spentSnapshot // the one-time things used and not yet expired (none in older snapshots)
}

// spentSnapshot is one id Spent remembers, until the end of minute Minute (unix minutes).
type spentSnapshot struct {
	ID     string
	Minute int64
}

type roomSnapshot struct {
	ID            string
	Epoch         string
	AdmissionSeq  int64
	AdmittedTotal int64
	JoinedTotal   int64
	IdleTotal     int64
	GraceTotal    int64
	Window        []int64 // admission times inside the rate window, oldest first
	Admissions    []admissionSnapshot
	Waiting       []waiterSnapshot // in line order: the pre-queue by draw, then arrivals
}

type admissionSnapshot struct {
	Visitor, ID string
	ExpiresAt   int64 // unix ns
	Collected   bool
}

type waiterSnapshot struct {
	Visitor string
	Pre     bool
	Draw    int64 // the pre-queue order, for a waiter in the pre-queue
}

// Save writes every room's line and admissions, as of one instant, to w.
func (s *Rooms) Save(w io.Writer) error {
	snap := s.freeze(s.gen, func() {})
	return snap.write(w)
}

func (snap *snapshot) write(w io.Writer) error {
	if err := gob.NewEncoder(w).Encode(snap); err != nil {
		return fmt.Errorf("memstore: saving lines: %w", err)
	}
	return nil
}

// Lines counts what a saved snapshot of the lines holds.
type Lines struct {
	Rooms, Waiting, Admitted int
}

// CheckLines reads a snapshot written by Save through to its end and counts what it holds: a restore
// checks a backup's lines before putting them in place, since a snapshot that does not load is set
// aside at start with a warning and every line starts empty.
func CheckLines(r io.Reader) (Lines, error) {
	var snap snapshot
	if err := gob.NewDecoder(r).Decode(&snap); err != nil {
		return Lines{}, fmt.Errorf("memstore: reading lines: %w", err)
	}
	n := Lines{Rooms: len(snap.Rooms)}
	for _, rs := range snap.Rooms {
		n.Waiting += len(rs.Waiting)
		n.Admitted += len(rs.Admissions)
	}
	return n, nil
}

// list returns the rooms.
func (s *Rooms) list() []*roomState {
	s.mu.Lock()
	defer s.mu.Unlock()
	rooms := make([]*roomState, 0, len(s.rooms))
	for _, rs := range s.rooms {
		rooms = append(rooms, rs)
	}
	return rooms
}

// freeze returns the lines as one instant, as the snapshot of generation gen, and runs cut at that
// instant: every room is locked and no room is created or deleted meanwhile, so no change falls
// between the snapshot and what cut does with the journal. Requests wait for it, O(everyone waiting).
// No path locks a second room while holding one, so locking them all in turn cannot deadlock.
func (s *Rooms) freeze(gen int64, cut func()) snapshot {
	s.admin.Lock()
	defer s.admin.Unlock()
	rooms := s.list()
	for _, rs := range rooms {
		rs.mu.Lock()
	}
	defer func() {
		for _, rs := range rooms {
			rs.mu.Unlock()
		}
	}()
	snap := snapshot{Generation: gen}
	for _, rs := range rooms {
		snap.Rooms = append(snap.Rooms, rs.snapshot())
	}
	if s.spent != nil { // a spend is in the snapshot or after the cut, never lost between them
		s.spent.mu.Lock()
		defer s.spent.mu.Unlock()
		snap.Spent = s.spent.live()
	}
	cut()
	return snap
}

func (rs *roomState) snapshot() roomSnapshot {
	out := roomSnapshot{
		ID: rs.id, Epoch: rs.epoch, AdmissionSeq: rs.admissionSeq, AdmittedTotal: rs.admittedTotal,
		JoinedTotal: rs.joinedTotal, IdleTotal: rs.idleTotal, GraceTotal: rs.graceTotal,
		Window: slices.Clone(rs.window),
	}
	for v, a := range rs.admissions {
		out.Admissions = append(out.Admissions, admissionSnapshot{
			Visitor: v, ID: a.ID, ExpiresAt: unixNano(a.ExpiresAt), Collected: a.Collected,
		})
	}
	l := &rs.waiting
	var pre, arrivals []int32
	for i := l.oldest; i != none; i = l.at(i).next {
		if !l.owns(i) { // its visitor has just moved to another line
			continue
		}
		if l.at(i).pre {
			pre = append(pre, i)
		} else {
			arrivals = append(arrivals, i)
		}
	}
	slices.SortFunc(pre, func(a, b int32) int {
		return cmp.Or(cmp.Compare(l.at(a).seq, l.at(b).seq), cmp.Compare(l.id(a), l.id(b)))
	})
	slices.SortFunc(arrivals, func(a, b int32) int { return cmp.Compare(l.at(a).seq, l.at(b).seq) })
	for _, i := range pre {
		out.Waiting = append(out.Waiting, waiterSnapshot{Visitor: l.id(i), Pre: true, Draw: l.at(i).seq})
	}
	for _, i := range arrivals {
		out.Waiting = append(out.Waiting, waiterSnapshot{Visitor: l.id(i)})
	}
	return out
}

// Load puts back the lines and admissions saved by Save into the rooms of the same ids, which must
// already exist (restored from the record) and be empty; saved rooms that no longer exist are skipped.
// Every restored waiter counts as present now: the downtime was not the visitors' doing, and each has
// a whole idle timeout to come back.
func (s *Rooms) Load(r io.Reader) error {
	var snap snapshot
	if err := gob.NewDecoder(r).Decode(&snap); err != nil {
		return fmt.Errorf("memstore: loading lines: %w", err)
	}
	s.gen = snap.Generation
	now := unixNano(s.clock())
	for _, saved := range snap.Rooms {
		rs, err := s.lookup(saved.ID)
		if err != nil {
			continue
		}
		rs.mu.Lock()
		err = rs.restore(saved, now)
		rs.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if s.spent != nil {
		for _, sp := range snap.Spent {
			s.spent.load(sp.ID, sp.Minute)
		}
	}
	return nil
}

func (rs *roomState) restore(saved roomSnapshot, now int64) error {
	if rs.waiting.Len() > 0 || rs.active.Len() > 0 || rs.admittedTotal > 0 {
		return fmt.Errorf("memstore: loading lines: room %s is not empty", rs.id)
	}
	rs.epoch, rs.admissionSeq, rs.admittedTotal = saved.Epoch, saved.AdmissionSeq, saved.AdmittedTotal
	rs.joinedTotal, rs.idleTotal, rs.graceTotal = saved.JoinedTotal, saved.IdleTotal, saved.GraceTotal
	rs.window = slices.Clone(saved.Window)
	for _, a := range saved.Admissions {
		exp := time.Unix(0, a.ExpiresAt).UTC()
		rs.admissions[a.Visitor] = &room.Admission{ID: a.ID, ExpiresAt: exp, Collected: a.Collected}
		rs.active.Add(a.Visitor, a.ExpiresAt)
	}
	for _, w := range saved.Waiting {
		k := keyOf(w.Visitor)
		if _, ok := rs.waiting.idx.get(&k); ok {
			// Saved from one consistent state, a visitor waits in one line; should a damaged snapshot
			// say otherwise, the first line keeps it.
			continue
		}
		rs.waiting.add(w.Visitor, &k, now, w.Pre, w.Draw)
	}
	return nil
}
