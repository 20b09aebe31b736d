package room

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Pacing of pushed updates. A waiting visitor's position changes with every admission; pushing each
// change to every stream would cost O(waiting) per admission, so changes are coalesced into at most
// one refresh per pushEvery, and a refresh is forced every refreshEvery so that ETAs stay current.
const (
	pushEvery    = time.Second
	refreshEvery = 5 * time.Second
	configEvery  = 5 * time.Second
	touchBatch   = 1000
)

// stillPollMax is the longest a gate waits between steps while its room stays still (nobody admitted
// or expiring, nothing due with time): an empty room costs a step every 8 s instead of every second.
const stillPollMax = 8 * time.Second

// gate is one room's admission loop, push hub and wait estimator.
type gate struct {
	s     *Service
	id    string
	wakeC chan struct{}
	hub   *hub
	eta   estimator

	cfgMu   sync.Mutex
	cfg     *Config
	cfgRead time.Time

	still atomic.Bool // the loop found nothing to do and waits longer (see stillPollMax)

	cancel context.CancelFunc
}

func newGate(s *Service, id string) *gate {
	return &gate{s: s, id: id, wakeC: make(chan struct{}, 1), hub: newHub(), cancel: func() {}}
}

func (g *gate) start(parent context.Context, wg *sync.WaitGroup) {
	ctx, cancel := context.WithCancel(parent)
	g.cancel = cancel
	wg.Go(func() { g.loop(ctx) })
	wg.Go(func() { g.pulse(ctx) })
	if w, ok := g.s.store.(Watcher); ok {
		wg.Go(func() { g.watch(ctx, w) })
	}
}

// watch forwards changes made by other instances to this instance's subscribers, resubscribing after
// a failure.
func (g *gate) watch(ctx context.Context, w Watcher) {
	for ctx.Err() == nil {
		for visitors := range w.Watch(ctx, g.id) {
			for _, v := range visitors {
				if v == Everyone {
					g.hub.broadcast()
					continue
				}
				g.hub.notify(v)
			}
			g.hub.markDirty()
			g.wakeIfStill()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (g *gate) stop() {
	g.cancel()
	g.hub.closeAll()
}

// wakeIfStill wakes a loop that waits longer because its room was still: something changed, so its
// steps may have work again. A busy loop is left alone, so that a crowd's joins cost no extra steps.
func (g *gate) wakeIfStill() {
	if g.still.Load() {
		g.wake()
	}
}

// wake asks the loop for a step now; wakes arriving during a step coalesce into one more step.
func (g *gate) wake() {
	select {
	case g.wakeC <- struct{}{}:
	default:
	}
}

func (g *gate) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures, still := 0, 0
	for {
		t, err := g.tick(ctx)
		delay := g.s.opts.Poll
		if err == nil && !t.More && t.Next.IsZero() && len(t.Admitted)+len(t.Expired)+len(t.Idle) == 0 {
			// Nothing moved and nothing is due with time: the room is empty (anyone in it has a
			// deadline), and only a join can make work. Joins here wake a still loop, as do other
			// instances' changes through watch, so the poll is a safety net and slows down, up to
			// stillPollMax, while the room stays still.
			still++
			delay = min(delay<<min(still-1, 8), max(delay, stillPollMax))
		} else {
			still = 0
		}
		g.still.Store(still > 0)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrNotFound):
			g.s.forget(g) // deleted, perhaps by another instance
			return
		case err != nil:
			failures++
			if failures == 1 || failures%60 == 0 {
				g.s.log.Warn("admission step failed", "room", g.id, "err", err, "failures", failures)
			}
		case t.More:
			delay = 0
		case !t.Next.IsZero():
			failures = 0
			// A millisecond of slack so the step runs after the deadline on the store's clock too.
			delay = min(delay, max(0, t.Next.Sub(g.s.opts.Clock())+time.Millisecond))
		default:
			failures = 0
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return
		case <-g.wakeC:
		case <-timer.C:
		}
	}
}

func (g *gate) tick(ctx context.Context) (Tick, error) {
	t, err := g.s.store.Admit(ctx, g.id, g.s.opts.Batch)
	if err != nil {
		return t, err
	}
	now := g.s.opts.Clock()
	g.eta.observe(now, t.AdmittedTotal, t.Waiting > 0 && !g.holds(ctx, now))
	obs := g.s.opts.Observer
	if n := len(t.Admitted); n > 0 {
		obs.Admitted(g.id, n)
	}
	if len(t.Expired)+len(t.Idle) > 0 {
		obs.Expired(g.id, len(t.Expired), len(t.Idle))
	}
	for _, a := range t.Admitted {
		g.hub.notify(a.Visitor)
	}
	for _, v := range t.Expired {
		g.hub.notify(v)
	}
	for _, v := range t.Idle {
		g.hub.notify(v)
	}
	if len(t.Admitted)+len(t.Expired)+len(t.Idle) > 0 {
		g.hub.markDirty()
	}
	return t, nil
}

