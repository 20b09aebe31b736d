package room

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// configTTL is how long the service keeps a room's config for the checks of a join (its challenge):
// a change reaches every instance's joins within it, and a crowd's joins cost no read of the config.
const configTTL = time.Second

type cachedConfig struct {
	cfg        Config
	at         time.Time
	refreshing atomic.Bool // one refresh at a time
}

// pressure counts a room's joins in the current second and remembers the last whole second's.
type pressure struct {
	mu          sync.Mutex
	second      int64
	count, last int
}

// Config returns a room's config as read at most about a second ago: what a join is checked against.
// A config older than that is returned as it is while one read of the store refreshes it in the
// background, so that a join never waits on a config read but the first of a room's.
func (s *Service) Config(ctx context.Context, id string) (Config, error) {
	c, ok := s.configs.Load(id)
	if !ok {
		cfg, err := s.store.Room(ctx, id)
		if err == nil {
			s.configs.Store(id, &cachedConfig{cfg: cfg, at: time.Now()})
		}
		return cfg, err
	}
	cc := c.(*cachedConfig)
	if time.Since(cc.at) >= configTTL && cc.refreshing.CompareAndSwap(false, true) && s.ctx.Err() == nil {
		s.wg.Go(func() {
			defer cc.refreshing.Store(false)
			cfg, err := s.store.Room(s.ctx, id)
			switch {
			case err == nil:
				s.configs.Store(id, &cachedConfig{cfg: cfg, at: time.Now()})
			case errors.Is(err, ErrNotFound):
				s.configs.Delete(id)
			}
		})
	}
	return cc.cfg, nil
}

// Difficulty is the challenge a new visitor of the room must solve now: the room's difficulty, raised
// one bit for each doubling of this instance's joins per second past PressureFrom, up to Max.
func (s *Service) Difficulty(id string, c *Challenge) int {
	if c == nil {
		return 0
	}
	if c.Max <= c.Difficulty {
		return c.Difficulty
	}
	p, _ := s.pressure.LoadOrStore(id, &pressure{})
	pr := p.(*pressure)
	now := s.second()
	pr.mu.Lock()
	var rate int
	switch pr.second {
	case now: // this second so far, or the last whole one if it was busier
		rate = max(pr.last, pr.count)
	case now - 1: // the last whole second
		rate = pr.count
	}
	pr.mu.Unlock()
	if rate < PressureFrom {
		return c.Difficulty
	}
	extra := int(math.Log2(float64(rate)/PressureFrom)) + 1
	return min(c.Max, c.Difficulty+extra)
}

// pressed counts a join of the room for Difficulty.
func (s *Service) pressed(id string) {
	p, ok := s.pressure.Load(id)
	if !ok {
		return // no room asks for its pressure until its config has a Max
	}
	pr := p.(*pressure)
	now := s.second()
	pr.mu.Lock()
	if pr.second != now {
		if pr.second == now-1 {
			pr.last = pr.count
		} else {
			pr.last = 0
		}
		pr.second, pr.count = now, 0
	}
	pr.count++
	pr.mu.Unlock()
}

// second is the current second of the service's clock, by which joins are counted.
func (s *Service) second() int64 {
	if s.opts.Clock != nil {
		return s.opts.Clock().Unix()
	}
	return time.Now().Unix()
}
