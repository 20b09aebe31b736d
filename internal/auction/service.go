package auction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/visitor"
)

// Record is the durable record of auctions, which outlives the state store: an auction the store does
// not know but the record holds was lost by the store (Redis restarted without its data) or deleted
// there without bids, and Put takes it back from the record instead of starting it afresh under event
// numbers already used. The SQL record is one.
type Record interface {
	// Auction returns the recorded state and events of an auction; ErrNotFound when there is none.
	Auction(ctx context.Context, id string) (State, []Event, error)
}

// ServiceOptions configure a [Service].
type ServiceOptions struct {
	// Gate is the waiting room that auctions with a room sit behind; the room service is one.
	Gate rushgate.Gatekeeper
	// Logger receives errors from the closer; nil means slog.Default().
	Logger *slog.Logger
	// Poll is the longest the closer sleeps, which also picks up auctions created by other
	// instances; 0 means one second.
	Poll time.Duration
	// History, when set, receives every auction's figures each second once Start runs, and serves
	// [Service.History].
	History rushgate.History
	// Audit, when set, records every operator's change of an auction.
	Audit rushgate.Audit
	// Record, when set, is the durable record of auctions, which Put consults before it creates one.
	Record Record
	// Clock dates the operator's controls and audit entries; nil means time.Now.
	Clock func() time.Time
}

// Service runs auctions on a [Store]: a closer that wakes at the nearest deadline of the index and
// closes what is due, and hubs that fan each auction's new events out to its live feeds (see Follow).
// Several instances may run closers at once; closing is idempotent.
type Service struct {
	store Store
	gate  rushgate.Gatekeeper
	log   *slog.Logger
	poll  time.Duration
	wakeC chan struct{}

	mu      sync.Mutex
	hubs    map[string]*hub // the live feeds of each followed auction (see Follow)
	live    context.Context // the watches' parent, from Start to Stop
	watches sync.WaitGroup  // of other instances' changes, one per followed auction

	configs rushgate.Configs[Config] // what bids are checked against, by revision

	history rushgate.History
	seen    rushgate.Seen[Summary] // what the sampler read of each auction
	audit   rushgate.Audit
	record  Record
	clock   func() time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

// NewService returns a service over store; Start runs its closer.
func NewService(store Store, opts ServiceOptions) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Service{store: store, gate: opts.Gate, log: opts.Logger, poll: opts.Poll, wakeC: make(chan struct{}, 1),
		history: opts.History, audit: opts.Audit, record: opts.Record, clock: opts.Clock,
		hubs: make(map[string]*hub), cancel: func() {}, done: make(chan struct{})}
}

// Start closes every overdue auction, then keeps closing them at their deadlines and sampling every
// auction each second until Stop.
func (s *Service) Start(ctx context.Context) {
	s.CloseDue(ctx)
	ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.live = ctx
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		var wg sync.WaitGroup
		wg.Go(func() { rushgate.Sampled(ctx, s.Sample) })
		s.closer(ctx)
		wg.Wait()
	}()
}

// Stop ends the closer and the watches of live feeds, and waits for them. Call it once, after Start.
func (s *Service) Stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	s.live = nil // Follow starts no watch from here on, so none is added while Wait waits
	s.mu.Unlock()
	s.watches.Wait()
}

func (s *Service) closer(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := s.CloseDue(ctx)
		delay := s.poll
		if !next.IsZero() {
			delay = min(delay, max(0, time.Until(next)+time.Millisecond))
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return
		case <-s.wakeC:
		case <-timer.C:
		}
	}
}

// CloseDue closes every auction whose end has passed and returns the next deadline (zero if none, or if
// a whole page of due auctions closed none, so that an index that disagrees with the auctions' own ends
// costs a poll interval, never a busy loop).
func (s *Service) CloseDue(ctx context.Context) time.Time {
	for {
		ids, next, err := s.store.Due(ctx, duePage)
		if err != nil {
			s.log.Warn("auction deadlines unavailable", "err", err)
			return time.Time{}
		}
		closed := 0
		for _, id := range ids {
			o, err := s.store.Close(ctx, id)
			if err != nil {
				s.log.Warn("closing auction failed", "auction", id, "err", err)
				continue
			}
			if len(o.Events) > 0 {
				closed++
				s.publish(id)
			}
		}
		switch {
		case len(ids) < duePage:
			return next
		case closed == 0:
			s.log.Warn("a page of due auctions closed none; retrying after the poll interval", "first", ids[0])
			return time.Time{}
		}
	}
}

// duePage is how many due auctions CloseDue asks the index for at a time.
const duePage = 100

