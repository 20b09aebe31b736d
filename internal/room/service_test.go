package room_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
)

// recorder wraps a store and records every admission. Steps may run at once (the gate loop, and a
// join near the front), so their results can arrive here out of order; the order the store made them
// in is the admission sequence at the end of each admission id.
type recorder struct {
	room.Store
	mu       sync.Mutex
	admitted []room.Admitted
}

func (r *recorder) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	t, err := r.Store.Admit(ctx, id, max)
	r.mu.Lock()
	r.admitted = append(r.admitted, t.Admitted...)
	r.mu.Unlock()
	return t, err
}

// order returns the admitted visitors in the order the store admitted them.
func (r *recorder) order() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := func(a room.Admitted) int {
		n, _ := strconv.Atoi(a.Admission.ID[strings.LastIndexByte(a.Admission.ID, '.')+1:])
		return n
	}
	sorted := slices.Clone(r.admitted)
	slices.SortFunc(sorted, func(a, b room.Admitted) int { return seq(a) - seq(b) })
	out := make([]string, len(sorted))
	for i, a := range sorted {
		out[i] = a.Visitor
	}
	return out
}

func config(capacity int) room.Config {
	return room.Config{Capacity: capacity, SessionTTL: rushgate.Duration(time.Minute), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(time.Minute)}
}

