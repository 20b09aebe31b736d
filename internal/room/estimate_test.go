package room

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestBoundFollowsTheSlots: before the line has moved, the most a wait can be counts from when the slot
// it waits for was taken, not from now: a visitor first in line behind slots of ten minutes taken eight
// minutes ago waits two minutes at most, not ten. A slot held past the most it can be (the room's
// account is not what it seemed) leaves the bound as if taken now.
func TestBoundFollowsTheSlots(t *testing.T) {
	e, cfg, at := filled(5)
	for _, c := range []struct {
		secs     float64
		position int64
		want     time.Duration
	}{
		{1, 1, 10 * time.Minute},
		{481, 1, 120*time.Second + etaSpacing}, // taken at 1 s, free by 601 s; a sample's time may be early
		{481, 5, 120*time.Second + etaSpacing},
		{481, 6, 720*time.Second + etaSpacing}, // the wave after
		{700, 1, 10 * time.Minute},             // overdue
	} {
		if got, bound := e.estimate(at(c.secs), c.position, cfg); got != c.want || !bound {
			t.Errorf("at %gs, position %d: %v (upper bound %v), want %v, an upper bound", c.secs, c.position, got, bound, c.want)
		}
	}
}

// TestBoundCountsFreeSlots: in a room that holds its line with slots free (before its opening, or its
// drop's, or after sessions ended early), the first in line take them the moment it admits, so they
// are told no wait beyond the hold, and each visitor behind them a hold less than in a full room.
func TestBoundCountsFreeSlots(t *testing.T) {
	e, cfg, at := filled(5) // five slots taken at 1 s
	e.seat(2)               // two of them ended early: admissions 3 to 5 are live
	for _, c := range []struct {
		position int64
		want     time.Duration
	}{
		{1, 0}, {2, 0}, // the free slots
		{3, 120*time.Second + etaSpacing}, // admission 3's slot, free by 601 s at the latest
		{5, 120*time.Second + etaSpacing},
		{6, 10 * time.Minute}, // the slot the first takes now, a whole session on
		{8, 720*time.Second + etaSpacing},
	} {
		if got, bound := e.estimate(at(481), c.position, cfg); got != c.want || !bound {
			t.Errorf("position %d: %v (upper bound %v), want %v, an upper bound", c.position, got, bound, c.want)
		}
	}
	// A fresh room held before its opening: every slot free, the first wave goes in at the opening.
	var fresh estimator
	fresh.configure(cfg)
	fresh.seat(5)
	for _, c := range []struct {
		position int64
		want     time.Duration
	}{{1, 0}, {5, 0}, {6, 10 * time.Minute}, {11, 20 * time.Minute}} {
		if got, _ := fresh.estimate(at(0), c.position, cfg); got != c.want {
			t.Errorf("fresh, position %d: %v, want %v", c.position, got, c.want)
		}
	}
	// With a rate, the free slots fill at its pace.
	cfg.Rate = &Rate{Admits: 2, Per: rushgate.Duration(time.Second)}
	if got, _ := fresh.estimate(at(0), 5, cfg); got != 3*time.Second {
		t.Errorf("fresh with a rate of 2/s, position 5: %v, want 3s", got)
	}
}

// filled is the estimator of a room of capacity ten-minute slots that filled at 1 s, when a line
// formed, with its config and the time secs seconds after its start.
func filled(capacity int) (*estimator, Config, func(secs float64) time.Time) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(secs float64) time.Time { return start.Add(time.Duration(secs * float64(time.Second))) }
	cfg := Config{Capacity: capacity, SessionTTL: rushgate.Duration(10 * time.Minute)}
	e := &estimator{}
	e.configure(cfg)
	e.observe(at(0), 0, false)
	e.observe(at(1), int64(capacity), true)
	return e, cfg, at
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

// TestPaceFollowsTheSlots: in a full room a capacity's worth of admissions takes as long as a slot is
// held, so a line that goes in in waves as sessions end is told the pace of the waves from the second
// one on, not the slower pace of the time before the first, and each visitor the wait until its wave;
// and a line that stops moving is told the slower pace over time that its steps without admissions
// show.
func TestPaceFollowsTheSlots(t *testing.T) {
	e, cfg, at := filled(10) // each visitor stays 10 s
	e.observe(at(11), 20, true)
	if got := e.observed(); math.Abs(got-1) > 1e-9 {
		t.Errorf("after the first wave: %.3f a second, want 1 (10 in the 10 s the slots were held)", got)
	}
	e.observe(at(21), 30, true)
	if got := e.observed(); math.Abs(got-1) > 1e-9 {
		t.Errorf("after the second wave: %.3f a second, want 1", got)
	}
	// The first ten in line go in with the next wave, at 31 s, the next ten with the one after: the
	// wait until their wave, not their share of the waves' pace (1 s and 11 s).
	for _, c := range []struct {
		secs     float64
		position int64
		want     time.Duration
	}{{21, 1, 10 * time.Second}, {21, 10, 10 * time.Second}, {21, 11, 20 * time.Second}, {25, 1, 6 * time.Second}, {25, 15, 16 * time.Second}} {
		if got, bound := e.estimate(at(c.secs), c.position, cfg); got != c.want || bound {
			t.Errorf("at %gs, position %d: %v (upper bound %v), want %v", c.secs, c.position, got, bound, c.want)
		}
	}
	e.observe(at(41), 30, true) // nobody let in for 20 s: over time, 10 in the 30 s since the first wave
	if got, want := e.observed(), 10.0/30; math.Abs(got-want) > 1e-9 {
		t.Errorf("after a step that let nobody in: %.3f a second, want %.3f", got, want)
	}
	// A room restored from a backup counts fewer admissions: the pace starts afresh from its count.
	e.observe(at(42), 5, true)
	e.observe(at(43), 6, true)
	e.observe(at(44), 8, true)
	if got := e.observed(); math.Abs(got-2) > 1e-9 || e.turn != 0 {
		t.Errorf("after a restore: %.3f a second (slots held %.1f s), want 2, from the steps since", got, e.turn)
	}
}

