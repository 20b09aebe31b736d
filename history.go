package rushgate

import (
	"context"
	"sync"
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

// Quiet is what a domain's sampler remembers of the entities it found over, so that entities that
// ended long ago cost a read a minute rather than a read a second for as long as they exist. A change
// that may reopen one wakes it; one made on another instance is seen at the next minute's read, while
// that instance, woken, samples it every second into the shared history. Wake costs a lock-free look-up
// for an entity that is not quiet, so a join may call it. The zero value is ready.
type Quiet struct {
	until sync.Map // an entity found over -> when it is due again (time.Time)

	mu    sync.Mutex // guards swept
	swept time.Time
}

// Due reports whether the sampler reads id at now.
func (q *Quiet) Due(id string, now time.Time) bool {
	until, ok := q.until.Load(id)
	return !ok || !now.Before(until.(time.Time))
}

// Saw records what the sampler read of id at now: over, id is not due again for QuietEvery; live, it
// is due every second.
func (q *Quiet) Saw(id string, over bool, now time.Time) {
	if !over {
		q.Wake(id)
		return
	}
	q.until.Store(id, now.Add(QuietEvery))
	q.mu.Lock()
	defer q.mu.Unlock()
	if now.Sub(q.swept) >= QuietEvery { // an entity deleted on another instance is never read again
		q.swept = now
		q.until.Range(func(other, until any) bool {
			if now.Sub(until.(time.Time)) > QuietEvery {
				q.until.Delete(other)
			}
			return true
		})
	}
}

// Wake makes id due at once: its config changed, or a visitor came, and its figures may move again.
func (q *Quiet) Wake(id string) {
	if _, ok := q.until.Load(id); ok {
		q.until.Delete(id)
	}
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

// EachID calls fn with every id a paged list returns, in pages of 500, until the list ends or fails:
// how a service visits all its entities to sample them.
func EachID(ctx context.Context, list func(ctx context.Context, after string, limit int) ([]string, error), fn func(id string)) {
	Each(ctx, list, func(id string) string { return id }, fn)
}

// Each calls fn with every item a paged list returns, in pages of 500, until the list ends or fails;
// key returns an item's id, after which the next page starts. A scrape of the metrics visits the
// services' lists so.
func Each[T any](ctx context.Context, list func(ctx context.Context, after string, limit int) ([]T, error), key func(T) string, fn func(T)) {
	for after := ""; ; {
		items, err := list(ctx, after, 500)
		if err != nil || len(items) == 0 {
			return
		}
		for _, item := range items {
			fn(item)
		}
		after = key(items[len(items)-1])
	}
}