// TestServiceConcurrency runs the real gate loop against 2,000 visitor goroutines that join, poll until
// admitted and release: active never exceeds capacity, admission follows join order, nobody twice.
func TestServiceConcurrency(t *testing.T) {
	const visitors, capacity = 2000, 50
	rec := &recorder{Store: memstore.NewRooms(memstore.Options{})}
	svc := room.NewService(rec, room.Options{Poll: 10 * time.Millisecond})
	defer svc.Stop()
	ctx := context.Background()
	if err := svc.Put(ctx, "sale", config(capacity)); err != nil {
		t.Fatal(err)
	}
	var (
		joinMu    sync.Mutex
		joinOrder []string
		maxActive atomic.Int64
		wg        sync.WaitGroup
	)
	stopSampler := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampler:
				return
			default:
			}
			_, st, err := svc.Get(ctx, "sale")
			if err == nil && st.Active > maxActive.Load() {
				maxActive.Store(st.Active)
			}
		}
	}()
	for i := range visitors {
		v := fmt.Sprintf("v%04d", i)
		wg.Go(func() {
			joinMu.Lock()
			view, err := svc.Join(ctx, "sale", room.Entrant{Visitor: v})
			joinOrder = append(joinOrder, v)
			joinMu.Unlock()
			for err == nil && view.State != room.StateAdmitted {
				time.Sleep(time.Millisecond) // a polling visitor
				view, err = svc.Status(ctx, "sale", v)
			}
			if err != nil {
				t.Error(err)
				return
			}
			if err := svc.Release(ctx, "sale", v, view.Admission.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(stopSampler)
	<-sampled
	if m := maxActive.Load(); m > capacity {
		t.Fatalf("%d active at once, capacity %d", m, capacity)
	}
	if got := rec.order(); !slices.Equal(got, joinOrder) {
		t.Fatalf("admission order differs from join order (%d admitted, %d joined)", len(got), len(joinOrder))
	}
	_, st, _ := svc.Get(ctx, "sale")
	if st.AdmittedTotal != visitors || st.Waiting != 0 || st.Active != 0 {
		t.Fatalf("final stats %+v", st)
	}
}

func manual(t *testing.T) (*room.Service, *storetest.Clock) {
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	svc := room.NewService(memstore.NewRooms(memstore.Options{Clock: c.Now}), room.Options{Clock: c.Now, Manual: true})
	t.Cleanup(svc.Stop)
	return svc, c
}

func TestETA(t *testing.T) {
	svc, c := manual(t)
	ctx := context.Background()
	cfg := config(0)
	cfg.Rate = &room.Rate{Admits: 10, Per: rushgate.Duration(time.Minute)}
	cfg.IdleTimeout = rushgate.Duration(time.Hour)
	_ = svc.Put(ctx, "r", cfg)
	for i := range 40 {
		_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: fmt.Sprintf("v%02d", i)})
	}
	// Before any admission is observed, the configured rate (10/min) predicts the wait.
	v, _ := svc.Status(ctx, "r", "v29")
	if v.ETA != 3*time.Minute {
		t.Fatalf("ETA at 30 from config = %v, want 3m", v.ETA)
	}
	// Observed: 10 admitted now, 10 a minute later: 10/min again, but measured.
	_, _ = svc.Tick(ctx, "r")
	c.Advance(time.Minute)
	_, _ = svc.Tick(ctx, "r")
	v, _ = svc.Status(ctx, "r", "v39")
	if v.Position != 20 || v.ETA < 110*time.Second || v.ETA > 130*time.Second {
		t.Fatalf("observed ETA at position %d = %v, want ~2m", v.Position, v.ETA)
	}
}

// paced is a room for the ETA tests that lets its line in at ten a second, either by its rate or by a
// capacity of ten whose visitors leave after a second (the config promising no more than ten in ten
// minutes), on a Manual service: second lets a second pass and steps the room, and admitted lists
// who is in.
type paced struct {
	svc      *room.Service
	clock    *storetest.Clock
	cfg      room.Config
	admitted map[string]string // visitor -> admission id
}

func newPaced(t *testing.T, byCapacity, history bool) *paced {
	t.Helper()
	c := storetest.NewClock(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	opts := room.Options{Clock: c.Now, Manual: true}
	if history {
		opts.History = memstore.NewHistory(c.Now)
	}
	svc := room.NewService(memstore.NewRooms(memstore.Options{Clock: c.Now}), opts)
	t.Cleanup(svc.Stop)
	p := &paced{svc: svc, clock: c, cfg: config(0), admitted: map[string]string{}}
	p.cfg.SessionTTL, p.cfg.IdleTimeout = rushgate.Duration(10*time.Minute), rushgate.Duration(time.Hour)
	if byCapacity {
		p.cfg.Capacity = 10
	} else {
		p.cfg.Rate = &room.Rate{Admits: 10, Per: rushgate.Duration(time.Second)}
	}
	p.put(t)
	return p
}

func (p *paced) put(t *testing.T) {
	t.Helper()
	if err := p.svc.Put(context.Background(), "r", p.cfg); err != nil {
		t.Fatal(err)
	}
}

func (p *paced) join(prefix string, n int) {
	for i := range n {
		_, _ = p.svc.Join(context.Background(), "r", room.Entrant{Visitor: fmt.Sprintf("%s%03d", prefix, i)})
	}
}

// step runs one admission step and notes who it let in.
func (p *paced) step(t *testing.T) room.Tick {
	t.Helper()
	tk, err := p.svc.Tick(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tk.Admitted {
		p.admitted[a.Visitor] = a.Admission.ID
	}
	return tk
}

// second lets a second pass: in a room of capacity, everyone in leaves at its end; then a step.
func (p *paced) second(t *testing.T) room.Tick {
	t.Helper()
	p.clock.Advance(time.Second)
	if p.cfg.Capacity > 0 {
		for v, id := range p.admitted {
			if err := p.svc.Release(context.Background(), "r", v, id); err != nil {
				t.Fatal(err)
			}
		}
		clear(p.admitted)
	}
	return p.step(t)
}

// eta checks the wait the last of the crowd is told: about want, an upper bound or not.
func (p *paced) eta(t *testing.T, what string, position int64, want time.Duration, bound bool) {
	t.Helper()
	v, err := p.svc.Status(context.Background(), "r", "v099")
	if err != nil || v.Position != position || v.ETAUpperBound != bound || v.ETA < want-want/10 || v.ETA > want+want/10 {
		t.Fatalf("%s: at %d told %v (upper bound %v), %v; want about %v (%v) at %d", what, v.Position, v.ETA, v.ETAUpperBound, err, want, bound, position)
	}
}

// TestETAFollowsTheLine: a room that admitted a trickle of arrivals at once for a minute, then met a
// crowd, tells the crowd the wait its line's pace sets (10 a second), not one drawn from the trickle's
// (one every 20 s, which made it minutes); a room of capacity, whose config promises less, says the
// most it can be until its line has moved. A pause does not slow the estimates after the resume.
func TestETAFollowsTheLine(t *testing.T) {
	for _, byCapacity := range []bool{false, true} {
		t.Run(map[bool]string{false: "rate", true: "capacity"}[byCapacity], func(t *testing.T) {
			p := newPaced(t, byCapacity, false)
			for i := range 4 { // the quiet spell: each arrival let in at once, and gone before the next
				p.join(fmt.Sprintf("early%d-", i), 1)
				if tk := p.step(t); len(tk.Admitted) != 1 || tk.Waiting != 0 {
					t.Fatalf("quiet step: %d admitted, %d waiting", len(tk.Admitted), tk.Waiting)
				}
				p.clock.Advance(19 * time.Second)
				p.second(t)
			}
			p.join("v", 100)
			if tk := p.step(t); len(tk.Admitted) != 10 || tk.Waiting != 90 {
				t.Fatalf("the crowd's first step: %d admitted, %d waiting", len(tk.Admitted), tk.Waiting)
			}
			if byCapacity {
				p.eta(t, "after the quiet spell, before the line moved", 90, 99*time.Minute, true) // 9 waves of 1 + 10 minutes
			} else {
				p.eta(t, "after the quiet spell", 90, 9*time.Second, false)
			}
			for range 3 {
				p.second(t)
			}
			p.eta(t, "moving", 60, 6*time.Second, false)

			p.cfg.Paused = true
			p.put(t)
			for range 30 {
				p.second(t)
			}
			p.cfg.Paused = false
			p.put(t)
			p.second(t)
			p.eta(t, "after a pause", 50, 5*time.Second, false)
		})
	}
}

// TestETAUpperBoundHolds: the most a wait can be, told before the line has moved, holds when every
// admitted visitor keeps the whole session and collects the admission at the last moment of its grace
// (a site that never releases): the first in line wait a whole session, not a share of it ("up to 5
// minutes" at the front of a room of two ten-minute slots was told before, and they waited eleven).
// Once the line moves in such waves, the estimate takes its pace over a session's length.
func TestETAUpperBoundHolds(t *testing.T) {
	svc, c := manual(t)
	ctx := context.Background()
	cfg := config(2)
	cfg.SessionTTL, cfg.Grace, cfg.IdleTimeout = rushgate.Duration(10*time.Minute), rushgate.Duration(time.Minute), rushgate.Duration(time.Hour)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	start := c.Now()
	told := map[string]time.Duration{}
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		view, err := svc.Join(ctx, "r", room.Entrant{Visitor: v})
		if err != nil {
			t.Fatal(err)
		}
		if v >= "c" {
			if !view.ETAUpperBound {
				t.Fatalf("%s at %d told %v, not as the most it can be", v, view.Position, view.ETA)
			}
			told[v] = view.ETA
		}
		_, _ = svc.Tick(ctx, "r")
	}
	admitted := map[string]time.Time{"a": start, "b": start}
	var afterWave room.View // what e, now at the front, is told once the first wave has gone in
	for c.Now().Sub(start) < time.Hour && len(admitted) < 5 {
		c.Advance(time.Second)
		tk, _ := svc.Tick(ctx, "r")
		for _, a := range tk.Admitted {
			admitted[a.Visitor] = c.Now()
		}
		if len(tk.Admitted) > 0 && afterWave.Position == 0 {
			afterWave, _ = svc.Status(ctx, "r", "e")
		}
		for v, at := range admitted { // each collects its admission at the last moment of its grace
			if c.Now().Sub(at) == time.Minute-time.Second {
				_, _ = svc.Status(ctx, "r", v)
			}
		}
	}
	for v, bound := range told {
		waited := admitted[v].Sub(start)
		if waited == 0 || waited > bound {
			t.Errorf("%s waited %v, told at most %v", v, waited, bound)
		}
	}
	if waited := admitted["c"].Sub(start); waited < 10*time.Minute {
		t.Fatalf("c waited %v: the test lets nobody hold a slot for a session", waited)
	}
	// The line moved by a wave of two in eleven minutes: the pace is taken over a session's length,
	// not over the minute in which the wave went in (which told e thirty seconds for eleven minutes).
	if afterWave.Position != 1 || afterWave.ETAUpperBound || afterWave.ETA < 5*time.Minute || afterWave.ETA > 11*time.Minute {
		t.Fatalf("after the first wave e is told %v (upper bound %v) at %d; want 5-11 minutes, an estimate",
			afterWave.ETA, afterWave.ETAUpperBound, afterWave.Position)
	}
}

// TestETAAfterAChangeOfPace: the pace a line showed under one config says nothing once the operator
// changes its rate or capacity: the next estimates follow the new config (the rate's wait, or the most
// a capacity allows) rather than the old pace for a minute, ten times too long after a raise and ten
// times too short after a cut.
func TestETAAfterAChangeOfPace(t *testing.T) {
	p := newPaced(t, false, false)
	p.cfg.Rate = &room.Rate{Admits: 1, Per: rushgate.Duration(time.Second)}
	p.put(t)
	p.join("v", 100)
	p.step(t)
	for range 10 {
		p.second(t)
	}
	p.eta(t, "at one a second", 89, 89*time.Second, false)
	p.cfg.Rate = &room.Rate{Admits: 10, Per: rushgate.Duration(time.Second)}
	p.put(t)
	p.eta(t, "raised to ten a second", 89, 8900*time.Millisecond, false)
	p.second(t)
	p.eta(t, "moving at ten a second", 79, 7900*time.Millisecond, false)

	p.cfg.Rate, p.cfg.Capacity = nil, 10 // now ten at a time, each staying a second
	p.put(t)
	for range 3 {
		p.second(t)
	}
	p.eta(t, "ten at a time", 49, 4900*time.Millisecond, false)
	p.cfg.Capacity = 2
	p.put(t)
	p.eta(t, "cut to two at a time", 49, 25*11*time.Minute, true) // 25 waves of two, each held up to 1 + 10 minutes
}

// TestHistoryETAFollowsTheLine: the console's "wait at the back" takes the line's pace as a visitor's
// ETA does (see TestETAFollowsTheLine): after a quiet minute, a crowd let in at ten a second by a room
// of capacity is told seconds, not minutes.
func TestHistoryETAFollowsTheLine(t *testing.T) {
	p := newPaced(t, true, true)
	ctx := context.Background()
	start := p.clock.Now()
	for i := range 4 { // a quiet minute: each arrival is let in at once
		p.join(fmt.Sprintf("early%d-", i), 1)
		p.step(t)
		p.svc.Sample(ctx)
		p.clock.Advance(19 * time.Second)
		p.second(t)
	}
	p.join("v", 100)
	p.step(t)
	for range 2 {
		p.svc.Sample(ctx)
		p.second(t)
	}
	p.svc.Sample(ctx)
	points, err := p.svc.History(ctx, "r", start)
	if err != nil || len(points) == 0 {
		t.Fatalf("History: %d points, %v", len(points), err)
	}
	last := points[len(points)-1]
	if last.Waiting != 70 || last.ETABack < 6.3 || last.ETABack > 7.7 || last.ETABackBound {
		t.Fatalf("the wait at the back of 70 in a line moving at 10 a second: %.1f s (bound %v), waiting %d; want about 7 s",
			last.ETABack, last.ETABackBound, last.Waiting)
	}
}

// closed reports whether a subscription's channel was closed (a room-wide refresh) by now.
func closed(changed <-chan struct{}) bool {
	select {
	case <-changed:
		return true
	default:
		return false
	}
}

// twoInLine makes room r of capacity 1 on a manual service, with visitors a and b in its line and b
// subscribed, for tests of what the line is told.
func twoInLine(t *testing.T) (*room.Service, room.Config, *room.Subscription) {
	t.Helper()
	svc, _ := manual(t)
	ctx := context.Background()
	cfg := config(1)
	_ = svc.Put(ctx, "r", cfg)
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "a"})
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "b"})
	sub, err := svc.Subscribe(ctx, "r", "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return svc, cfg, sub
}

