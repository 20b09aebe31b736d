package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// History keeps each entity's samples in memory, for the last [rushgate.HistoryKeep]. The embedded
// backend is one process, so its history needs no sharing; a restart starts it afresh.
type History struct {
	clock func() time.Time

	mu      sync.Mutex
	samples map[string][]rushgate.Sample // entity -> samples, oldest first
}

// NewHistory returns an empty history; a nil clock means time.Now.
func NewHistory(clock func() time.Time) *History {
	if clock == nil {
		clock = time.Now
	}
	return &History{clock: clock, samples: make(map[string][]rushgate.Sample)}
}

// Sample implements [rushgate.History].
func (h *History) Sample(_ context.Context, entity string, figures []int64) error {
	at := h.clock().Truncate(time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.samples[entity]
	if n := len(s); n > 0 && !s[n-1].At.Before(at) {
		return nil
	}
	// Old samples go in bulk once they are twice too many, so that each Sample costs O(1) amortized.
	if len(s) >= 2*rushgate.HistoryLen {
		s = slices.Clone(s[len(s)-rushgate.HistoryLen+1:])
	}
	h.samples[entity] = append(s, rushgate.Sample{At: at, Figures: slices.Clone(figures)})
	return nil
}

// Since implements [rushgate.History].
func (h *History) Since(_ context.Context, entity string, since time.Time) ([]rushgate.Sample, error) {
	keep := h.clock().Add(-rushgate.HistoryKeep - time.Minute)
	if since.Before(keep) {
		since = keep
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.samples[entity]
	i, _ := slices.BinarySearchFunc(s, since, func(x rushgate.Sample, t time.Time) int {
		if x.At.After(t) {
			return 1
		}
		return -1
	})
	return slices.Clone(s[i:]), nil
}

// Forget implements [rushgate.History].
func (h *History) Forget(_ context.Context, entity string) error {
	h.mu.Lock()
	delete(h.samples, entity)
	h.mu.Unlock()
	return nil
}
