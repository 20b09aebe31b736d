package memstore

import (
	"context"
	"sync"
	"time"
)

// Spent remembers used ids in buckets by the minute they expire in: a spend looks in the few buckets
// still live and whole buckets go when their minute has passed, so each spend costs O(1).
type Spent struct {
	clock func() time.Time

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
	if s.buckets[m] == nil {
		s.buckets[m] = make(map[string]struct{})
	}
	s.buckets[m][id] = struct{}{}
	return true, nil
}