// TestPausedLineIsTold: a visitor waiting in a room its operator pauses, or sets to queue all with no
// opening, is told so, at once (the room's subscribers are refreshed), and no longer once it resumes. The view said nothing of a pause:
// a paused line showed its visitors a wait counted as if it moved.
func TestPausedLineIsTold(t *testing.T) {
	svc, cfg, sub := twoInLine(t)
	ctx := context.Background()
	if v, _ := svc.Status(ctx, "r", "b"); v.Paused {
		t.Fatal("a running room's view says paused")
	}
	for _, stop := range []struct {
		paused bool
		mode   room.Mode
	}{{true, room.ModeFIFO}, {false, room.ModeFIFO}, {false, room.ModeQueueAll}, {false, room.ModeFIFO}} {
		paused := stop.paused || stop.mode == room.ModeQueueAll // queueing all with no opening set
		changed := sub.Changed()
		cfg.Paused, cfg.Mode = stop.paused, stop.mode
		if err := svc.Put(ctx, "r", cfg); err != nil {
			t.Fatal(err)
		}
		if !closed(changed) {
			t.Fatalf("paused %v: the line's subscribers were not refreshed", paused)
		}
		if v, _ := svc.Status(ctx, "r", "b"); v.Paused != paused || v.State != room.StateWaiting {
			t.Fatalf("paused %v: the view is %+v", paused, v)
		}
	}
}