// TestEstimatesOfFullRooms: the wait each visitor of a simulated crowd is first told, against the wait
// it had, in rooms of capacity whose visitors stay alike, at random, or as long as the first to leave
// says nothing of, and after a pause. Taken over time alone from when the line formed, as until
// 2026-12-07, the first four crowds were told waits off by medians and 90th percentiles of 15% and 55%
// (stays of 10 s), 22% and 96% (5-15 s), 5% and 15% (memoryless), and 13% and 102% (500 slots).
func TestEstimatesOfFullRooms(t *testing.T) {
	room := Config{Capacity: 50, SessionTTL: rushgate.Duration(time.Minute), Grace: rushgate.Duration(20 * time.Second)}
	big := Config{Capacity: 500, SessionTTL: rushgate.Duration(10 * time.Minute), Grace: rushgate.Duration(time.Minute)}
	alike := func(*rand.Rand) time.Duration { return 10 * time.Second }
	spread := func(r *rand.Rand) time.Duration { return time.Duration(5e9 + r.Float64()*10e9) }
	for _, c := range []struct {
		name        string
		crowd       crowd
		median, p90 float64 // the most the relative errors may be
		longer      float64 // the most of the visitors that may wait over a second longer than told
	}{
		{"stays of 10 s", crowd{cfg: room, visitors: 1000, every: 50 * time.Millisecond, stay: alike}, 0.02, 0.10, 0},
		{"stays of 5-15 s", crowd{cfg: room, visitors: 1000, every: 50 * time.Millisecond, stay: spread}, 0.10, 0.25, 0.05},
		{"memoryless stays of 10 s", crowd{cfg: room, visitors: 1000, every: 50 * time.Millisecond, stay: func(r *rand.Rand) time.Duration {
			return time.Duration(r.ExpFloat64() * 10e9)
		}}, 0.10, 0.25, 1}, // memoryless: how long a visitor stays says nothing of when the next leaves
		{"500 slots, stays of 30-90 s", crowd{cfg: big, visitors: 9000, every: time.Second / 30, stay: func(r *rand.Rand) time.Duration {
			return time.Duration(30e9 + r.Float64()*60e9)
		}}, 0.05, 0.50, 0.05},
		// Every visitor keeps its slot the whole session: the most a wait can be is what it is.
		{"whole sessions of 10 s", crowd{cfg: Config{Capacity: 50, SessionTTL: rushgate.Duration(10 * time.Second)}, visitors: 1000,
			every: 50 * time.Millisecond, stay: func(*rand.Rand) time.Duration { return 10 * time.Second }}, 0.02, 0.10, 0},
		// A pause lets the slots empty; the first to go in after it pair with visitors let in before it.
		{"stays of 5-15 s, a minute's pause", crowd{cfg: room, visitors: 3000, every: 50 * time.Millisecond, stay: spread, pauseAt: 40 * time.Second,
			pauseFor: time.Minute}, 0.05, 0.40, 1},
	} {
		median, p90, longer, exceeded := c.crowd.simulate()
		t.Logf("%s: relative error median %.1f%%, 90th percentile %.1f%%; %.1f%% waited longer than told", c.name, median*100,
			p90*100, longer*100)
		if median > c.median || p90 > c.p90 {
			t.Errorf("%s: relative errors %.2f and %.2f, want at most %.2f and %.2f", c.name, median, p90, c.median, c.p90)
		}
		if longer > c.longer {
			t.Errorf("%s: %.3f of the visitors waited longer than told, want at most %.3f", c.name, longer, c.longer)
		}
		if exceeded > 0 {
			t.Errorf("%s: %d visitors waited longer than the most they were told their wait could be", c.name, exceeded)
		}
	}
}

// crowd is a simulated crowd of visitors through a room of capacity: one arrives every every and
// joins the back of the line, told its wait; each step, every 50 ms, ends the sessions due and lets
// the front of the line into the free slots, each admitted visitor staying stay; the room lets nobody
// in for pauseFor from pauseAt.
type crowd struct {
	cfg               Config
	visitors          int
	every             time.Duration
	stay              func(*rand.Rand) time.Duration
	pauseAt, pauseFor time.Duration
}

