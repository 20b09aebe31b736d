package redisstore

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

// Joins and status reads are the requests a crowd sends, so they are batched: the visits of one room
// that arrive while an earlier batch of the same room is with Redis go together in the next call of the
// visit script, which serves them one after another in one atomic step. Redis pays the fixed cost of a
// script call (parsing, lookup, reading the room's config and the time) once per batch instead of once
// per visitor, the script looks the whole batch up in one command per sorted set, and rushgate sends one
// command instead of many. Nobody waits for a batch to fill: a visit that finds a free runner is sent at
// once, alone if it is alone; batches only form while Redis is busy, so under load they grow and at rest
// a visit costs what it did unbatched.
//
// Batching changes no outcome. Each visitor's join is served exactly as its own step would be, in the
// order the batch lists them; joins in flight at the same time had no order between them anyway, and a
// join that returned before another was sent is in an earlier batch, so it stays ahead.
const (
	// visitRunners is how many batches of one room may be with Redis at once: while one runs, the
	// answers of the other are handed out and the next gathers.
	visitRunners = 2
	// maxVisitBatch bounds one step's work, so that a batch never holds Redis for more than about a
	// millisecond.
	maxVisitBatch = 64
)

// visitCall is one join or status read waiting for its batch.
type visitCall struct {
	visitor   string
	mode      string // "new", "join", "fenced" or "status", as visit.lua takes it
	arg       string // the origin of a "join", the fence of a "fenced" join, else empty
	queued    time.Time
	abandoned atomic.Bool // its caller gave up; a batch not yet sent leaves it out
	done      chan struct{}

	// set by the runner before done is closed
	status room.Status
	prev   string
	err    error
}

// visitQueue holds one room's visits that no batch has taken yet, and counts the runners sending its
// batches.
type visitQueue struct {
	pending []*visitCall
	runners int
}

// visit runs a join or status read in the room's next batch; for a join (mode "join") on standalone
// Redis it also returns the other lines the visitor may still be in, space-separated (see point_line in
// lib.lua). As without batching, a caller waits at most the store's timeout from its arrival: a visit
// still queued by then fails without being sent, and a batch must answer by the deadline of its oldest
// visit.
func (s *Store) visit(ctx context.Context, id, visitor, mode, arg string) (room.Status, string, error) {
	c := &visitCall{visitor: visitor, mode: mode, arg: arg, queued: time.Now(), done: make(chan struct{})}
	s.enqueue(ctx, id, c)
	select {
	case <-c.done:
		return c.status, c.prev, c.err
	case <-ctx.Done():
		c.abandoned.Store(true)
		return room.Status{}, "", mapError(ctx.Err())
	}
}

// enqueue adds c to its room's queue and starts a runner if the room has fewer than visitRunners.
func (s *Store) enqueue(ctx context.Context, id string, c *visitCall) {
	s.visitMu.Lock()
	q := s.visits[id]
	if q == nil {
		q = &visitQueue{}
		s.visits[id] = q
	}
	q.pending = append(q.pending, c)
	start := q.runners < visitRunners
	if start {
		q.runners++
	}
	s.visitMu.Unlock()
	if start {
		// The runner serves whoever is queued, not only this caller, so it must not stop when this
		// caller's request is cancelled; its values still flow.
		go s.runVisits(context.WithoutCancel(ctx), id, q)
	}
}

// runVisits sends the room's batches until its queue is empty. It is owned by the queue: it exits as
// soon as nothing is pending, and each batch it sends is bounded by the store's timeout.
func (s *Store) runVisits(ctx context.Context, id string, q *visitQueue) {
	for {
		batch := s.takeVisits(id, q)
		if len(batch) == 0 {
			return
		}
		s.sendVisits(ctx, id, batch)
	}
}

// takeVisits takes up to maxVisitBatch visits from the queue, failing those that waited past the
// timeout and dropping those whose callers gave up. With nothing to take, the runner retires, and the
// last one removes the room's queue.
func (s *Store) takeVisits(id string, q *visitQueue) []*visitCall {
	stale := time.Now().Add(-s.timeout) // queued before this, a visit is past its deadline
	s.visitMu.Lock()
	defer s.visitMu.Unlock()
	var batch []*visitCall
	n := 0
	for _, c := range q.pending {
		if len(batch) == maxVisitBatch {
			break
		}
		n++
		switch {
		case c.abandoned.Load():
		case c.queued.Before(stale):
			c.err = fmt.Errorf("%w: queued for more than %v", rushgate.ErrUnavailable, s.timeout)
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
			delete(s.visits, id)
		}
	}
	return batch
}

// sendVisits runs one batch through the visit script and hands each call its answer. The batch is in
// queue order, so its first visit's deadline is the earliest.
func (s *Store) sendVisits(ctx context.Context, id string, batch []*visitCall) {
	ctx, cancel := context.WithDeadline(ctx, batch[0].queued.Add(s.timeout))
	defer cancel()
	keys := s.keys.room(id)
	args := make([]string, 3, 3+4*len(batch))
	args[0], args[1], args[2] = s.now(), id, lineTTLArg
	for _, c := range batch {
		if c.mode == "join" && !s.cluster {
			keys = append(keys, s.keys.line(c.visitor))
		}
		args = append(args, c.visitor, c.mode, itoa(1+mrand.Int64N(preQueueSpan-1)), c.arg)
	}
	v, err := s.run(ctx, visitScript, keys, args...)
	if s.batched != nil {
		s.batched(len(batch))
	}
	var r []rueidis.RedisMessage
	if err == nil {
		r, _ = v.ToArray()
		switch {
		case len(r) == 1 && integer(r[0]) == -1:
			err = room.ErrNotFound
		case len(r) != 3*len(batch):
			err = fmt.Errorf("redisstore: visit script answered %d fields for %d visitors", len(r), len(batch))
		}
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.status, c.prev, c.err = visitStatus(r[3*i : 3*i+3])
		}
		close(c.done)
	}
}

// errSuperseded refuses a join on Cluster that a later join of the same visitor overtook while it
// stalled (see lua/line.lua): the later join decides where the visitor waits.
var errSuperseded = fmt.Errorf("%w: a later join of this visitor came first", rushgate.ErrUnavailable)

// visitStatus reads one visitor's three fields of the visit script's answer.
func visitStatus(f []rueidis.RedisMessage) (room.Status, string, error) {
	switch integer(f[0]) {
	case 1:
		prev, _ := f[2].ToString()
		return room.Status{State: room.StateWaiting, Position: integer(f[1])}, prev, nil
	case 2:
		aid, _ := f[1].ToString()
		return room.Status{State: room.StateAdmitted, Admission: room.Admission{
			ID: aid, ExpiresAt: time.UnixMilli(integer(f[2])).UTC(), Collected: true,
		}}, "", nil
	case 3:
		return room.Status{}, "", errSuperseded
	default:
		return room.Status{State: room.StateNone}, "", nil
	}
}