// TestMessageIsTold: the room's word to its line is in every waiting visitor's view, and a change of
// it refreshes the line at once; one admitted is not shown it.
func TestMessageIsTold(t *testing.T) {
	svc, cfg, sub := twoInLine(t)
	ctx := context.Background()
	for _, msg := range []string{"The standing tickets are gone.", "Seats remain.", ""} {
		changed := sub.Changed()
		cfg.Page = &room.Page{Title: "Concert", Message: msg}
		if err := svc.Put(ctx, "r", cfg); err != nil {
			t.Fatal(err)
		}
		if !closed(changed) {
			t.Fatalf("message %q: the line's subscribers were not refreshed", msg)
		}
		if v, _ := svc.Status(ctx, "r", "b"); v.Message != msg || v.State != room.StateWaiting {
			t.Fatalf("message %q: the view is %+v", msg, v)
		}
	}
	cfg.Page.Message = "Thank you for waiting."
	_ = svc.Put(ctx, "r", cfg)
	_, _ = svc.Tick(ctx, "r")
	if v, _ := svc.Status(ctx, "r", "a"); v.State != room.StateAdmitted || v.Message != "" {
		t.Fatalf("the admitted visitor's view: %+v", v)
	}
	// A new title alone, which the page shows from its load, leaves the line as it is.
	changed := sub.Changed()
	cfg.Page.Title = "Concert, second date"
	_ = svc.Put(ctx, "r", cfg)
	if closed(changed) {
		t.Fatal("a new title refreshed the whole line")
	}
}

// TestOpeningIsTold: a visitor who joins before a room's opening is told when it opens, since its place
// until then is a draw that later arrivals reshuffle; the line hears at once of an opening moved, and
// once the opening has passed, the view no longer carries it.
func TestOpeningIsTold(t *testing.T) {
	svc, c := manual(t)
	ctx := context.Background()
	cfg := config(1)
	opens := c.Now().Add(time.Hour)
	cfg.OpensAt = &opens
	_ = svc.Put(ctx, "r", cfg)
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "a"})
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "b"})
	if v, _ := svc.Status(ctx, "r", "b"); v.State != room.StateWaiting || !v.OpensAt.Equal(opens) {
		t.Fatalf("before the opening: %+v", v)
	}
	sub, _ := svc.Subscribe(ctx, "r", "b")
	defer sub.Close()
	changed := sub.Changed()
	sooner := opens.Add(-30 * time.Minute)
	cfg.OpensAt = &sooner
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	if !closed(changed) {
		t.Fatal("the opening moved and the line's subscribers were not refreshed")
	}
	if v, _ := svc.Status(ctx, "r", "b"); !v.OpensAt.Equal(sooner) {
		t.Fatalf("after the opening moved: %+v", v)
	}
	c.Advance(31 * time.Minute)
	_, _ = svc.Tick(ctx, "r")
	for _, id := range []string{"a", "b"} {
		if v, _ := svc.Status(ctx, "r", id); !v.OpensAt.IsZero() {
			t.Fatalf("%s after the opening: %+v", id, v)
		}
	}
}

