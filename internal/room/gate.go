package room

import (
	"context"
	"errors"
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

	// dropClosed says the last step found the drop the room follows closed (see Tick.DropClosed), and
	// dropOpens that drop's opening still to come (Unix ms, 0 for none; see Tick.DropOpens): the room
	// admits nobody, and its waiting visitors' views say why. window is that drop's opening and
	// closing as this instance last told the store, so that a new one steps the room at once.
	dropClosed atomic.Bool
	dropOpens  atomic.Int64
	window     atomic.Value // [2]int64: Unix ms, 0 for none

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
					g.hub.refreshAll()
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
	opens := msOr0(t.DropOpens)
	if g.dropClosed.Swap(t.DropClosed) != t.DropClosed || g.dropOpens.Swap(opens) != opens {
		// The drop the room follows closed, opened, or moved its opening: every waiting visitor hears it
		// at once.
		g.hub.broadcast()
	}
	// A line held for its drop, or by its config, says nothing of its pace: its wait counts from then.
	g.eta.observe(now, t.AdmittedTotal, t.Waiting > 0 && !t.DropClosed && opens == 0 && !g.holds(ctx, now))
	g.eta.seat(t.Free)
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
	if st.State != StateWaiting && st.State != StateSoldOut {
		return v
	}
	cfg, err := g.config(ctx)
	if err != nil {
		return v
	}
	if st.State == StateSoldOut { // what the operator tells a sold-out line: a second batch, say
		v.Message = cfg.message()
		return v
	}
	now := g.s.opts.Clock()
	v.ETA, v.ETAUpperBound = g.eta.estimate(now, st.Position, cfg)
	v.Paused, v.Message = cfg.Stopped(), cfg.message()
	v.DropClosed = g.dropClosed.Load()
	if ms := g.dropOpens.Load(); ms > 0 && now.Before(time.UnixMilli(ms)) {
		v.DropOpensAt = time.UnixMilli(ms).UTC()
	}
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
	g.eta.configure(cfg)
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
