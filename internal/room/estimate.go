package room

import (
	"math"
	"sort"
	"sync"
	"time"
)

// estimator turns how the line recently moved into waiting times. It takes the line's pace two ways
// and tells the slower (see observed): over time, the admissions made while visitors waited per second
// they waited; and over the room's slots, the time the line took to let in a capacity's worth of
// visitors, which in a full room is how long a slot is held. Each runs fast in a case of its own: the
// first just after a wave of sessions ends together, the second while only the short stays of the
// first visitors have ended; a wait told too short disappoints where one told long does not. Each
// visitor is also told at least the wait until the slot it will take comes free (see slot).
type estimator struct {
	mu       sync.Mutex
	window   time.Duration // how far back the pace is taken (see windowOf); 0 is etaWindow
	capacity int64         // the room's slots (see turnover); 0 for none
	samples  []sample

	// What the samples say, as of the last observe.
	paced float64 // the line's pace in admissions a second (see observed); 0 when not seen moving
	turn  float64 // the mean seconds a capacity's worth of admissions took; 0 when unknown

	// free is how many slots the last step left free, when seated says it is known (see seat): they go
	// to the first in line as soon as the room admits.
	free   int64
	seated bool
}

// sample is what one admission step left: when, the room's admissions so far, and whether visitors
// then waited in a room that was admitting; with the sums of the spans (see sample.sum) and of the
// turnovers (see estimator.turnover) from the first sample observed up to it, so that the pace
// between any two samples costs no walk between them.
type sample struct {
	at       time.Time
	total    int64
	lined    bool
	secs     float64
	admitted int64
	turns    float64
	turned   int64
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

// configure sets what the estimates of a room with cfg take into account.
func (e *estimator) configure(cfg Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.window = windowOf(cfg)
	e.capacity = int64(cfg.Capacity)
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
	if n := len(e.samples); n > 0 && total < e.samples[n-1].total {
		// Fewer admissions than before: the room was restored from a backup, and what was observed
		// before no longer lines up with its count.
		e.samples = nil
	}
	if n := len(e.samples); n > 0 && now.Sub(e.samples[n-1].at) < etaSpacing {
		next.at = e.samples[n-1].at // the step joins the last sample, which keeps its time
		e.samples = e.samples[:n-1]
	}
	if n := len(e.samples); n > 0 {
		prev := e.samples[n-1]
		next.secs, next.admitted = prev.sum(next)
		next.turns, next.turned = prev.turns, prev.turned
		if prev.lined && next.lined && next.total > prev.total {
			secs, turned := e.turnover(prev.total+1, next.total, next.at)
			next.turns += secs
			next.turned += turned
		}
	}
	e.samples = append(e.samples, next)
	i := 0
	for i < len(e.samples)-minObserved && now.Sub(e.samples[i].at) > window {
		i++
	}
	e.samples = e.samples[i:]
	e.settle()
}

// seat notes how many slots a step left free (see Tick.Free). A room that holds its line (paused,
// before its opening or its drop's) may have slots free: the first in line take them the moment it
// admits, and the wait of those behind them is a hold shorter than in a full room.
func (e *estimator) seat(free int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.free, e.seated = free, true
}

// freeSlots returns the free slots seat last noted, -1 before any.
func (e *estimator) freeSlots() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.seated {
		return -1
	}
	return e.free
}

// made returns the index of the sample whose step made admission n, or -1 when no sample observed
// says when it was made.
func (e *estimator) made(n int64) int {
	i := sort.Search(len(e.samples), func(i int) bool { return e.samples[i].total >= n })
	if i == 0 || i == len(e.samples) {
		return -1
	}
	return i
}

// turnover sums, over the admissions lo to hi that a step made from a line at at, the seconds since
// the admission a capacity before each, and counts those it knows that admission of. In a full room an admission takes
// a slot as one ends, so a capacity's worth of admissions takes as long as a slot is held: the stay of
// the visitors the line waits for, which a window of time sees only once the stays have ended.
func (e *estimator) turnover(lo, hi int64, at time.Time) (secs float64, turned int64) {
	if e.capacity == 0 || len(e.samples) == 0 {
		return 0, 0
	}
	from := max(lo-e.capacity, e.samples[0].total+1)
	to := min(hi-e.capacity, e.samples[len(e.samples)-1].total)
	if from > to {
		return 0, 0
	}
	for i := e.made(from); i > 0 && i < len(e.samples) && e.samples[i-1].total < to; i++ {
		k := min(e.samples[i].total, to) - max(e.samples[i-1].total, from-1)
		secs += float64(k) * at.Sub(e.samples[i].at).Seconds()
		turned += k
	}
	return secs, turned
}

// settle works out what the samples say of the line's pace.
func (e *estimator) settle() {
	s := e.samples
	first, last := s[0], s[len(s)-1]
	// Over time, from the first step that let visitors in from a line, when a later one did too: the
	// wait before it shows how long the slots were held before the line formed, not how fast it moves.
	from := first
	i := sort.Search(len(s), func(i int) bool { return s[i].admitted > first.admitted })
	if i < len(s) && last.admitted > s[i].admitted {
		from = s[i]
	}
	e.paced = pace(from, last)
	e.turn = 0
	if n := last.turned - first.turned; n > 0 {
		e.turn = (last.turns - first.turns) / float64(n)
		if e.paced > 0 {
			e.paced = min(e.paced, float64(e.capacity)/e.turn)
		}
	}
}

