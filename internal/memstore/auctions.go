package memstore

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/record"
)

// errRecording refuses to replace or delete an auction while steps of it wait for their commit.
var errRecording = fmt.Errorf("%w: the auction's last steps are being recorded; try again", rushgate.ErrUnavailable)

var (
	_ auction.Store   = (*Auctions)(nil)
	_ auction.Watcher = (*Auctions)(nil)
)

// Auctions is the in-memory implementation of [auction.Store]: each auction's steps run under its own
// lock with the injected clock, and a sorted set of end times is the deadline index. With a record,
// a step's events are recorded before its new state is kept, so nothing is ever answered as accepted
// that the record does not hold.
type Auctions struct {
	clock    func() time.Time
	recorder Records
	commit   *committer // steps' events are group-committed (see commit.go)

	mu        sync.Mutex // guards the fields below; held for a whole step, which is short
	auctions  map[string]*auctionState
	deadlines *zset                                 // open auction id -> end (unix ns)
	bidders   map[string]map[string]struct{}        // auction id -> bidders whose bid or buy-now was taken
	gone      map[string][]auction.Event            // deleted auction id -> its events, which one made again goes on from (after a restart the record has them)
	watches   map[string]map[chan struct{}]struct{} // auction id -> the channels of its Watch calls
}

// auctionState is an auction with its events. Events past the first durable ones are decided but not
// yet committed to the record (see commit.go); durable is the state after the last committed step, and
// undurable the state after each later step, oldest first, with the group that commits it.
type auctionState struct {
	state     auction.State
	events    []auction.Event
	durable   auction.State
	kept      int // how many of events are durable
	undurable []undurable
}

// undurable is the state after a step not yet committed, and the group that commits it.
type undurable struct {
	state auction.State
	group *group
}

// pending reports whether the auction has events not yet durable.
func (as *auctionState) pending() bool { return len(as.events) > as.kept }

// NewAuctions returns an empty auction store; a nil clock means time.Now, a nil recorder keeps no
// durable record.
func NewAuctions(clock func() time.Time, recorder Records) *Auctions {
	if clock == nil {
		clock = time.Now
	}
	a := &Auctions{clock: clock, recorder: recorder, auctions: make(map[string]*auctionState), deadlines: newZset(),
		bidders: make(map[string]map[string]struct{}), gone: make(map[string][]auction.Event),
		watches: make(map[string]map[chan struct{}]struct{})}
	if recorder != nil {
		a.commit = &committer{db: recorder}
	}
	return a
}