func TestSubscriptionPushesAdmission(t *testing.T) {
	svc, _ := manual(t)
	ctx := context.Background()
	_ = svc.Put(ctx, "r", config(1))
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "a"})
	_, _ = svc.Join(ctx, "r", room.Entrant{Visitor: "b"})
	subA, _ := svc.Subscribe(ctx, "r", "a")
	subB, _ := svc.Subscribe(ctx, "r", "b")
	defer subB.Close()
	changed := subB.Changed()
	_, _ = svc.Tick(ctx, "r")
	select {
	case <-subA.Personal():
	default:
		t.Fatal("admitted visitor was not pushed")
	}
	select {
	case <-subB.Personal():
		t.Fatal("b was pushed though its own state did not change")
	case <-changed:
		t.Fatal("room-wide refresh before the pacing broadcast")
	default:
	}
	svc.Broadcast("r")
	<-changed
	subA.Close()
	subA.Close()
	if err := svc.Delete(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subB.Done():
	case <-time.After(time.Second):
		t.Fatal("deleting the room did not end its subscriptions")
	}
	if _, err := svc.Subscribe(ctx, "r", "b"); err == nil {
		t.Fatal("subscribed to a deleted room")
	}
}

// TestChangesToEveryoneStartAnEpoch: what changes every visitor's view at once (a new message, a
// link, a sell-out) starts an epoch, so that subscribers which pace their refreshes read it all the
// same; the paced broadcast does not.
func TestChangesToEveryoneStartAnEpoch(t *testing.T) {
	svc, _ := manual(t)
	ctx := context.Background()
	_ = svc.Put(ctx, "r", config(1))
	sub, _ := svc.Subscribe(ctx, "r", "a")
	defer sub.Close()
	changed, epoch := sub.Changed(), sub.Epoch()
	svc.Broadcast("r")
	<-changed
	if sub.Epoch() != epoch {
		t.Fatal("a paced broadcast started an epoch")
	}
	cfg := config(1)
	cfg.Page = &room.Page{Message: "The standing tickets are gone"}
	changed = sub.Changed()
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	<-changed
	if sub.Epoch() == epoch {
		t.Fatal("a new message to the line started no epoch")
	}
	epoch, changed = sub.Epoch(), sub.Changed()
	if err := svc.Put(ctx, "r", cfg); err != nil { // the same again: nothing for the line
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Fatal("a write that changed nothing for the line broadcast")
	default:
	}
	if sub.Epoch() != epoch {
		t.Fatal("a write that changed nothing for the line started an epoch")
	}
}

// countingStats counts the reads of each room's counts.
type countingStats struct {
	room.Store
	storetest.Reads
}

func (c *countingStats) Stats(ctx context.Context, id string) (room.Stats, error) {
	c.Add(id)
	return c.Store.Stats(ctx, id)
}

