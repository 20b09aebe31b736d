package rushgate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// HistoryKeep is how far back a [History] keeps samples: an operator looks at the last hour of an event.
const HistoryKeep = time.Hour

// HistoryLen is how many samples a [History] keeps per entity: one a second for HistoryKeep, and a
// little more so that a reader asking for exactly the last hour finds it all.
const HistoryLen = int(HistoryKeep/time.Second) + 60

// Sample is one second's figures of a room, drop or auction. The domain that took it orders and
// names the figures; counters are kept as totals, so rates come from two samples however far apart
// they are.
type Sample struct {
	At      time.Time
	Figures []int64
}

// History keeps per-second samples of every room, drop and auction for at least [HistoryKeep]. On a
// shared backend it is shared: each instance offers a sample every second and the store keeps the first
// of each second by its own clock, so any number of instances keep one sample a second between them.
// An entity is named "room:ID", "drop:ID" or "auction:ID".
type History interface {
	// Sample keeps figures as the entity's sample of the current second, unless that second has one.
	Sample(ctx context.Context, entity string, figures []int64) error
	// Since returns the entity's samples taken after since, oldest first.
	Since(ctx context.Context, entity string, since time.Time) ([]Sample, error)
	// Forget drops an entity's samples, when it is deleted.
	Forget(ctx context.Context, entity string) error
}

// PerSecond is the rate of change of counter figure i between two samples, 0 when the counter did not
// grow (a restarted backend may count from zero again).
func PerSecond(prev, cur Sample, i int) float64 {
	dt := cur.At.Sub(prev.At).Seconds()
	d := cur.Figures[i] - prev.Figures[i]
	if dt <= 0 || d <= 0 {
		return 0
	}
	return float64(d) / dt
}

// Sampled calls sample at the start of every second until ctx ends: how each domain service feeds its
// history. Sampling costs each service one read per entity a second, never a read per visitor.
func Sampled(ctx context.Context, sample func(ctx context.Context)) {
	for {
		now := time.Now()
		t := time.NewTimer(now.Truncate(time.Second).Add(time.Second).Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			sample(ctx)
		}
	}
}

// QuietEvery is how often a domain's sampler reads an entity that is over (a drop sold out or closed,
// an auction closed or sold) instead of every second: its figures have stopped, and a sample a minute
// keeps its chart reaching the present.
const QuietEvery = time.Minute

// SeenKeep is how long [Seen.Each] still reports an entity after the sampler first found it over: a
// dashboard sees a sale's last figures for an hour, and the metrics of an instance that has run a
// thousand sales name only the recent ones.
const SeenKeep = HistoryKeep

// Seen is what a domain's sampler has seen of each entity: its latest figures, and whether it is over,
// so that entities that ended long ago cost a read a minute rather than a read a second for as long as
// they exist, and so that a metrics scrape reports every entity from memory rather than reading each
// from the store. A change that may reopen an entity wakes it; one made on another instance is seen
// at the next minute's read, while that instance, woken, samples it every second into the shared
// history. Wake costs a lock-free look-up and at most two atomic stores a read, so a join may call it.
// The zero value is ready.
type Seen[T any] struct {
	m     sync.Map     // id -> *seen[T]
	swept atomic.Int64 // when entities no longer read were last forgotten, in Unix nanoseconds
}

// seen is one read of an entity. A read replaces it whole; only due and woken change in place, so
// that Wake needs no lock.
type seen[T any] struct {
	v     T
	read  time.Time    // when the sampler read it
	over  time.Time    // since when the sampler has found it over; zero while it is live
	due   atomic.Int64 // when the sampler reads it again, in Unix nanoseconds; 0: at once
	woken atomic.Bool  // Wake was called since this read: the next read may be older than the change
}

// Due reports whether the sampler reads id at now.
func (s *Seen[T]) Due(id string, now time.Time) bool {
	e, ok := s.m.Load(id)
	return !ok || now.UnixNano() >= e.(*seen[T]).due.Load()
}

// Saw records v as what the sampler read of id at now: over, id is not due again for QuietEvery;
// live, it is due every second.
//
// A change that wakes id while the sampler reads it may come after the read: then the read found it
// over though it no longer is, and id stays due at once, so that the next second's read sees the change.
func (s *Seen[T]) Saw(id string, v T, over bool, now time.Time) {
	e := &seen[T]{v: v, read: now}
	prev, _ := s.m.Load(id)
	old, _ := prev.(*seen[T])
	if over {
		e.over = now
		if old != nil && !old.over.IsZero() {
			e.over = old.over
		}
		if old == nil || !old.woken.Load() {
			e.due.Store(now.Add(QuietEvery).UnixNano())
		}
	}
	s.m.Store(id, e)
	if over && old != nil && old.woken.Load() { // woken between the look above and the store
		e.due.Store(0)
	}
	// An entity deleted on another instance is never read again: forget it two minutes after its
	// last read, when any entity that still exists has been read again.
	last := s.swept.Load()
	if now.UnixNano()-last < int64(QuietEvery) || !s.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	s.m.Range(func(id, e any) bool {
		if now.Sub(e.(*seen[T]).read) > 2*QuietEvery {
			s.m.Delete(id)
		}
		return true
	})
}

// Wake makes id due at once: its config changed, or a visitor came, and its figures may move again.
func (s *Seen[T]) Wake(id string) {
	x, ok := s.m.Load(id)
	if !ok {
		return
	}
	e := x.(*seen[T])
	if !e.woken.Load() { // a crowd's joins write it once a read, not once each
		e.woken.Store(true)
	}
	if e.due.Load() != 0 {
		e.due.Store(0)
	}
}

// Forget drops id, deleted on this instance.
func (s *Seen[T]) Forget(id string) { s.m.Delete(id) }

// Each calls fn with what the sampler last read of every entity, in no order, leaving out an entity
// over for longer than SeenKeep and one not read for two minutes (deleted elsewhere, or a store that
// fails to answer). Its figures are a second old for an entity that is live, a minute for one over.
func (s *Seen[T]) Each(now time.Time, fn func(id string, v T)) {
	s.m.Range(func(id, e any) bool {
		x := e.(*seen[T])
		if now.Sub(x.read) <= 2*QuietEvery && (x.over.IsZero() || now.Sub(x.over) <= SeenKeep) {
			fn(id.(string), x.v)
		}
		return true
	})
}

// EachPair calls point for each sample taken after since, with its index and the sample before it,
// skipping pairs where either has fewer than n figures (written by another version): how a domain
// turns its samples into points with rates.
func EachPair(samples []Sample, since time.Time, n int, point func(i int, prev, cur Sample)) {
	for i := 1; i < len(samples); i++ {
		prev, cur := samples[i-1], samples[i]
		if cur.At.After(since) && len(cur.Figures) >= n && len(prev.Figures) >= n {
			point(i, prev, cur)
		}
	}
}

// Points reads entity's samples of h taken after since, and a minute before it for the rates of the
// first points (an entity over is sampled once a minute), and turns each pair with at least n figures
// into a point (see EachPair): a drop's or an auction's history as its page charts it. A nil h has
// none.
func Points[P any](ctx context.Context, h History, entity string, since time.Time, n int, point func(prev, cur Sample) P) ([]P, error) {
	out := []P{}
	if h == nil {
		return out, nil
	}
	samples, err := h.Since(ctx, entity, since.Add(-time.Minute))
	if err != nil {
		return nil, err
	}
	EachPair(samples, since, n, func(_ int, prev, cur Sample) { out = append(out, point(prev, cur)) })
	return out, nil
}
