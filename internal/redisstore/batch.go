package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rushgate/rushgate"
)

// A crowd's requests are batched: the joins and status reads of one room, the claims on one drop and
// the bids on one auction that arrive while an earlier batch of the same entity is with Redis go
// together in the next call of its script, which serves them one after another in one atomic step.
// Redis pays the fixed cost of a script call (parsing, lookup, reading the entity's config and the
// time) once per batch instead of once per request, and rushgate sends one command instead of many.
// Nobody waits for a batch to fill: a request that finds a free runner is sent at once, alone if it is
// alone; batches only form while Redis is busy, so under load they grow and at rest a request costs
// what it did unbatched.
//
// Batching changes no outcome. Each request is served exactly as its own step would be, in the order
// the batch lists them; requests in flight at the same time had no order between them anyway, and one
// that returned before another was sent is in an earlier batch, so it stays ahead.
const (
	// batchRunners is how many batches of one entity may be with Redis at once: while one runs, the
	// answers of the other are handed out and the next gathers.
	batchRunners = 2
	// maxBatch bounds one step's work, so that a batch never holds Redis for more than about a
	// millisecond.
	maxBatch = 64
)

// batcher sends the requests of one kind in batches, one queue per key (the entity and whatever else a
// batch must share). send runs one batch through its script and returns one answer per request, or an
// error that fails them all.
type batcher[K comparable, Req, Res any] struct {
	timeout time.Duration // the longest a request waits from its arrival, queued or sent
	send    func(ctx context.Context, key K, reqs []Req) ([]Res, error)

	mu     sync.Mutex
	queues map[K]*batchQueue[Req, Res]
}

func newBatcher[K comparable, Req, Res any](timeout time.Duration, send func(context.Context, K, []Req) ([]Res, error)) *batcher[K, Req, Res] {
	return &batcher[K, Req, Res]{timeout: timeout, send: send, queues: make(map[K]*batchQueue[Req, Res])}
}

// batchQueue holds one key's requests that no batch has taken yet, and counts the runners sending
// its batches.
type batchQueue[Req, Res any] struct {
	pending []*batchCall[Req, Res]
	runners int
}

// batchCall is one request waiting for its batch.
type batchCall[Req, Res any] struct {
	req       Req
	queued    time.Time
	abandoned atomic.Bool // its caller gave up; a batch not yet sent leaves it out
	done      chan struct{}
	res       Res // set, with err, by the runner before done is closed
	err       error
}

// do runs req in its key's next batch. As without batching, a caller waits at most the timeout from
// its arrival: a request still queued by then fails without being sent, and a batch must answer by
// the deadline of its oldest request. The caller keeps that promise itself too, since the client may
// overrun a deadline (while it reconnects to a Redis that stopped answering, for one).
func (b *batcher[K, Req, Res]) do(ctx context.Context, key K, req Req) (Res, error) {
	c := &batchCall[Req, Res]{req: req, queued: time.Now(), done: make(chan struct{})}
	b.enqueue(ctx, key, c)
	late := time.NewTimer(b.timeout)
	defer late.Stop()
	var zero Res
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		c.abandoned.Store(true)
		return zero, mapError(ctx.Err())
	case <-late.C:
		c.abandoned.Store(true)
		return zero, fmt.Errorf("%w: no answer within %v", rushgate.ErrUnavailable, b.timeout)
	}
}

// enqueue adds c to its key's queue and starts a runner if the key has fewer than batchRunners.
func (b *batcher[K, Req, Res]) enqueue(ctx context.Context, key K, c *batchCall[Req, Res]) {
	b.mu.Lock()
	q := b.queues[key]
	if q == nil {
		q = &batchQueue[Req, Res]{}
		b.queues[key] = q
	}
	q.pending = append(q.pending, c)
	start := q.runners < batchRunners
	if start {
		q.runners++
	}
	b.mu.Unlock()
	if start {
		// The runner serves whoever is queued, not only this caller, so it must not stop when this
		// caller's request is cancelled; its values still flow.
		go b.run(context.WithoutCancel(ctx), key, q)
	}
}

// run sends the key's batches until its queue is empty. It is owned by the queue: it exits as soon as
// nothing is pending, and each batch it sends is bounded by the timeout.
func (b *batcher[K, Req, Res]) run(ctx context.Context, key K, q *batchQueue[Req, Res]) {
	for {
		batch := b.take(key, q)
		if len(batch) == 0 {
			return
		}
		b.sendBatch(ctx, key, batch)
	}
}

// take takes up to maxBatch requests from the queue, failing those that waited past the timeout and
// dropping those whose callers gave up. With nothing to take, the runner retires, and the last one
// removes the key's queue.
func (b *batcher[K, Req, Res]) take(key K, q *batchQueue[Req, Res]) []*batchCall[Req, Res] {
	stale := time.Now().Add(-b.timeout) // queued before this, a request is past its deadline
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*batchCall[Req, Res]
	n := 0
	for _, c := range q.pending {
		if len(batch) == maxBatch {
			break
		}
		n++
		switch {
		case c.abandoned.Load():
		case c.queued.Before(stale):
			c.err = fmt.Errorf("%w: queued for more than %v", rushgate.ErrUnavailable, b.timeout)
			close(c.done)
		default:
			batch = append(batch, c)
		}
	}
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	if len(batch) == 0 {
		q.runners--
		if q.runners == 0 && len(q.pending) == 0 {
			delete(b.queues, key)
		}
	}
	return batch
}

// sendBatch sends one batch and hands each call its answer. The batch is in queue order, so its first
// request's deadline is the earliest.
func (b *batcher[K, Req, Res]) sendBatch(ctx context.Context, key K, batch []*batchCall[Req, Res]) {
	ctx, cancel := context.WithDeadline(ctx, batch[0].queued.Add(b.timeout))
	defer cancel()
	reqs := make([]Req, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	res, err := b.send(ctx, key, reqs)
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("redisstore: a script answered %d of a batch of %d", len(res), len(batch))
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		close(c.done)
	}
}

// queue returns the key's queue for tests to watch: its pending length and runners, or ok false when
// there is none.
func (b *batcher[K, Req, Res]) queue(key K) (pending, runners int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	if q == nil {
		return 0, 0, false
	}
	return len(q.pending), q.runners, true
}
