package httpapi

import (
	"sync"
	"time"
)

// maxTracked bounds the limiter's memory: past it the table is cleared, which at worst lets a client
// briefly exceed its share, never blocks anybody wrongly.
const maxTracked = 100_000

// limiter is a token bucket per client address.
type limiter struct {
	perSec  float64
	burst   float64
	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(perMinute int) *limiter {
	if perMinute <= 0 {
		return nil
	}
	return &limiter{perSec: float64(perMinute) / 60, burst: float64(perMinute), buckets: make(map[string]*bucket), now: time.Now}
}

// empty reports whether the client at host has no token left, taking none.
func (l *limiter) empty(host string) bool {
	if l == nil {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[host]
	return ok && l.refilled(b, now) < 1
}

// refilled is what b holds at now, its tokens topped up at the limiter's rate since it was last used.
func (l *limiter) refilled(b *bucket, now time.Time) float64 {
	return min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.perSec)
}

// allow reports whether the client at host may take one more token. A nil limiter allows everything.
func (l *limiter) allow(host string) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[host]
	if !ok {
		if len(l.buckets) >= maxTracked {
			clear(l.buckets)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[host] = b
	}
	b.tokens, b.at = l.refilled(b, now), now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
