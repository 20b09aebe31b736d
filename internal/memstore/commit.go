package memstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/record"
)

// Claims and bids are group-committed: a step decides under its store's lock, applies its change in
// memory at once (so the next step decides on it), queues the change's record and returns the lock;
// then it waits. One writer takes everything queued, commits it in one transaction with one fsync,
// and settles each step: a committed change becomes durable and its step is answered; when a commit
// fails, every change not yet durable (that batch's and all queued behind it, which were decided on
// it) is rolled back in memory and its step answered ErrUnavailable. No lock a request needs is held
// across the fsync.
//
// While a failed batch is being rolled back the committer refuses new changes: their steps roll back
// their own change at once, under the lock they still hold, so that no change decided on a state about
// to be undone can reach the record.

// committer queues changes for the record and writes them in groups. Its writer goroutine is owned by
// the queue: it runs while there is work and exits when the queue is empty.
type committer struct {
	db Records

	mu      sync.Mutex
	queue   []*change
	running bool // a writer is draining the queue
	failing bool // a failed batch is being rolled back: refuse changes until it is
}

// change is one step's record in a batch: add puts it in the batch, settle makes it durable (nil) or
// rolls it back (an error) under its store's lock, and done gets the outcome.
type change struct {
	add    func(*record.Batch)
	settle func(err error)
	done   chan error
}

// errRollingBack refuses a change while the committer rolls back a failed batch.
var errRollingBack = fmt.Errorf("%w: recording failed; rolling back", rushgate.ErrUnavailable)

// enqueue queues a change. The caller holds its store's lock, so the change is in the queue before any
// later step can decide on it; with an error (a rollback is in progress) nothing was queued and the
// caller undoes its change itself.
func (c *committer) enqueue(ch *change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		return errRollingBack
	}
	c.queue = append(c.queue, ch)
	if !c.running {
		c.running = true
		go c.write()
	}
	return nil
}

// wait waits for the change's outcome. The request's context does not end the wait: the change is
// decided, and its outcome, committed or rolled back, is what the caller must report.
func (ch *change) wait() error { return <-ch.done }

// write commits what is queued, batch after batch, until the queue is empty.
func (c *committer) write() {
	for {
		// Let the goroutines that are ready run first: on few cores a writer started by the first
		// change of a burst would otherwise run before the rest of the burst could queue, and commit
		// one change at a time (measured: batches of 1.0 on one core, 22 with this).
		runtime.Gosched()
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		var b record.Batch
		for _, ch := range batch {
			ch.add(&b)
		}
		err := c.db.Commit(context.Background(), &b)
		if err == nil {
			for _, ch := range batch {
				ch.settle(nil)
				ch.done <- nil
			}
			continue
		}
		err = fmt.Errorf("%w: recording: %w", rushgate.ErrUnavailable, err)
		c.mu.Lock()
		c.failing = true
		batch = append(batch, c.queue...) // decided on the failed batch: they fail with it
		c.queue = nil
		c.mu.Unlock()
		for i := len(batch) - 1; i >= 0; i-- { // newest first, back to the last durable state
			batch[i].settle(err)
			batch[i].done <- err
		}
		c.mu.Lock()
		c.failing = false
		c.mu.Unlock()
	}
}

// newChange returns a change to queue.
func newChange(add func(*record.Batch), settle func(err error)) *change {
	return &change{add: add, settle: settle, done: make(chan error, 1)}
}

// barrier returns a change that records nothing: queued behind changes whose outcome a step reports
// (a repeated claim answered with one not yet durable), it is settled once they are.
func barrier() *change { return newChange(func(*record.Batch) {}, func(error) {}) }