// step runs fn on a copy of the auction's state under the lock and keeps the new state, its events and
// its deadline at once; with a record, the step is answered once its events are committed with those
// of other steps (see commit.go), and a failed commit undoes it. An answer never shows a step not yet
// committed: a refusal is answered from the earliest state that refuses it too, the last durable one
// or one a step not yet committed left, once that step is committed. A rev other than the config's (an
// empty rev checks none) leaves the auction as it was.
func (a *Auctions) step(ctx context.Context, id, rev, bidder string, fn func(s *auction.State, now time.Time) ([]auction.Event, error)) (auction.Outcome, error) {
	a.mu.Lock()
	as, ok := a.auctions[id]
	switch {
	case !ok:
		a.mu.Unlock()
		return auction.Outcome{}, auction.ErrNotFound
	case rev != "" && rev != as.state.Rev:
		a.mu.Unlock()
		return auction.Outcome{}, rushgate.ErrStale
	}
	now := a.clock().Truncate(time.Millisecond) // as Redis's scripts tell the time: events read alike
	next := as.state
	evs, err := fn(&next, now)
	// A leader's raised maximum, and an ended auction's new title or message, are state without an event.
	silent := next.LeaderMax != as.state.LeaderMax || next.Rev != as.state.Rev
	if err != nil && len(evs) == 0 && !silent && a.commit != nil && as.pending() {
		// A refusal takes its place before the steps not yet committed (none of them is answered yet,
		// so any order among them holds) and after as few as refuse it: one that the last durable state
		// refuses too is answered from that state at once, and stays true whatever becomes of the
		// steps being committed; otherwise it waits only for the commit of the earliest step after
		// which the auction refuses it, and shows the state that step left, not the later ones. A bid
		// below the price before a crowd's last bids need not wait for their fsyncs.
		refuses := func(st auction.State) (auction.State, error, bool) {
			past := st
			pevs, perr := fn(&past, now)
			return past, perr, perr != nil && len(pevs) == 0 && past.LeaderMax == st.LeaderMax
		}
		if past, perr, ok := refuses(as.durable); ok {
			a.mu.Unlock()
			return auction.Outcome{State: past}, perr
		}
		for _, u := range as.undurable {
			if past, perr, ok := refuses(u.state); ok {
				a.mu.Unlock()
				if werr := u.group.wait(); werr != nil {
					return auction.Outcome{}, fmt.Errorf("recording auction %s: %w", id, werr)
				}
				return auction.Outcome{State: past}, perr
			}
		}
	}
	a.keep(id, as, next, evs)
	var g *group
	var qerr error
	switch {
	case a.commit == nil: // no record: every step is as durable as it gets
		as.durable, as.kept = next, len(as.events)
		if len(evs) > 0 {
			a.tell(id)
		}
	case len(evs) > 0 || silent:
		// A bidder outbid at once by the leader's maximum is named by no event of the step, only the
		// leader is: it is recorded on its own, so that a restart still counts it (see load).
		unnamed := err == nil && bidder != "" && !a.hasBidder(id, bidder) &&
			!slices.ContainsFunc(evs, func(e auction.Event) bool { return e.Bidder == bidder })
		g, qerr = a.commit.enqueue(change{
			add: func(b *record.Batch) {
				b.AddAuction(id, next, evs)
				if unnamed {
					b.AddBidder(id, bidder)
				}
			},
			settle: func(err error) { a.settle(id, as, next, err) },
		})
		if qerr == nil {
			as.undurable = append(as.undurable, undurable{state: next, group: g})
		}
	case as.pending():
		g, qerr = a.commit.last() // the answer shows events not yet durable
	}
	if qerr != nil {
		a.rollback(id, as)
		a.mu.Unlock()
		return auction.Outcome{}, qerr
	}
	a.mu.Unlock()
	if werr := g.wait(); werr != nil {
		return auction.Outcome{}, fmt.Errorf("recording auction %s: %w", id, werr)
	}
	return auction.Outcome{State: next, Events: evs}, err
}

// keep makes st and evs the auction's state and newest events, and its deadline follow.
func (a *Auctions) keep(id string, as *auctionState, st auction.State, evs []auction.Event) {
	as.state = st
	as.events = append(as.events, evs...)
	if st.Over() {
		a.deadlines.Remove(id)
	} else {
		a.deadlines.Add(id, unixNano(st.EndsAt))
	}
}

// settle makes the step that led to st durable, or rolls back every step not yet durable.
func (a *Auctions) settle(id string, as *auctionState, st auction.State, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.rollback(id, as)
		return
	}
	news := int(st.Seq) > as.kept         // none for a leader's raised maximum: no feed needs waking
	as.durable, as.kept = st, int(st.Seq) // event seq k is events[k-1]
	// Steps settle in the order they were taken: this one is the oldest not yet durable.
	as.undurable[0] = undurable{}
	as.undurable = as.undurable[1:]
	if news {
		a.tell(id)
	}
}

// Watch implements [auction.Watcher]: the channel hears of every step whose events became durable,
// until ctx ends. The service announces the steps it takes itself, but not those a read takes: a Get
// after the end closes the auction, and the sampler reads each auction every second, so it was often
// a read, not the closer, that closed one, and its open feeds never heard of the close.
func (a *Auctions) Watch(ctx context.Context, id string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	a.mu.Lock()
	if a.watches[id] == nil {
		a.watches[id] = make(map[chan struct{}]struct{})
	}
	a.watches[id][ch] = struct{}{}
	a.mu.Unlock()
	context.AfterFunc(ctx, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.watches[id], ch)
		if len(a.watches[id]) == 0 {
			delete(a.watches, id)
		}
		close(ch)
	})
	return ch
}

