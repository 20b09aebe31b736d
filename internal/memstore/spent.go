package memstore

import (
	"context"
	"sync"
	"time"
)

// Spent remembers used ids in buckets by the minute they expire in: a spend looks in the few buckets
// still live and whole buckets go when their minute has passed, so each spend costs O(1). In the
// embedded backend the spends go to the lines' journal and snapshot (journal.go), so that a solution
// used before a restart stays used after it.
type Spent struct {
	clock func() time.Time
	j     *journal // where spends go, nil for none

	mu      sync.Mutex
	buckets map[int64]map[string]struct{} // expiry minute -> ids
}

// NewSpent returns an empty store; a nil clock means time.Now.
func NewSpent(clock func() time.Time) *Spent {
	if clock == nil {
		clock = time.Now
	}
	return &Spent{clock: clock, buckets: make(map[int64]map[string]struct{})}
}

// Spend implements [rushgate.Spent].
func (s *Spent) Spend(_ context.Context, id string, until time.Time) (bool, error) {
	now := s.clock().Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, ids := range s.buckets {
		if m < now {
			delete(s.buckets, m)
			continue
		}
		if _, ok := ids[id]; ok {
			return false, nil
		}
	}
	m := until.Unix() / 60
	s.add(id, m)
	s.j.record(recSpend, id, m)
	return true, nil
}

// add remembers id until the end of minute m; s.mu is held.
func (s *Spent) add(id string, m int64) {
	if s.buckets[m] == nil {
		s.buckets[m] = make(map[string]struct{})
	}
	s.buckets[m][id] = struct{}{}
}

// load puts back a spend of the journal or the snapshot, unless its minute has passed.
func (s *Spent) load(id string, m int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m >= s.clock().Unix()/60 {
		s.add(id, m)
	}
}

// live returns the ids still remembered and their minutes, for a snapshot; s.mu is held.
func (s *Spent) live() []spentSnapshot {
	now := s.clock().Unix() / 60
	var out []spentSnapshot
	for m, ids := range s.buckets {
		if m < now {
			continue
		}
		for id := range ids {
			out = append(out, spentSnapshot{ID: id, Minute: m})
		}
	}
	return out
}