// pulse paces room-wide refreshes of subscribers and keeps their presence alive.
func (g *gate) pulse(ctx context.Context) {
	ticker := time.NewTicker(pushEvery)
	defer ticker.Stop()
	var lastRefresh, lastTouch time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			if g.hub.takeDirty() || now.Sub(lastRefresh) >= refreshEvery {
				g.hub.broadcast()
				lastRefresh = now
			}
			if !g.hub.streaming() {
				continue // no presence to keep, so no config to read: an empty room costs no read here
			}
			if cfg, err := g.config(ctx); err == nil && now.Sub(lastTouch) >= time.Duration(cfg.IdleTimeout)/3 {
				g.touch(ctx)
				lastTouch = now
			}
		}
	}
}

// touch records presence for every visitor streaming from this instance, in batches.
func (g *gate) touch(ctx context.Context) {
	visitors := g.hub.visitors()
	for len(visitors) > 0 {
		n := min(len(visitors), touchBatch)
		if err := g.s.store.Touch(ctx, g.id, visitors[:n]); err != nil {
			g.s.log.Warn("presence update failed", "room", g.id, "err", err)
			return
		}
		visitors = visitors[n:]
	}
}

// holds reports whether the room lets nobody in at now by its config (paused, or before its opening):
// a line that waits for the operator or the opening says nothing of the room's pace. A config that
// cannot be read is taken to admit, as it almost always does.
func (g *gate) holds(ctx context.Context, now time.Time) bool {
	cfg, err := g.config(ctx)
	return err == nil && cfg.Holds(now)
}

// config returns the room's config, re-read at most every few seconds since it only feeds estimates
// and pacing, never admission decisions (those read the store's copy inside the atomic step).
func (g *gate) config(ctx context.Context) (Config, error) {
	g.cfgMu.Lock()
	defer g.cfgMu.Unlock()
	now := time.Now()
	if g.cfg != nil && now.Sub(g.cfgRead) < configEvery {
		return *g.cfg, nil
	}
	cfg, err := g.s.store.Room(ctx, g.id)
	if err != nil {
		return Config{}, err
	}
	g.replaceConfig(cfg)
	return cfg, nil
}

func (g *gate) view(ctx context.Context, st Status) View {
	v := View{Status: st}
	if st.State != StateWaiting {
		return v
	}
	cfg, err := g.config(ctx)
	if err != nil {
		return v
	}
	now := g.s.opts.Clock()
	v.ETA, v.ETAUpperBound = g.eta.estimate(now, st.Position, cfg)
	v.Paused, v.Message = cfg.Stopped(), cfg.message()
	if cfg.OpensAt != nil && now.Before(*cfg.OpensAt) {
		v.OpensAt = *cfg.OpensAt
	}
	return v
}

// setConfig takes a config this instance has just written, so that its views follow it at once rather
// than at the next read.
func (g *gate) setConfig(cfg Config) {
	g.cfgMu.Lock()
	defer g.cfgMu.Unlock()
	g.replaceConfig(cfg)
}

// replaceConfig caches cfg as the room's config. When it changes how fast the line can move, the pace
// observed under the old one no longer holds: estimates start afresh from the new config, which says
// the wait exactly for a rate, and at most for a capacity, until the line is seen moving again.
func (g *gate) replaceConfig(cfg Config) {
	if g.cfg != nil && !samePace(*g.cfg, cfg) {
		g.eta.reset()
	}
	g.eta.setWindow(windowOf(cfg))
	g.cfg, g.cfgRead = &cfg, time.Now()
}

// samePace reports whether a and b let a line in alike: the same capacity, grace, session length,
// rate and mode.
func samePace(a, b Config) bool {
	sameRate := (a.Rate == nil) == (b.Rate == nil) && (a.Rate == nil || *a.Rate == *b.Rate)
	return sameRate && a.Capacity == b.Capacity && a.Grace == b.Grace && a.SessionTTL == b.SessionTTL && a.Mode == b.Mode
}

func (s *Service) forget(g *gate) {
	s.mu.Lock()
	if s.gates[g.id] == g {
		delete(s.gates, g.id)
	}
	s.mu.Unlock()
	g.hub.closeAll()
	s.opts.Observer.Gone(g.id)
}

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