func (s *Service) wake() {
	select {
	case s.wakeC <- struct{}{}:
	default:
	}
}

// Put creates or replaces an auction, waking the closer in case its deadline is the nearest. Once it
// has bids or was sold, only its title and message change, before its end and after (see
// [Store.Amend]); a change of any other field is a *FixedError.
// The change is audited. An auction that the store does not know but the record holds is taken back
// from the record (see [Record]): as recorded when it had bids or was sold, and then a config other
// than its own is refused as for any auction with bids; otherwise as put, its numbering going on.
func (s *Service) Put(ctx context.Context, id string, cfg Config) error {
	old, err := s.store.Get(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	e := rushgate.Entry{At: s.clock().UTC(), Kind: "auction", ID: id, Action: rushgate.ActionUpdate, Changes: rushgate.Diff(old.Config, cfg)}
	if err != nil {
		e.Action, e.Changes = rushgate.ActionCreate, rushgate.Diff(nil, cfg)
		if restored, err := s.restore(ctx, id, cfg, e); restored || err != nil {
			return err
		}
	}
	if err := s.store.Put(ctx, id, cfg); err != nil {
		if errors.Is(err, ErrStarted) {
			return s.amend(ctx, id, cfg)
		}
		return err
	}
	s.changedConfig(id)
	rushgate.Audited(ctx, s.audit, s.log, e)
	return nil
}

// Patch changes the fields of an auction that patch names (a JSON merge patch, RFC 7396) and puts the
// result as Put does: an operator corrects a title, or tells the bidders something, in one field.
func (s *Service) Patch(ctx context.Context, id string, patch []byte) error {
	old, err := s.store.Get(ctx, id)
	if err != nil {
		return err
	}
	merged, err := rushgate.MergePatch(old.Config, patch)
	if de, ok := errors.AsType[*rushgate.DecodeError](err); ok {
		return &ConfigError{de.Field, de.Reason}
	}
	if err != nil {
		return err
	}
	cfg, err := DecodeConfig(merged)
	if err != nil {
		return err
	}
	return s.Put(ctx, id, cfg)
}

// amend changes an auction that has bids, or was sold, to cfg: its title and message alone (a change of
// any other field is a *FixedError), against the config it read (again, if another change came
// first); the change is audited and its live feeds hear of it.
func (s *Service) amend(ctx context.Context, id string, cfg Config) error {
	for range 3 {
		old, err := s.store.Get(ctx, id)
		if err != nil {
			return err
		}
		want, got := old.Config, cfg
		want.Title, want.Message = cfg.Title, cfg.Message
		for _, c := range []*Config{&want, &got} {
			if c.Identity == "" {
				c.Identity = visitor.IdentityAny
			}
		}
		if changes := rushgate.Diff(want, got); len(changes) > 0 {
			return &FixedError{changes[0].Field}
		}
		if cfg.Title == old.Config.Title && cfg.Message == old.Config.Message {
			return nil // put again as it was (a deploy script): no event, no entry
		}
		o, err := s.store.Amend(ctx, id, old.Rev, cfg)
		if errors.Is(err, rushgate.ErrStale) {
			continue
		}
		if len(o.Events) > 0 || err == nil {
			s.changedConfig(id)
		}
		if err != nil {
			return err
		}
		rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "auction", ID: id, Action: rushgate.ActionUpdate,
			Changes: rushgate.Diff(old.Config, o.State.Config)})
		return nil
	}
	return rushgate.ErrUnavailable
}

// restore takes back from the record an auction the store does not know, reporting false when the
// record holds none of that id. One with bids or sold comes back as recorded (audited as a restore);
// one without starts as put, its history going on from the recorded events as a replacement's does
// (audited as e, a create).
func (s *Service) restore(ctx context.Context, id string, cfg Config, e rushgate.Entry) (bool, error) {
	if s.record == nil {
		return false, nil
	}
	st, evs, err := s.record.Auction(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%w: reading auction %s: %w", rushgate.ErrRecordUnavailable, id, err)
	}
	if n := len(evs); n > 0 {
		st.Seq = max(st.Seq, evs[n-1].Seq)
	}
	started := st.Bids > 0 || st.Sold
	if !started {
		seq := st.Seq
		st = New(cfg)
		st.Seq = seq
	}
	if err := s.store.Restore(ctx, id, st, evs); err != nil {
		return true, err
	}
	s.changedConfig(id)
	if started {
		s.log.WarnContext(ctx, "auction restored from the record: the state store had lost it", "auction", id, "bids", st.Bids)
		e.Action, e.Changes = rushgate.ActionRestore, rushgate.Diff(nil, st.Config)
	}
	rushgate.Audited(ctx, s.audit, s.log, e)
	if started && len(rushgate.Diff(st.Config, cfg)) > 0 {
		return true, ErrStarted
	}
	return true, nil
}