// tell tells the auction's watches that it has new durable events; a.mu is held. A watch with a change
// pending already hears of both at once.
func (a *Auctions) tell(id string) {
	for ch := range a.watches[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// rollback forgets the steps not yet durable: the auction is as its last committed step left it.
func (a *Auctions) rollback(id string, as *auctionState) {
	as.events = as.events[:as.kept]
	clear(as.undurable)
	as.undurable = as.undurable[:0]
	a.keep(id, as, as.durable, nil)
}

// replaceable reports whether the auction may be replaced or deleted: not once it has bids or was
// sold (ErrStarted), nor while changes of it are still being recorded.
func (as *auctionState) replaceable() error {
	switch {
	case as.state.Bids > 0 || as.state.Sold:
		return auction.ErrStarted
	case as.pending():
		return errRecording
	}
	return nil
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
		if err := as.replaceable(); err != nil {
			return err
		}
		st.Seq, events = as.state.Seq, as.events
	} else {
		events = a.gone[id]
		if len(events) == 0 && a.recorder != nil {
			// Deleted in an earlier run, perhaps: the record kept its events (see ForgetAuction).
			recorded, err := a.recorder.Events(ctx, id)
			if err != nil {
				return fmt.Errorf("%w: reading auction %s: %w", rushgate.ErrUnavailable, id, err)
			}
			events = recorded
		}
		if len(events) > 0 {
			st.Seq = events[len(events)-1].Seq
		}
	}
	if a.recorder != nil {
		var b record.Batch
		b.AddAuction(id, st, nil)
		if err := a.recorder.Commit(ctx, &b); err != nil {
			return fmt.Errorf("%w: recording auction %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	a.auctions[id] = &auctionState{state: st, events: events, durable: st, kept: len(events)}
	delete(a.gone, id)
	a.deadlines.Add(id, unixNano(cfg.EndsAt))
	return nil
}

// Delete implements [auction.Store]; the record forgets the auction's state in the same step, so that a
// restart does not bring it back. Its events stay (here and in the record), so that an auction created
// again under the id goes on from them, as a replacement does and as on Redis: a feed that resumes
// after the deleted auction's last event misses none of the new one's.
func (a *Auctions) Delete(ctx context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	as, ok := a.auctions[id]
	if !ok {
		return auction.ErrNotFound
	}
	if err := as.replaceable(); err != nil {
		return err
	}
	if a.recorder != nil {
		if err := a.recorder.ForgetAuction(ctx, id); err != nil {
			return fmt.Errorf("%w: forgetting auction %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	delete(a.auctions, id)
	if len(as.events) > 0 {
		a.gone[id] = as.events
	}
	delete(a.bidders, id)
	a.deadlines.Remove(id)
	return nil
}

// load puts back an auction saved by an earlier run (its state and events), so that an embedded
// instance resumes where it stopped; overdue ones are then closed by the first step or the closer.
func (a *Auctions) load(id string, st auction.State, evs []auction.Event, bidders []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put(id, st, evs)
	for _, b := range bidders {
		a.counted(id, b)
	}
}

// put keeps an auction in state st with its events, counting its bidders and indexing its end.
func (a *Auctions) put(id string, st auction.State, evs []auction.Event) {
	st.Rev = rushgate.NewRevision()
	a.auctions[id] = &auctionState{state: st, events: append([]auction.Event(nil), evs...), durable: st, kept: len(evs)}
	for _, e := range evs {
		if e.Kind == auction.EventBid || e.Kind == auction.EventSold {
			a.counted(id, e.Bidder)
		}
	}
	if st.Over() {
		a.deadlines.Remove(id)
	} else {
		a.deadlines.Add(id, unixNano(st.EndsAt))
	}
}

// Restore implements [auction.Store]: the embedded backend loses no auction its record holds (Open
// loads them), but it takes one back all the same, recording its state.
func (a *Auctions) Restore(ctx context.Context, id string, st auction.State, evs []auction.Event) error {
	if err := auction.Rising(evs, st.Seq); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if as, ok := a.auctions[id]; ok {
		if err := as.replaceable(); err != nil {
			return err
		}
	}
	if a.recorder != nil {
		var b record.Batch
		b.AddAuction(id, st, evs)
		if err := a.recorder.Commit(ctx, &b); err != nil {
			return fmt.Errorf("%w: recording auction %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	a.put(id, st, evs)
	return nil
}

// Get implements [auction.Store].
func (a *Auctions) Get(ctx context.Context, id string) (auction.State, error) {
	o, err := a.step(ctx, id, "", "", func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.CloseIfDue(now), nil })
	return o.State, err
}

// Bid implements [auction.Store].
func (a *Auctions) Bid(ctx context.Context, id, rev string, b auction.Bid) (auction.Outcome, error) {
	o, err := a.step(ctx, id, rev, b.Bidder, func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.Bid(b, now) })
	if err == nil {
		a.count(id, b.Bidder)
	}
	return o, err
}

// BuyNow implements [auction.Store].
func (a *Auctions) BuyNow(ctx context.Context, id, rev, bidder string) (auction.Outcome, error) {
	o, err := a.step(ctx, id, rev, bidder, func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.BuyNow(bidder, now) })
	if err == nil {
		a.count(id, bidder)
	}
	return o, err
}

// count adds a bidder whose action was taken, and is durable, to the auction's bidders. It runs after
// the step rather than in it: a step may try a refused bid against earlier states (see step), which
// take it.
func (a *Auctions) count(id, bidder string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counted(id, bidder)
}

// hasBidder reports whether a bidder is counted already; a.mu is held.
func (a *Auctions) hasBidder(id, bidder string) bool {
	_, ok := a.bidders[id][bidder]
	return ok
}

// counted adds a bidder to the auction's bidders; a.mu is held.
func (a *Auctions) counted(id, bidder string) {
	if _, ok := a.auctions[id]; !ok {
		return // deleted meanwhile
	}
	set := a.bidders[id]
	if set == nil {
		set = make(map[string]struct{})
		a.bidders[id] = set
	}
	set[bidder] = struct{}{}
}

// Bidders implements [auction.Store]. After a restart it counts the bidders the restored events name.
func (a *Auctions) Bidders(_ context.Context, id string) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int64(len(a.bidders[id])), nil
}

// HasBidder implements [auction.Store].
func (a *Auctions) HasBidder(_ context.Context, id, bidder string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hasBidder(id, bidder), nil
}

// Reschedule implements [auction.Store].
func (a *Auctions) Reschedule(ctx context.Context, id string, end time.Time) (auction.Outcome, error) {
	end = end.Truncate(time.Millisecond)
	return a.step(ctx, id, "", "", func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.Reschedule(end, now) })
}

// Amend implements [auction.Store]: a step that takes the new title and message and gives the config
// a new revision, so that bids checked against the old one are checked again.
func (a *Auctions) Amend(ctx context.Context, id, rev string, cfg auction.Config) (auction.Outcome, error) {
	if rev == "" {
		return auction.Outcome{}, rushgate.ErrStale // a step with no revision checks none
	}
	return a.step(ctx, id, rev, "", func(s *auction.State, now time.Time) ([]auction.Event, error) {
		s.Rev = rushgate.NewRevision()
		return s.Amend(cfg.Title, cfg.Message, now), nil
	})
}

// Close implements [auction.Store].
func (a *Auctions) Close(ctx context.Context, id string) (auction.Outcome, error) {
	return a.step(ctx, id, "", "", func(s *auction.State, now time.Time) ([]auction.Event, error) { return s.CloseIfDue(now), nil })
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
	// Sequence numbers start at 1 and have no gaps, so event seq k sits at index k-1. Only durable
	// events are shown: a feed must not tell of a bid that a failed commit then undoes.
	start := min(max(after, 0), int64(as.kept))
	end := min(start+int64(limit), int64(as.kept))
	return append([]auction.Event(nil), as.events[start:end]...), nil
}

// List implements [auction.Store].
func (a *Auctions) List(_ context.Context, after string, limit int) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return page(maps.Keys(a.auctions), after, limit), nil
}

// page returns up to limit of ids after the id after, in order. Sorting on each call is O(n log n) in
// the entities, which only an admin's list pays.
func page(ids iter.Seq[string], after string, limit int) []string {
	out := []string{}
	for id := range ids {
		if id > after {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out[:min(limit, len(out))]
}