// TestSamplingQuietsEmptyRooms: the sampler read every room ever created every second. A room with
// nobody in line or admitted is read once a minute, since only a join can move its figures; a join
// wakes it, and a room with a line is read every second.
func TestSamplingQuietsEmptyRooms(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	store := &countingStats{Store: memstore.NewRooms(memstore.Options{Clock: c.Now})}
	hist := memstore.NewHistory(c.Now)
	svc := room.NewService(store, room.Options{Clock: c.Now, Manual: true, History: hist})
	t.Cleanup(svc.Stop)
	ctx := t.Context()
	for _, id := range []string{"empty", "busy"} {
		if err := svc.Put(ctx, id, config(1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Join(ctx, "busy", room.Entrant{Visitor: "a"}); err != nil {
		t.Fatal(err)
	}
	store.Take()
	for range 120 {
		c.Advance(time.Second)
		svc.Sample(ctx)
	}
	if got, want := store.Take(), map[string]int{"empty": 2, "busy": 120}; !maps.Equal(got, want) {
		t.Fatalf("reads over two minutes of samples: %v, want %v", got, want)
	}
	if s, err := hist.Since(ctx, "room:empty", c.Now().Add(-3*time.Minute)); err != nil || len(s) != 2 {
		t.Fatalf("the empty room's samples: %d (%v), want one a minute", len(s), err)
	}
	if _, err := svc.Join(ctx, "empty", room.Entrant{Visitor: "b"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.Advance(time.Second)
		svc.Sample(ctx)
	}
	if got := store.Take(); got["empty"] != 3 {
		t.Fatalf("the room joined was read %d times in three samples, want 3", got["empty"])
	}
}

// countingSteps counts a room store's admission steps.
type countingSteps struct {
	room.Store
	steps atomic.Int64
}

func (c *countingSteps) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	c.steps.Add(1)
	return c.Store.Admit(ctx, id, max)
}

// TestStillRoomSlowsItsGate: a room nobody is in had its admission step run every poll, forever. Its
// gate now slows down while the room stays still, and a join wakes it, so that what comes due after
// the join (here the end of the first visitor's admission, which frees the slot) is seen when due,
// not at the slowed poll.
func TestStillRoomSlowsItsGate(t *testing.T) {
	store := &countingSteps{Store: memstore.NewRooms(memstore.Options{})}
	svc := room.NewService(store, room.Options{Poll: 10 * time.Millisecond})
	defer svc.Stop()
	ctx := t.Context()
	cfg := config(1)
	// Collected or not (the join's own step or the loop's may admit a), a's admission ends in 300 ms.
	cfg.SessionTTL, cfg.Grace = rushgate.Duration(300*time.Millisecond), rushgate.Duration(300*time.Millisecond)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the gate's wait grows past a second meanwhile
	if n := store.steps.Load(); n > 20 {
		t.Fatalf("an empty room's gate stepped %d times in 1.5 s at a 10 ms poll; want it to slow down", n)
	}
	for _, v := range []string{"a", "b"} {
		if _, err := svc.Join(ctx, "r", room.Entrant{Visitor: v}); err != nil {
			t.Fatal(err)
		}
	}
	joined := time.Now()
	for {
		v, err := svc.Status(ctx, "r", "b")
		if err != nil {
			t.Fatal(err)
		}
		if v.State == room.StateAdmitted {
			break
		}
		if time.Since(joined) > 2*time.Second {
			t.Fatal("b was not admitted within 2 s of a's admission ending after 300 ms")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(joined); d > 800*time.Millisecond { // the slowed poll would come after about 1 s
		t.Fatalf("b admitted %v after joining; a's admission ended after 300 ms", d)
	}
}

// goneObserver records the rooms an Observer is told are gone.
type goneObserver struct{ gone chan string }

func (goneObserver) Joined(string)            {}
func (goneObserver) Admitted(string, int)     {}
func (goneObserver) Released(string)          {}
func (goneObserver) Expired(string, int, int) {}
func (o goneObserver) Gone(id string)         { o.gone <- id }

// TestAnotherInstanceForgetsADeletedRoom: a room deleted through one instance is gone for another
// one's metrics too, once that instance's gate finds it gone, so that no instance keeps a deleted
// room's series until it restarts.
func TestAnotherInstanceForgetsADeletedRoom(t *testing.T) {
	store := memstore.NewRooms(memstore.Options{})
	here := room.NewService(store, room.Options{Poll: 10 * time.Millisecond})
	defer here.Stop()
	obs := goneObserver{gone: make(chan string, 4)}
	there := room.NewService(store, room.Options{Poll: 10 * time.Millisecond, Observer: obs})
	defer there.Stop()
	ctx := t.Context()
	if err := here.Put(ctx, "r", config(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := there.Join(ctx, "r", room.Entrant{Visitor: "a"}); err != nil { // its gate runs
		t.Fatal(err)
	}
	if err := here.Delete(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-obs.gone:
		if id != "r" {
			t.Fatalf("gone: %s", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other instance's observer was not told the room is gone")
	}
}

// slowSteps makes every admission step take a while in flight, as a step to Redis does under load, so
// that the steps of joins made at once overlap.
type slowSteps struct{ room.Store }

func (s slowSteps) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Admit(ctx, id, max)
}

// TestJoinsAtOnceAreToldTheyAreIn: visitors who join a room with room for all of them at the same
// moment are each told they are admitted. A join near the front runs an admission step and read its
// visitor's standing again only if that step let someone in; when another join's step (or the gate's)
// let it in first, its own step let in nobody and the join answered "waiting", though it was already
// admitted: on Redis a third of 64 joins at once were told to wait in an empty room.
func TestJoinsAtOnceAreToldTheyAreIn(t *testing.T) {
	svc := room.NewService(slowSteps{memstore.NewRooms(memstore.Options{})}, room.Options{Poll: time.Hour})
	defer svc.Stop()
	ctx := t.Context()
	if err := svc.Put(ctx, "r", config(1000)); err != nil {
		t.Fatal(err)
	}
	const joins = 64
	states := make(chan room.State, joins)
	var wg sync.WaitGroup
	for i := range joins {
		wg.Go(func() {
			v, err := svc.Join(ctx, "r", room.Entrant{Visitor: fmt.Sprintf("v%02d", i)})
			if err != nil {
				t.Error(err)
			}
			states <- v.State
		})
	}
	wg.Wait()
	close(states)
	waiting := 0
	for s := range states {
		if s != room.StateAdmitted {
			waiting++
		}
	}
	if waiting > 0 {
		t.Fatalf("%d of %d joins at once into a room with room for all were told to wait", waiting, joins)
	}
}

// cutOnce is a store whose next admission step, once armed, stops at its limit before letting anyone
// in, as a Redis step does that spends its limit on presence entries of arrivals long admitted.
type cutOnce struct {
	room.Store
	armed atomic.Bool
}

func (s *cutOnce) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	if s.armed.CompareAndSwap(true, false) {
		return room.Tick{More: true}, nil
	}
	return s.Store.Admit(ctx, id, max)
}

// TestJoinAfterACutStepWakesTheGate: a join whose own step stops at a limit (and so lets nobody in, not
// even a joiner with a slot free) wakes the gate, which goes on and lets the joiner in at once, rather
// than when its timer next fires.
func TestJoinAfterACutStepWakesTheGate(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	store := &cutOnce{Store: memstore.NewRooms(memstore.Options{Clock: c.Now})}
	svc := room.NewService(store, room.Options{Clock: c.Now, Poll: time.Hour})
	defer svc.Stop()
	ctx := t.Context()
	cfg := config(2)
	cfg.SessionTTL = rushgate.Duration(5 * time.Minute)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	// The holder's session gives the gate a deadline, five minutes off: it sleeps until then.
	if v, err := svc.Join(ctx, "r", room.Entrant{Visitor: "holder"}); err != nil || v.State != room.StateAdmitted {
		t.Fatalf("holder: %+v %v", v, err)
	}
	time.Sleep(50 * time.Millisecond) // the gate's loop takes its step and goes to sleep
	store.armed.Store(true)
	v, err := svc.Join(ctx, "r", room.Entrant{Visitor: "late"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); v.State != room.StateAdmitted; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the joiner is %+v 5 s after its join, with a slot free", v)
		}
		if v, err = svc.Status(ctx, "r", "late"); err != nil {
			t.Fatal(err)
		}
	}
	if store.armed.Load() {
		t.Fatal("the join ran no step of its own")
	}
}

// levelOf is a drop's stock as a room that links to it reads it: always the same level.
type levelOf rushgate.Level

func (l levelOf) Remaining(context.Context, string, string) (rushgate.Level, error) {
	return rushgate.Level(l), nil
}

// TestClosedDropKeepsTheLinesPace: while the drop a room follows is closed, nobody goes in, and a
// waiting visitor is told the wait from its opening again, at the pace the line moved before: the
// minutes closed are not a line that stopped moving.
func TestClosedDropKeepsTheLinesPace(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	stock := levelOf{Stock: 1000, Left: 1000, Written: 1, Closes: c.Now().Add(5 * time.Second)}
	svc := room.NewService(memstore.NewRooms(memstore.Options{Clock: c.Now}), room.Options{Clock: c.Now, Manual: true, Stock: stock})
	t.Cleanup(svc.Stop)
	p := &paced{svc: svc, clock: c, cfg: config(10), admitted: map[string]string{}}
	p.cfg.Drop, p.cfg.SessionTTL, p.cfg.IdleTimeout = "d", rushgate.Duration(10*time.Minute), rushgate.Duration(time.Hour)
	p.put(t)
	p.join("v", 100)
	p.step(t)
	for range 4 { // ten a second until the drop closes
		p.second(t)
	}
	p.eta(t, "before the close", 50, 5*time.Second, false)
	for range 600 { // ten minutes closed
		if tk := p.second(t); len(tk.Admitted) != 0 {
			t.Fatalf("a step of the closed drop's room admitted %d", len(tk.Admitted))
		}
	}
	if v, _ := svc.Status(context.Background(), "r", "v099"); !v.DropClosed {
		t.Fatalf("ten minutes into the close: %+v", v)
	}
	p.eta(t, "ten minutes into the close", 50, 5*time.Second, false)
}

// TestRoomWaitsForItsDropToOpen: a room that follows a drop lets nobody in before the drop opens,
// however free its slots, and tells its line when the sale starts, keeping the places in order, with
// waits from the opening that count the free slots; at the opening the line moves, and the view tells
// no opening any more. Another instance, told nothing,
// holds the line and tells the opening too: it is kept with the room's units in the store.
func TestRoomWaitsForItsDropToOpen(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	store := memstore.NewRooms(memstore.Options{Clock: c.Now})
	opens := c.Now().Add(10 * time.Minute)
	stock := levelOf{Stock: 10, Left: 10, Written: 1, Opens: opens}
	svc := room.NewService(store, room.Options{Clock: c.Now, Manual: true, Stock: stock})
	t.Cleanup(svc.Stop)
	cfg := config(2)
	cfg.Drop, cfg.IdleTimeout = "d", rushgate.Duration(time.Hour)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := svc.Join(ctx, "r", room.Entrant{Visitor: v}); err != nil {
			t.Fatal(err)
		}
	}
	other := room.NewService(store, room.Options{Clock: c.Now, Manual: true, Stock: stock})
	t.Cleanup(other.Stop)
	for _, s := range []*room.Service{svc, other} {
		if tk, err := s.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 0 {
			t.Fatalf("a step before the drop's opening admitted %+v (%v)", tk.Admitted, err)
		}
		if v, _ := s.Status(ctx, "r", "v2"); v.State != room.StateWaiting || v.Position != 2 || !v.DropOpensAt.Equal(opens) || v.DropClosed {
			t.Fatalf("before the opening: %+v", v)
		}
		// Both slots are free: the first two go in at the opening, the third a session after it.
		if v, _ := s.Status(ctx, "r", "v2"); v.ETA != 0 {
			t.Fatalf("the second of two free slots is told %v from the opening", v.ETA)
		}
		if v, _ := s.Status(ctx, "r", "v3"); v.ETA != time.Duration(cfg.Grace+cfg.SessionTTL) || !v.ETAUpperBound {
			t.Fatalf("the third behind two free slots is told %v (upper bound %v)", v.ETA, v.ETAUpperBound)
		}
	}
	c.Advance(10 * time.Minute)
	tk, err := svc.Tick(ctx, "r")
	if err != nil || len(tk.Admitted) != 2 {
		t.Fatalf("at the opening: %+v %v", tk, err)
	}
	if v, _ := svc.Status(ctx, "r", "v3"); v.State != room.StateWaiting || !v.DropOpensAt.IsZero() {
		t.Fatalf("after the opening: %+v", v)
	}
}

// TestRoomWaitsWhileItsDropIsClosed: a room that follows a drop lets nobody in once the drop stops
// taking claims, and tells its line so, keeping the places; told that the drop opened again it admits
// at once, and a level of an earlier write of the drop, told late, changes nothing. Another instance,
// told nothing, holds the line too: the closing is kept with the room's units in the store.
func TestRoomWaitsWhileItsDropIsClosed(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	store := memstore.NewRooms(memstore.Options{Clock: c.Now})
	stock := levelOf{Stock: 10, Left: 10, Written: 1, Closes: c.Now().Add(time.Minute)}
	svc := room.NewService(store, room.Options{Clock: c.Now, Manual: true, Stock: stock})
	t.Cleanup(svc.Stop)
	cfg := config(1)
	cfg.Drop, cfg.IdleTimeout, cfg.Grace, cfg.SessionTTL = "d", rushgate.Duration(time.Hour), rushgate.Duration(time.Hour), rushgate.Duration(time.Hour)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := svc.Join(ctx, "r", room.Entrant{Visitor: v}); err != nil {
			t.Fatal(err)
		}
	}
	if tk, err := svc.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 1 || tk.Admitted[0].Visitor != "v1" {
		t.Fatalf("first step: %+v %v", tk, err)
	}
	status := func(svc *room.Service, v string) room.View {
		t.Helper()
		view, err := svc.Status(ctx, "r", v)
		if err != nil {
			t.Fatal(err)
		}
		return view
	}
	if v := status(svc, "v2"); v.State != room.StateWaiting || v.DropClosed {
		t.Fatalf("before the close: %+v", v)
	}

	c.Advance(2 * time.Minute) // the drop closed at its end
	if err := svc.Release(ctx, "r", "v1", ""); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if tk, err := svc.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 0 {
			t.Fatalf("a step after the close admitted %+v (%v)", tk.Admitted, err)
		}
	}
	if v := status(svc, "v2"); v.State != room.StateWaiting || v.Position != 1 || !v.DropClosed {
		t.Fatalf("after the close: %+v", v)
	}

	// Another instance, told nothing, holds the line too.
	other := room.NewService(store, room.Options{Clock: c.Now, Manual: true, Stock: stock})
	t.Cleanup(other.Stop)
	if tk, err := other.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 0 {
		t.Fatalf("the other instance's step admitted %+v (%v)", tk.Admitted, err)
	}
	if v := status(other, "v3"); !v.DropClosed {
		t.Fatalf("the other instance's view: %+v", v)
	}

	// The operator opens the drop again (a new write, no end): the line moves at once.
	if err := svc.Restock(ctx, "r", "d", rushgate.Level{Stock: 10, Left: 10, Written: 2}); err != nil {
		t.Fatal(err)
	}
	if tk, err := svc.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 1 || tk.Admitted[0].Visitor != "v2" {
		t.Fatalf("after the reopening: %+v %v", tk, err)
	}
	// A sampler's read from before the reopening, told after it, changes nothing.
	if err := svc.Restock(ctx, "r", "d", rushgate.Level{Stock: 10, Left: 10, Written: 1, Closes: c.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if v := status(svc, "v3"); v.DropClosed {
		t.Fatalf("a late level of an earlier write closed the line: %+v", v)
	}
	if err := svc.Release(ctx, "r", "v2", ""); err != nil {
		t.Fatal(err)
	}
	if tk, err := svc.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 1 || tk.Admitted[0].Visitor != "v3" {
		t.Fatalf("the next step: %+v %v", tk, err)
	}
}

// TestHistoryETACountsAFollowedDropsUnits: the console's wait at the back of a held line is the one the
// last visitor in it is told, also in a room that follows a drop with fewer units left than the room
// has slots: the free slots the history replays are the ones the room's steps left, not its capacity's.
func TestHistoryETACountsAFollowedDropsUnits(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	stock := levelOf{Stock: 100, Left: 3, Written: 1, Opens: c.Now().Add(10 * time.Minute)}
	svc := room.NewService(memstore.NewRooms(memstore.Options{Clock: c.Now}),
		room.Options{Clock: c.Now, Manual: true, Stock: stock, History: memstore.NewHistory(c.Now)})
	t.Cleanup(svc.Stop)
	cfg := config(10)
	cfg.Drop, cfg.IdleTimeout = "d", rushgate.Duration(time.Hour)
	cfg.Grace, cfg.SessionTTL = rushgate.Duration(time.Minute), rushgate.Duration(5*time.Minute)
	if err := svc.Put(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	start := c.Now()
	for i := range 4 {
		if _, err := svc.Join(ctx, "r", room.Entrant{Visitor: fmt.Sprintf("v%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if tk, err := svc.Tick(ctx, "r"); err != nil || len(tk.Admitted) != 0 || tk.Free != 3 {
			t.Fatalf("a step before the opening: %+v %v; want nobody in and the 3 units' slots free", tk, err)
		}
		svc.Sample(ctx)
		c.Advance(time.Second)
	}
	told, err := svc.Status(ctx, "r", "v03")
	if err != nil || told.Position != 4 {
		t.Fatalf("the last in line: %+v %v", told, err)
	}
	points, err := svc.History(ctx, "r", start)
	if err != nil || len(points) == 0 {
		t.Fatalf("History: %d points, %v", len(points), err)
	}
	last := points[len(points)-1]
	if last.Waiting != 4 || math.Abs(last.ETABack-told.ETA.Seconds()) > 1.5 || last.ETABackBound != told.ETAUpperBound {
		t.Fatalf("the console's wait at the back: %.1f s (bound %v); the last in line is told %v (bound %v)",
			last.ETABack, last.ETABackBound, told.ETA, told.ETAUpperBound)
	}
}