// changedConfig tells what caches or watches an auction that it changed: its cached config, the
// closer (its deadline may be the nearest now), the sampler (it may take bids again) and its live
// feeds.
func (s *Service) changedConfig(id string) {
	s.configs.Forget(id)
	s.seen.Wake(id)
	s.wake()
	s.publish(id)
}

// Delete removes an auction that has no bids, ending its live feeds.
func (s *Service) Delete(ctx context.Context, id string) error {
	old, err := s.store.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.Delete(ctx, id); err != nil {
		return err
	}
	s.configs.Forget(id)
	s.seen.Forget(id)
	s.publish(id)
	if s.history != nil {
		_ = s.history.Forget(context.WithoutCancel(ctx), entity(id))
	}
	rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "auction", ID: id, Action: rushgate.ActionDelete, Changes: rushgate.Diff(old.Config, nil)})
	return nil
}

// Get returns the auction's state, closed first if overdue.
func (s *Service) Get(ctx context.Context, id string) (State, error) { return s.store.Get(ctx, id) }

// Bidded reports whether visitor's bid or buy-now on auction id was taken, however many bids came
// since: a page opened anew tells such a visitor that it has been outbid. ErrNotFound when there is
// no such auction. Every page of the auction asks it once, so an auction this instance holds the
// config of (any that was bid on through it) costs one read at most, whether the visitor bid or not.
func (s *Service) Bidded(ctx context.Context, id, visitor string) (bool, error) {
	if visitor != "" {
		if ok, err := s.store.HasBidder(ctx, id, visitor); err != nil || ok {
			return ok, err
		}
	}
	if _, _, ok := s.configs.Get(id); ok {
		return false, nil
	}
	_, err := s.store.Get(ctx, id)
	return false, err
}

// Bid applies a bid and pushes its events. A bidder the auction does not take is refused with
// rushgate.ErrIdentityRequired or rushgate.ErrAdmissionRequired (a shows the admission it presented,
// nil for none).
func (s *Service) Bid(ctx context.Context, id string, b Bid, a *rushgate.Admission) (Outcome, error) {
	return s.guarded(ctx, id, b.Bidder, a, func(rev string) (Outcome, error) { return s.store.Bid(ctx, id, rev, b) })
}

// BuyNow sells the auction to bidder and pushes the sale, refusing a bidder the auction does not take
// as Bid does.
func (s *Service) BuyNow(ctx context.Context, id, bidder string, a *rushgate.Admission) (Outcome, error) {
	return s.guarded(ctx, id, bidder, a, func(rev string) (Outcome, error) { return s.store.BuyNow(ctx, id, rev, bidder) })
}

// guarded runs a bidder's step after checking the bidder against the auction's config. The config
// comes from the service's cache and the step names its revision, so a bid costs no read of the
// auction, and one checked against a config replaced since is refused by the store and checked again.
func (s *Service) guarded(ctx context.Context, id, bidder string, a *rushgate.Admission, step func(rev string) (Outcome, error)) (Outcome, error) {
	var o Outcome
	err := s.configs.Run(id, func() (Config, string, error) {
		st, err := s.store.Get(ctx, id)
		return st.Config, st.Rev, err
	}, func(cfg Config, rev string) error {
		if err := s.authorize(ctx, cfg, bidder, a); err != nil {
			return err
		}
		var err error
		o, err = step(rev)
		if len(o.Events) > 0 {
			s.publish(id) // also the events of a close that happened in a refused step
		}
		return err
	})
	return o, err
}

// authorize checks that bidder is of the identity the auction counts and, behind a room, holds a live
// admission of it.
func (s *Service) authorize(ctx context.Context, cfg Config, bidder string, a *rushgate.Admission) error {
	if cfg.Identity == visitor.IdentitySite && !visitor.Subject(bidder) {
		return rushgate.ErrIdentityRequired
	}
	if cfg.Room == "" {
		return nil
	}
	if s.gate == nil {
		return rushgate.ErrAdmissionRequired
	}
	return rushgate.CheckAdmission(ctx, s.gate, cfg.Room, bidder, a)
}

// Events returns the auction's events after a sequence number.
func (s *Service) Events(ctx context.Context, id string, after int64, limit int) ([]Event, error) {
	return s.store.Events(ctx, id, after, limit)
}