// reset forgets what was observed.
func (e *estimator) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.samples, e.paced, e.turn = nil, 0, 0
}

// observed returns the line's pace in admissions per second, or 0 when the window saw no admission
// from a line: the slower of its pace over time and over its slots. A line that stops moving slows
// the first, which counts the time up to the last step.
func (e *estimator) observed() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.paced
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

// estimate is the wait for the visitor at position, from the pace observed recently and from the slot
// it will take (see wait and slot).
func (e *estimator) estimate(now time.Time, position int64, cfg Config) (d time.Duration, bound bool) {
	e.mu.Lock()
	observed, taken := e.paced, e.slot(position)
	held := e.turn
	var free int64
	if e.seated && cfg.Capacity > 0 {
		free = min(e.free, int64(cfg.Capacity))
	}
	e.mu.Unlock()
	return wait(observed, position, free, cfg, now, taken, held)
}

// slot returns, under e.mu, when the admission was made whose slot the visitor at position will take.
// In a full room the line goes in as slots come free, the first to be taken the first to free, and the
// slot a visitor takes is the one the admission a whole number of capacities before it took. It is the
// zero time when no sample says when that admission was made.
func (e *estimator) slot(position int64) time.Time {
	if e.capacity == 0 || len(e.samples) == 0 || position < 1 {
		return time.Time{}
	}
	k := (position + e.capacity - 1) / e.capacity
	if i := e.made(e.samples[len(e.samples)-1].total + position - k*e.capacity); i > 0 {
		return e.samples[i].at
	}
	return time.Time{}
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

// hold is the longest a slot of a room whose capacity sets its pace can keep the line waiting: held
// grace + session_ttl (an admission collected at the last moment, then kept to its end), then one pass
// of the rate's window per rate's worth of visitors to let in again.
func hold(cfg Config) float64 {
	h := time.Duration(cfg.Grace + cfg.SessionTTL).Seconds()
	if r := cfg.Rate; r != nil {
		h += math.Ceil(float64(cfg.Capacity)/float64(r.Admits)) * time.Duration(r.Per).Seconds()
	}
	return h
}

// longest is the most the visitor at position can wait in a room whose capacity sets its pace, its slot
// taken (see estimator.slot) at taken, or when that is not known just now, with free slots free now.
// The line goes in in waves of a capacity each, each wave's slots freed at the latest a hold (see hold)
// after they were taken; so a visitor among the first capacity in line may wait a whole session, not a
// share of it, unless its slot was taken a while ago, or is free: then the visitor a capacity ahead of
// it (or itself) takes a free slot when the room admits, paced only by the rate, and its wave is a hold
// shorter.
func longest(position, free int64, cfg Config, now, taken time.Time) float64 {
	h := hold(cfg)
	waves := math.Ceil(float64(position) / float64(cfg.Capacity))
	if first := (position-1)%int64(cfg.Capacity) + 1; position >= 1 && first <= free {
		most := (waves - 1) * h
		if r := cfg.Rate; r != nil {
			most += math.Ceil(float64(first)/float64(r.Admits)) * time.Duration(r.Per).Seconds()
		}
		return most
	}
	most := waves * h
	// The step that took the slot may have been up to etaSpacing after its sample's time.
	if age := now.Sub(taken).Seconds() - etaSpacing.Seconds(); !taken.IsZero() && age > 0 && age < h {
		most -= age
	}
	return most
}

// wait is the wait at position for a line that moves at the observed rate of admissions a second, or
// at the rate the config guarantees when that is 0, and at least until the slot it will take (taken at
// taken, see estimator.slot) comes free after held seconds, plus the time until the room opens; bound
// says the wait is the most it can be (see View.ETAUpperBound and longest): the capacity sets the pace
// and the line has not been seen moving, or the pace seen would tell more than that most. A line never moves
// faster than the config's rate, and one with no capacity to wait for moves at exactly that rate: its
// steps admit whenever the rate's window allows, so the rate says its wait better than any pace
// measured over the bursts in which they let visitors in.
func wait(observed float64, position, free int64, cfg Config, now, taken time.Time, held float64) (d time.Duration, bound bool) {
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
	if cfg.Capacity > 0 && !bound && !taken.IsZero() && held > 0 {
		// At least until the slot it will take comes free, held as long as slots were seen held: in a
		// line that goes in in waves, the wait until its wave, not its share of the waves' pace.
		secs = max(secs, taken.Sub(now).Seconds()+math.Ceil(float64(position)/float64(cfg.Capacity))*held)
	}
	if cfg.Capacity > 0 && cfg.Mode != ModePassthrough {
		// The most the wait can be, whatever pace the line was seen at: a pace measured over a line
		// still finding its rhythm must not tell more than that.
		if most := longest(position, free, cfg, now, taken); bound || secs > most {
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
