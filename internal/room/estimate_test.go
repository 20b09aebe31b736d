package room

import (
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

// TestEstimateBounded: a wait computed from a tiny rate, a far opening or a huge position is capped at
// maxETA, never a wrapped or negative duration.
func TestEstimateBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	far := rushgate.MaxTime.Add(-time.Second)
	var e estimator
	for _, c := range []struct {
		name     string
		position int64
		cfg      Config
	}{
		{"slow rate", 1 << 40, Config{Rate: &Rate{Admits: 1, Per: rushgate.Duration(rushgate.MaxDuration)}}},
		{"far opening", 1, Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Minute), OpensAt: &far}},
		{"both", 1 << 62, Config{Capacity: 1, SessionTTL: rushgate.Duration(rushgate.MaxDuration), OpensAt: &far}},
	} {
		if got, _ := e.estimate(now, c.position, c.cfg); got != maxETA {
			t.Errorf("%s: %v, want the cap %v", c.name, got, maxETA)
		}
	}
	if got, bound := e.estimate(now, 10, Config{Capacity: 5, SessionTTL: rushgate.Duration(time.Minute)}); got != 2*time.Minute || !bound {
		t.Errorf("10 behind 5 slots of a minute: %v (upper bound %v), want 2m, an upper bound", got, bound)
	}
}

// TestEstimateSaysWhenItIsABound: before admissions are observed, a wait set by the capacity (every
// admitted visitor staying the whole session) is the most it can be, and says so; one set by the
// rate, which admits no faster whoever leaves, is an estimate; so is every wait once the line moves.
// A moving line's pace is what was observed, but never faster than the rate, and in a room with a rate
// and no capacity the rate itself.
func TestEstimateSaysWhenItIsABound(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ttl := rushgate.Duration(10 * time.Minute)
	for _, c := range []struct {
		name   string
		cfg    Config
		want   time.Duration
		bound  bool
		moving time.Duration // observed moving at 5 a second
	}{
		{"capacity alone", Config{Capacity: 5, SessionTTL: ttl}, 20 * time.Minute, true, 2 * time.Second},
		{"capacity slower than the rate", Config{Capacity: 5, SessionTTL: ttl, Rate: &Rate{Admits: 10, Per: rushgate.Duration(time.Second)}}, 20*time.Minute + 2*time.Second, true, 2 * time.Second},
		{"rate slower than the capacity", Config{Capacity: 5000, SessionTTL: ttl, Rate: &Rate{Admits: 1, Per: rushgate.Duration(time.Second)}}, 10 * time.Second, false, 10 * time.Second},
		{"rate alone", Config{Rate: &Rate{Admits: 2, Per: rushgate.Duration(time.Second)}}, 5 * time.Second, false, 5 * time.Second},
		{"rate alone, faster than observed", Config{Rate: &Rate{Admits: 20, Per: rushgate.Duration(time.Second)}}, 500 * time.Millisecond, false, 500 * time.Millisecond},
	} {
		var e estimator
		if got, bound := e.estimate(now, 10, c.cfg); got != c.want || bound != c.bound {
			t.Errorf("%s, before any admission: %v (upper bound %v), want %v (%v)", c.name, got, bound, c.want, c.bound)
		}
		e.observe(now, 0, true)
		e.observe(now.Add(time.Second), 5, true) // 5 admitted a second from a line
		if got, bound := e.estimate(now.Add(time.Second), 10, c.cfg); got != c.moving || bound {
			t.Errorf("%s, at 5 a second: %v (upper bound %v), want %v, an estimate", c.name, got, bound, c.moving)
		}
	}
}

// TestEstimateNeverPassesTheBound: a pace measured while a line finds its rhythm can be slow, but the
// wait told never passes the most it can be (see longest), and then says it is that most.
func TestEstimateNeverPassesTheBound(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	cfg := Config{Capacity: 5, SessionTTL: rushgate.Duration(10 * time.Minute)}
	var e estimator
	e.observe(now, 0, true)
	e.observe(now.Add(300*time.Second), 1, true) // one admission in 300 s
	at := now.Add(300 * time.Second)
	if got, bound := e.estimate(at, 10, cfg); got != 20*time.Minute || !bound {
		t.Errorf("10 behind 5 ten-minute slots, the line seen at one in 300 s: %v (upper bound %v), want 20m, the most", got, bound)
	}
	if got, bound := e.estimate(at, 1, cfg); got != 300*time.Second || bound {
		t.Errorf("first behind them: %v (upper bound %v), want 5m, an estimate", got, bound)
	}
	cfg.Mode = ModePassthrough // lets everyone in: no slot to wait for, no bound
	if got, bound := e.estimate(at, 10, cfg); got != 3000*time.Second || bound {
		t.Errorf("passthrough: %v (upper bound %v), want 50m, an estimate", got, bound)
	}
}

// TestPaceIsTheLines: only admissions made while visitors waited in a room that was admitting tell
// the line's pace. A quiet spell that admitted each arrival at once, or a pause that admitted nobody,
// would otherwise slow the estimate of a line that moves at ten a second to a crawl.
func TestPaceIsTheLines(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(secs float64) time.Time { return start.Add(time.Duration(secs * float64(time.Second))) }
	type step struct {
		secs  float64
		total int64
		lined bool
	}
	for _, c := range []struct {
		name  string
		steps []step
		want  float64
	}{
		{"nothing observed", nil, 0},
		{"one step", []step{{0, 10, true}}, 0},
		{"a quiet spell: arrivals admitted at once", []step{{0, 1, false}, {20, 2, false}, {40, 3, false}, {59, 4, false}}, 0},
		{"a crowd after a quiet spell", []step{{0, 1, false}, {20, 2, false}, {40, 3, false}, {59, 14, true}, {60, 24, true}, {61, 34, true}}, 10},
		{"a pause in a moving line", []step{{0, 0, true}, {1, 10, true}, {2, 20, true}, {3, 20, false}, {31, 20, false}, {32, 30, true}}, 10},
		{"a line that does not move", []step{{0, 5, true}, {30, 5, true}}, 0},
		{"the line empties", []step{{0, 0, true}, {1, 4, true}, {2, 8, false}, {30, 9, false}}, 4},
		{"a line gone at once", []step{{0, 0, true}, {1, 4, false}}, 0},
	} {
		var e estimator
		for _, s := range c.steps {
			e.observe(at(s.secs), s.total, s.lined)
		}
		if got := e.observed(); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%s: %.3f a second, want %.3f", c.name, got, c.want)
		}
	}
}
