package memstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/storetest"
)

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		c := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
		return storetest.Harness{Store: memstore.New(memstore.Options{Clock: c.Now}), Advance: c.Advance, Now: c.Now}
	})
}
