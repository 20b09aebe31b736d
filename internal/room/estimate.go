package room

import (
	"math"
	"sync"
	"time"
)

// estimator turns the pace at which the line recently moved into waiting times.
type estimator struct {
	mu      sync.Mutex
	window  time.Duration // how far back the pace is taken (see windowOf); 0 is etaWindow
	samples []sample
}

// sample is what one admission step left: when, the room's admissions so far, and whether visitors
// then waited in a room that was admitting; with the sums of the spans (see sample.sum) from the
// first sample observed up to it, so that the pace between any two samples costs no walk between them.
type sample struct {
	at       time.Time
	total    int64
	lined    bool
	secs     float64
	admitted int64
}

const (
	etaWindow    = time.Minute
	etaMaxWindow = 30 * time.Minute // at most 7,200 samples a room, each a few words
	etaSpacing   = 250 * time.Millisecond
	maxETA       = 366 * 24 * time.Hour
	minObserved  = 2
)

// windowOf is how far back a room's pace is taken: a minute, or for a room of capacity the longest a
// slot is held (grace and session, up to half an hour), since such a line moves as sessions end and
// a window shorter than them sees a wave of admissions and not the wait until the next.
func windowOf(cfg Config) time.Duration {
	if cfg.Capacity == 0 {
		return etaWindow
	}
	return min(max(etaWindow, time.Duration(cfg.Grace+cfg.SessionTTL)), etaMaxWindow)
}

// setWindow sets how far back the pace is taken.
func (e *estimator) setWindow(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.window = d
}

// observe notes a step at now: total admissions so far, and lined when visitors still wait in a room
// that is admitting.
func (e *estimator) observe(now time.Time, total int64, lined bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	window := e.window
	if window == 0 {
		window = etaWindow
	}
	next := sample{at: now, total: total, lined: lined}
	if n := len(e.samples); n > 0 && now.Sub(e.samples[n-1].at) < etaSpacing {
		next.at = e.samples[n-1].at // the step joins the last sample, which keeps its time
		e.samples = e.samples[:n-1]
	}
	if n := len(e.samples); n > 0 {
		next.secs, next.admitted = e.samples[n-1].sum(next)
	}
	e.samples = append(e.samples, next)
	i := 0
	for i < len(e.samples)-minObserved && now.Sub(e.samples[i].at) > window {
		i++
	}
	e.samples = e.samples[i:]
}

// reset forgets what was observed.
func (e *estimator) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.samples = nil
}

// observed returns the line's pace over the window in admissions per second, or 0 when the window saw
// no admission from a line.
func (e *estimator) observed() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.samples) == 0 {
		return 0
	}
	return pace(e.samples[0], e.samples[len(e.samples)-1])
}

// sum returns the sums of the spans up to next, the sample after s.
func (s sample) sum(next sample) (secs float64, admitted int64) {
	secs, admitted = s.secs, s.admitted
	if s.lined && next.lined {
		secs += next.at.Sub(s.at).Seconds()
		admitted += max(0, next.total-s.total)
	}
	return secs, admitted
}

// pace is how fast a line moved between two of its samples: the admissions of the spans that began
// and ended with visitors waiting in a room that was admitting, per second of those spans; 0 when
// there were none. The other spans show how fast visitors arrived, or how long the room held them,
// not how fast it lets them in: a quiet room admits each arrival at once, and the crowd that forms a
// line after it moves at the room's pace, not at the quiet's; a line moves after a pause as it did
// before.
func pace(first, last sample) float64 {
	secs, admitted := last.secs-first.secs, last.admitted-first.admitted
	if secs <= 0 || admitted <= 0 {
		return 0
	}
	return float64(admitted) / secs
}

// estimate is the wait for the visitor at position, from the rate observed recently (see wait).
func (e *estimator) estimate(now time.Time, position int64, cfg Config) (d time.Duration, bound bool) {
	return wait(e.observed(), position, cfg, now)
}

// configRate is the admissions a second the config guarantees while the line is long: its rate, or the
// capacity renewed every session_ttl when that is slower (every admitted visitor staying the whole
// session, the slowest they can be let in), when capped says so; +Inf for a room with neither.
func configRate(cfg Config) (rate float64, capped bool) {
	rate = math.Inf(1)
	if cfg.Rate != nil {
		rate = float64(cfg.Rate.Admits) / time.Duration(cfg.Rate.Per).Seconds()
	}
	if cfg.Capacity > 0 {
		if c := float64(cfg.Capacity) / time.Duration(cfg.SessionTTL).Seconds(); c <= rate {
			rate, capped = c, true
		}
	}
	return rate, capped
}

// longest is the most the visitor at position can wait in a room whose capacity sets its pace. Every
// slot may have been taken just now, and each is held at most grace + session_ttl (an admission
// collected at the last moment, then kept to its end); the line goes in in waves of a capacity each,
// each wave taking up to one pass of the rate's window per rate's worth of visitors to let in. So a
// visitor among the first capacity in line may wait a whole session, not a share of it.
func longest(position int64, cfg Config) float64 {
	hold := time.Duration(cfg.Grace + cfg.SessionTTL).Seconds()
	if r := cfg.Rate; r != nil {
		hold += math.Ceil(float64(cfg.Capacity)/float64(r.Admits)) * time.Duration(r.Per).Seconds()
	}
	return math.Ceil(float64(position)/float64(cfg.Capacity)) * hold
}

// wait is the wait at position for a line that moves at the observed rate of admissions a second, or
// at the rate the config guarantees when that is 0, plus the time until the room opens; bound says the
// wait is the most it can be (see View.ETAUpperBound and longest): the capacity sets the pace and the
// line has not been seen moving, or the pace seen would tell more than that most. A line never moves
// faster than the config's rate, and one with no capacity to wait for moves at exactly that rate: its
// steps admit whenever the rate's window allows, so the rate says its wait better than any pace
// measured over the bursts in which they let visitors in.
func wait(observed float64, position int64, cfg Config, now time.Time) (d time.Duration, bound bool) {
	rate := observed
	if r := cfg.Rate; r != nil {
		if limit := float64(r.Admits) / time.Duration(r.Per).Seconds(); cfg.Capacity == 0 || rate > limit {
			rate = limit
		}
	}
	if rate == 0 {
		rate, bound = configRate(cfg)
	}
	// In float seconds, bounded before it becomes a Duration: a rate near zero must not turn into a
	// conversion out of int64's range.
	secs := float64(position) / rate
	if cfg.Capacity > 0 && cfg.Mode != ModePassthrough {
		// The most the wait can be, whatever pace the line was seen at: a pace measured over a line
		// still finding its rhythm must not tell more than that.
		if most := longest(position, cfg); bound || secs > most {
			secs, bound = most, true
		}
	}
	if cfg.OpensAt != nil && cfg.OpensAt.After(now) {
		secs += cfg.OpensAt.Sub(now).Seconds()
	}
	if !(secs >= 0 && secs < maxETA.Seconds()) {
		return maxETA, bound
	}
	return time.Duration(secs * float64(time.Second)), bound
}
