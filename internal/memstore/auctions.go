package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
)

var _ auction.Store = (*Auctions)(nil)

// Auctions is the in-memory implementation of [auction.Store]: each auction's steps run under its own
// lock with the injected clock, and a sorted set of end times is the deadline index. With a record,
// a step's events are recorded before its new state is kept, so nothing is ever answered as accepted
// that the record does not hold.
type Auctions struct {
	clock    func() time.Time
	recorder Records

	mu        sync.Mutex // guards auctions and deadlines; held for a whole step, which is short
	auctions  map[string]*auctionState
	deadlines *zset // open auction id -> end (unix ns)
}

type auctionState struct {
	state  auction.State
	events []auction.Event
}

// NewAuctions returns an empty auction store; a nil clock means time.Now, a nil recorder keeps no
// durable record.
func NewAuctions(clock func() time.Time, recorder Records) *Auctions {
	if clock == nil {
		clock = time.Now
	}
	return &Auctions{clock: clock, recorder: recorder, auctions: make(map[string]*auctionState), deadlines: newZset()}
}

// step runs fn on a copy of the auction's state under the lock, records its events, and only then keeps
// the new state, its events and its deadline. A failed record leaves the auction as it was, and so
// does a rev other than the config's (an empty rev checks none).
func (a *Auctions) step(ctx context.Context, id, rev string, fn func(s *auction.State, now time.Time) ([]auction.Event, error)) (auction.Outcome, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	as, ok := a.auctions[id]
	switch {
	case !ok:
		return auction.Outcome{}, auction.ErrNotFound
	case rev != "" && rev != as.state.Rev:
		return auction.Outcome{}, rushgate.ErrStale
	}
	next := as.state
	evs, err := fn(&next, a.clock())
	if len(evs) > 0 && a.recorder != nil {
		if rerr := a.recorder.Record(ctx, id, next, evs); rerr != nil {
			return auction.Outcome{State: as.state}, fmt.Errorf("%w: recording auction %s: %w", rushgate.ErrUnavailable, id, rerr)
		}
	}
	as.state = next
	as.events = append(as.events, evs...)
	if as.state.Closed || as.state.Sold {
		a.deadlines.Remove(id)
	} else {
		a.deadlines.Add(id, unixNano(as.state.EndsAt))
	}
	return auction.Outcome{State: as.state, Events: evs}, err
}

// Put implements [auction.Store]. An auction that closed without bids may be replaced; its events (the
// close) stay in its history and the new auction's events continue the sequence, so that no event
// number is used twice for one id.
func (a *Auctions) Put(ctx context.Context, id string, cfg auction.Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := auction.New(cfg)
	st.Rev = rushgate.NewRevision()
	var events []auction.Event
	if as, ok := a.auctions[id]; ok {
		if as.state.Bids > 0 || as.state.Sold {
			return auction.ErrStarted
		}
		st.Seq, events = as.state.Seq, as.events
	}
	if a.recorder != nil {
		if err := a.recorder.Record(ctx, id, st, nil); err != nil {
			return fmt.Errorf("%w: recording auction %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	a.auctions[id] = &auctionState{state: st, events: events}
	a.deadlines.Add(id, unixNano(cfg.EndsAt))
	return nil
}

// Delete implements [auction.Store]; the record goes in the same step, so an auction created again
// under the id starts afresh.
func (a *Auctions) Delete(ctx context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	as, ok := a.auctions[id]
	switch {
	case !ok:
		return auction.ErrNotFound
	case as.state.Bids > 0 || as.state.Sold:
		return auction.ErrStarted
	}
	if a.recorder != nil {
		if err := a.recorder.ForgetAuction(ctx, id); err != nil {
			return fmt.Errorf("%w: forgetting auction %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	delete(a.auctions, id)
	a.deadlines.Remove(id)
	return nil
}

// Restore loads auctions saved by an earlier run (their state and events), so that an embedded
// instance resumes where it stopped; overdue ones are then closed by the first step or the closer.
func (a *Auctions) Restore(id string, st auction.State, evs []auction.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.Rev = rushgate.NewRevision()
	a.auctions[id] = &auctionState{state: st, events: append([]auction.Event(nil), evs...)}
	if !st.Closed && !st.Sold {
		a.deadlines.Add(id, unixNano(st.EndsAt))
	}
}

// Get implements [auction.Store].
func (a *Auctions) Get(ctx context.Context, id string) (auction.State, error) {
	o, err := a.step(ctx, id, "", func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.CloseIfDue(now), nil })
	return o.State, err
}

// Bid implements [auction.Store].
func (a *Auctions) Bid(ctx context.Context, id, rev string, b auction.Bid) (auction.Outcome, error) {
	return a.step(ctx, id, rev, func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.Bid(b, now) })
}

// BuyNow implements [auction.Store].
func (a *Auctions) BuyNow(ctx context.Context, id, rev, bidder string) (auction.Outcome, error) {
	return a.step(ctx, id, rev, func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.BuyNow(bidder, now) })
}

// Close implements [auction.Store].
func (a *Auctions) Close(ctx context.Context, id string) (auction.Outcome, error) {
	return a.step(ctx, id, "", func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.CloseIfDue(now), nil })
}

// Due implements [auction.Store].
func (a *Auctions) Due(_ context.Context, limit int) ([]string, time.Time, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := unixNano(a.clock())
	var ids []string
	for n := a.deadlines.list.head.next[0].forward; n != nil; n = n.next[0].forward {
		if n.score > now {
			return ids, time.Unix(0, n.score).UTC(), nil
		}
		if len(ids) == limit {
			return ids, time.Unix(0, n.score).UTC(), nil // more are due: a deadline already past
		}
		ids = append(ids, n.member)
	}
	return ids, time.Time{}, nil
}

// Events implements [auction.Store].
func (a *Auctions) Events(_ context.Context, id string, after int64, limit int) ([]auction.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	as, ok := a.auctions[id]
	if !ok {
		return nil, auction.ErrNotFound
	}
	// Sequence numbers start at 1 and have no gaps, so event seq k sits at index k-1.
	start := min(max(after, 0), int64(len(as.events)))
	end := min(start+int64(limit), int64(len(as.events)))
	return append([]auction.Event(nil), as.events[start:end]...), nil
}