// simulate returns the median and 90th percentile of the relative errors of the waits the crowd was
// told that were estimates (not bounds), against the waits they had, the share of them that the wait
// outlasted by more than a second, and how many waits outlasted the most they were told they could be
// (bounds); with a pause, of the waits told after it.
func (c crowd) simulate() (median, p90, longer float64, exceeded int) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var e estimator
	e.configure(c.cfg)
	type told struct {
		at    time.Time
		wait  float64
		bound bool
	}
	var line []told
	var ends []time.Time
	var errs []float64
	var total int64
	arrived := 0
	for now := start; arrived < c.visitors || len(line) > 0; now = now.Add(50 * time.Millisecond) {
		since := now.Sub(start)
		paused := since >= c.pauseAt && since < c.pauseAt+c.pauseFor
		for ; arrived < c.visitors && !start.Add(time.Duration(arrived)*c.every).After(now); arrived++ {
			d, bound := e.estimate(now, int64(len(line)+1), c.cfg)
			w := d.Seconds()
			if c.pauseFor > 0 && since < c.pauseAt+c.pauseFor {
				w = -1
			}
			line = append(line, told{now, w, bound})
		}
		ends = slices.DeleteFunc(ends, func(end time.Time) bool { return !end.After(now) })
		for !paused && len(line) > 0 && len(ends) < c.cfg.Capacity {
			v, had := line[0], now.Sub(line[0].at).Seconds()
			switch {
			case v.wait < 0 || had == 0:
			case v.bound:
				if had > v.wait {
					exceeded++
				}
			default:
				errs = append(errs, math.Abs(v.wait-had)/had)
				if had > v.wait+1 {
					longer++
				}
			}
			line = line[1:]
			ends = append(ends, now.Add(c.stay(rng)))
			total++
		}
		e.observe(now, total, len(line) > 0 && !paused)
	}
	if len(errs) == 0 {
		return 0, 0, 0, exceeded
	}
	slices.Sort(errs)
	return errs[len(errs)/2], errs[len(errs)*9/10], longer / float64(len(errs)), exceeded
}

// BenchmarkEstimator is a step of a full room's gate (observe) and one visitor's view of its wait
// (estimate), with the half hour of samples a room with long sessions keeps: both must stay far below
// a step's own cost.
func BenchmarkEstimator(b *testing.B) {
	cfg := Config{Capacity: 500, SessionTTL: rushgate.Duration(30 * time.Minute)}
	var e estimator
	e.configure(cfg)
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var total int64
	step := func(i int) {
		total += int64(i % 3)
		e.observe(start.Add(time.Duration(i)*etaSpacing), total, true)
	}
	for i := range 4 * 3600 { // an hour at a step each 250 ms
		step(i)
	}
	b.ResetTimer()
	for i := range b.N {
		step(4*3600 + i)
		if d, _ := e.estimate(start, 1000, cfg); d <= 0 {
			b.Fatal(d)
		}
	}
}

// FuzzEstimator feeds the estimator any steps, time going back included (a wall clock set back) and
// counts going back (a restore): the pace stays finite and never negative, and every wait told is
// between none and maxETA.
func FuzzEstimator(f *testing.F) {
	f.Add(uint8(50), []byte{10, 0, 1, 250, 50, 1, 250, 0, 1, 40, 50, 1})
	f.Add(uint8(0), []byte{0, 0, 0, 1, 1, 1, 255, 255, 1})
	f.Add(uint8(3), []byte{200, 3, 1, 10, 250, 1, 0, 2, 0, 100, 1, 1})
	f.Fuzz(func(t *testing.T, capacity uint8, steps []byte) {
		cfg := Config{Capacity: int(capacity), SessionTTL: rushgate.Duration(time.Minute)}
		if capacity == 0 {
			cfg = Config{Rate: &Rate{Admits: 5, Per: rushgate.Duration(time.Second)}}
		}
		var e estimator
		e.configure(cfg)
		now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		var total int64
		for len(steps) >= 3 {
			// A step from a second before the last to 24.5 s after it, admitting up to the capacity
			// (a byte of 250 and more: the count a little lower).
			now = now.Add(time.Duration(int(steps[0])-10) * 100 * time.Millisecond)
			if steps[1] >= 250 {
				total = max(0, total-int64(steps[1]-249))
			} else {
				total += int64(steps[1]) % (int64(capacity) + 1)
			}
			e.observe(now, total, steps[2]%2 == 1)
			e.seat(int64(steps[2]/2) % (int64(capacity) + 2)) // free slots, now and then more than the capacity
			steps = steps[3:]
			if p := e.observed(); !(p >= 0) || math.IsInf(p, 0) {
				t.Fatalf("pace %v", p)
			}
			for _, position := range []int64{0, 1, 7, 1 << 40} {
				if d, _ := e.estimate(now, position, cfg); d < 0 || d > maxETA {
					t.Fatalf("wait %v at %d", d, position)
				}
			}
		}
	})
}
