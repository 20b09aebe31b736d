package drop

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/visitor"
)

// Service runs drops on a [Store] and owns their rules that reach beyond one drop: who may claim (the
// identity a drop counts, the admission of the room it sits behind) and handing the admission back
// when a claim succeeds (release_on_claim), so that the next visitor in line gets in.
type Service struct {
	store   Store
	gate    rushgate.Gatekeeper
	log     *slog.Logger
	configs rushgate.Configs[Config] // what claims are checked against, by revision

	history rushgate.History
	seen    rushgate.Seen[Summary] // what the sampler read of each drop
	audit   rushgate.Audit
	record  Record
	clock   func() time.Time

	redemptions Redemptions
	observer    Observer
	ended       Ended
	told        sync.Map // drop id -> the key of the end told to ended

	ctx     context.Context // ends at Stop; releases being retried and the sampler stop with it
	cancel  context.CancelFunc
	retries sync.WaitGroup

	listedMu sync.Mutex
	listed   map[string]listedIndex // by drop: the index of its listed codes, for lookups by code

	feedsMu     sync.Mutex
	feeds       map[string]*feed // the followed drops (see Follow)
	stopped     bool             // by Stop: Follow starts no reader, so none is added while Stop waits
	feedReaders sync.WaitGroup
}

// Record is the durable record of claims, which outlives the state store: a drop is never deleted
// once claimed, so claims recorded under an id the store does not know mean that the store lost the
// drop (Redis restarted without its data), and Put takes it back with them instead of handing its
// stock out again. The SQL record is one.
type Record interface {
	// Claims returns the recorded claims of a drop, in order, with their idempotency keys.
	Claims(ctx context.Context, id string) ([]Claim, error)
}

// Options configure a [Service].
type Options struct {
	// Gate is the waiting room that drops with a room sit behind; the room service is one.
	Gate rushgate.Gatekeeper
	// Logger receives errors from background work; nil means slog.Default().
	Logger *slog.Logger
	// History, when set, receives every drop's figures each second once Start runs, and serves
	// [Service.History].
	History rushgate.History
	// Audit, when set, records every operator's change of a drop.
	Audit rushgate.Audit
	// Record, when set, is the durable record of claims, which Put consults before it creates a drop.
	Record Record
	// Redemptions, when set, keeps which codes were used at checkouts (see [Service.Redeem]); without
	// it codes cannot be redeemed.
	Redemptions Redemptions
	// Observer, when set, hears of redemptions and of codes presented again.
	Observer Observer
	// Ended, when set, hears of each drop's end that the sampler finds (see [Ended]).
	Ended Ended
	// Clock dates the operator's controls and audit entries; nil means time.Now.
	Clock func() time.Time
}

// Ended is told when a drop stops taking claims: sold out, or closed (its closes_at passed). The
// sampler of every instance finds the end and tells it, again after a restart, so an Ended takes each
// end once however often it is told; the SQL record, which queues the site's webhook, is one.
type Ended interface {
	QueueDropEnded(ctx context.Context, id string, cfg Config, status Status, claimed int, at time.Time) error
}

// NewService returns a service over store.
func NewService(store Store, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{store: store, gate: opts.Gate, log: opts.Logger, history: opts.History, audit: opts.Audit,
		record: opts.Record, redemptions: opts.Redemptions, observer: opts.Observer, ended: opts.Ended, clock: opts.Clock, ctx: ctx, cancel: cancel, feeds: make(map[string]*feed),
		listed: make(map[string]listedIndex)}
}

// Start samples every drop's figures each second until Stop, into the history and for [Service.Latest].
func (s *Service) Start() {
	s.retries.Go(func() { rushgate.Sampled(s.ctx, s.Sample) })
}

// Stop ends the releases still being retried, the sampler and the reads of live feeds, and waits for
// them.
func (s *Service) Stop() {
	s.cancel()
	s.feedsMu.Lock()
	s.stopped = true
	s.feedsMu.Unlock()
	s.retries.Wait()
	s.feedReaders.Wait()
}

// ClaimRequest is one visitor's attempt to claim a unit.
type ClaimRequest struct {
	Drop    string
	Visitor string
	// Key is the Idempotency-Key: a repeat with the same key answers with the first claim.
	Key string
	// Admission is the admission the visitor showed, nil for none; a drop behind a room needs it.
	Admission *rushgate.Admission
}

// Claim takes one unit for the visitor, refusing with rushgate.ErrIdentityRequired or
// rushgate.ErrAdmissionRequired a visitor the drop does not take, and otherwise as [Store.Claim] does.
// The visitor is checked against the drop's cached config and the claim names its revision, so a claim
// costs no read of the drop, and one checked against a config replaced since is checked again.
// With release_on_claim a successful claim ends the admission it was made with; if the room's store
// cannot be reached, the release is retried in the background until it is done or the service stops.
// Behind a room that follows the drop's stock, the claim first holds a unit in the room, gives it back
// if it fails, always ends the admission when it succeeds, and tells the room when the stock is gone.
func (s *Service) Claim(ctx context.Context, req ClaimRequest) (c Claim, created bool, err error) {
	err = s.configs.Run(req.Drop, func() (Config, string, error) {
		info, err := s.store.Get(ctx, req.Drop)
		return info.Config, info.Rev, err
	}, func(cfg Config, rev string) error {
		if cfg.Identity == visitor.IdentitySite && !visitor.Subject(req.Visitor) {
			return rushgate.ErrIdentityRequired
		}
		if cfg.Room == "" {
			var err error
			c, created, err = s.store.Claim(ctx, req.Drop, rev, req.Visitor, req.Key)
			return err
		}
		a := req.Admission
		if a == nil || a.Room != cfg.Room || a.Visitor != req.Visitor {
			return rushgate.ErrAdmissionRequired
		}
		// The room checks the admission and, if it follows this drop's stock, holds a unit for it.
		held, err := s.gate.Hold(ctx, cfg.Room, req.Drop, req.Visitor, a.ID)
		if errors.Is(err, rushgate.ErrSoldOut) {
			return ErrSoldOut
		}
		if err != nil {
			return err
		}
		c, created, err = s.store.Claim(ctx, req.Drop, rev, req.Visitor, req.Key)
		// What follows must be done even if the client stops waiting.
		after := context.WithoutCancel(ctx)
		if err != nil && held {
			s.ensure(after, "give back a unit", cfg.Room, func(ctx context.Context) error { return s.gate.Unhold(ctx, cfg.Room, req.Drop) })
		}
		if err == nil && (cfg.ReleaseOnClaim || held) {
			// A room that follows the stock counts this admission's unit as claimed now.
			s.release(after, cfg.Room, req.Visitor, a.ID)
		}
		if held && (errors.Is(err, ErrSoldOut) || (err == nil && c.Seq >= int64(cfg.Stock))) {
			s.ensure(after, "mark the room sold out", cfg.Room, func(ctx context.Context) error { return s.gate.SoldOut(ctx, cfg.Room, req.Drop) })
		}
		return err
	})
	return c, created, err
}

// retryBackoff bounds the waits between tries of a release whose room could not be reached; a retried
// release gives up after retryFor, by which time the admission has almost surely run out anyway.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 5 * time.Second
	retryFor   = time.Hour
)

// release ends the admission a claim was made with. An admission already gone is fine.
func (s *Service) release(ctx context.Context, room, vid, admissionID string) {
	s.ensure(ctx, "release an admission after a claim", room, func(ctx context.Context) error {
		return s.gate.Release(ctx, room, vid, admissionID)
	})
}

// ensure runs a step on the room a claim must not leave undone: one the room's store could not take
// now is retried in the background until it is done or the service stops. Any answer but
// ErrUnavailable ends it.
func (s *Service) ensure(ctx context.Context, what, room string, step func(context.Context) error) {
	err := step(ctx)
	if !errors.Is(err, rushgate.ErrUnavailable) {
		return
	}
	s.retries.Go(func() {
		deadline := time.Now().Add(retryFor)
		for wait := retryFirst; time.Now().Before(deadline); wait = min(2*wait, retryMax) {
			select {
			case <-s.ctx.Done():
				s.log.Warn("stopping before a room step was done", "step", what, "room", room, "err", err)
				return
			case <-time.After(wait):
			}
			if err = step(s.ctx); !errors.Is(err, rushgate.ErrUnavailable) {
				return
			}
		}
		s.log.Warn("gave up a room step", "step", what, "room", room, "err", err)
	})
}

// Put creates a drop or replaces it while nothing is claimed, audits the change, and returns the drop
// as it now stands. A drop that the store lost but the record holds claims of is restored with them
// (see [Record]); a stock below them is refused. Once a drop has claims, only its title, message,
// stock and times change, and its per_visitor goes up (see [Store.Amend]); a change of any other field
// is a *FixedError.
func (s *Service) Put(ctx context.Context, id string, cfg Config) (Info, error) {
	defer s.changed(id)
	old, err := s.store.Get(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Info{}, err
	}
	if err == nil && old.Claimed > 0 {
		return s.amend(ctx, id, old, cfg)
	}
	moved := err == nil && cfg.Room != old.Config.Room
	if moved {
		if err := s.unfollowed(ctx, old.Config.Room, id); err != nil {
			return Info{}, err
		}
		if old.Config, err = s.whole(ctx, id, old); err != nil {
			return Info{}, err
		}
	}
	now := Info{Config: cfg, Listed: len(cfg.Codes)}
	e := rushgate.Entry{At: s.clock().UTC(), Kind: "drop", ID: id, Action: rushgate.ActionUpdate, Changes: rushgate.Diff(old.audited(), now.audited())}
	if err != nil {
		e.Action, e.Changes = rushgate.ActionCreate, rushgate.Diff(nil, now.audited())
		claims, err := s.recorded(ctx, id)
		if err != nil {
			return Info{}, err
		}
		if len(claims) > 0 {
			if err := Numbered(claims); err != nil { // a record that is not every instance's
				return Info{}, fmt.Errorf("drop %s: the record misses claims (instances on one Redis need one shared record): %w", id, err)
			}
			if len(claims) > cfg.Stock {
				return Info{}, &ConfigError{"stock", fmt.Sprintf("the record holds %d claims of this drop, more than the stock", len(claims))}
			}
			if err := s.store.Restore(ctx, id, cfg, claims); err != nil {
				return Info{}, err
			}
			s.log.WarnContext(ctx, "drop restored from the record: the state store had lost it", "drop", id, "claims", len(claims))
			e.Action = rushgate.ActionRestore
			rushgate.Audited(ctx, s.audit, s.log, e)
			return Info{Config: cfg, Claimed: len(claims)}, nil
		}
	}
	if err := s.store.Put(ctx, id, cfg); err != nil {
		if errors.Is(err, ErrStarted) { // the first claims came in between
			if old, gerr := s.store.Get(ctx, id); gerr == nil && old.Claimed > 0 {
				return s.amend(ctx, id, old, cfg)
			}
		}
		return Info{}, err
	}
	if moved {
		if err := s.stillUnfollowed(ctx, old.Config, id); err != nil {
			return Info{}, err
		}
	}
	rushgate.Audited(ctx, s.audit, s.log, e)
	if e.Action == rushgate.ActionUpdate && cfg.Room == old.Config.Room && old.Config.tells(cfg) {
		s.restocked(ctx, id, cfg.Room)
	}
	return Info{Config: cfg}, nil
}

// tells reports whether a room that follows the drop must hear of the change from c to next: a new
// stock, a new opening or a new closing.
func (c Config) tells(next Config) bool {
	return c.Stock != next.Stock || !c.OpensAt.Equal(next.OpensAt) || !rushgate.SameTime(c.ClosesAt, next.ClosesAt)
}

// restocked tells the room a drop sits behind the level of the drop's stock, read anew at each try,
// until the room's store takes it: a room that follows the drop's stock admits as many more, or fewer.
// The sampler tells it again each second (see [Service.Sample]), which changes nothing unless the room
// missed it.
func (s *Service) restocked(ctx context.Context, id, room string) {
	if room == "" {
		return
	}
	s.ensure(context.WithoutCancel(ctx), "tell the room of the drop's new stock", room, func(ctx context.Context) error {
		info, err := s.store.Get(ctx, id)
		if err != nil || info.Config.Room != room {
			return err // gone or moved to another room since: nothing to tell this one
		}
		return s.gate.Restock(ctx, room, id, info.Level())
	})
}

// Patch changes the fields of a drop that patch names (a JSON merge patch, RFC 7396) and puts the result
// as Put does: an operator restocks a drop, or corrects its title, without sending its listed codes.
func (s *Service) Patch(ctx context.Context, id string, patch []byte) (Info, error) {
	old, err := s.store.Get(ctx, id)
	if err == nil && old.Listed > 0 {
		old.Config.Codes, err = s.store.Codes(ctx, id)
	}
	if err != nil {
		return Info{}, err
	}
	merged, err := rushgate.MergePatch(old.Config, patch)
	if de, ok := errors.AsType[*rushgate.DecodeError](err); ok {
		return Info{}, &ConfigError{de.Field, de.Reason}
	}
	if err != nil {
		return Info{}, err
	}
	cfg, err := DecodeConfig(merged)
	if err != nil {
		return Info{}, err
	}
	return s.Put(ctx, id, cfg)
}

// amend changes a drop that has claims to cfg, against the config it read (again, if another change
// came first), audits it, and tells a room that follows the drop how many units came or went.
func (s *Service) amend(ctx context.Context, id string, old Info, cfg Config) (Info, error) {
	for range 3 {
		if err := s.fixed(ctx, id, old, cfg); err != nil {
			return Info{}, err
		}
		if unchanged(old.Config, cfg) {
			return old, nil // put again as it was (a deploy script): nothing to tell anyone
		}
		err := s.store.Amend(ctx, id, old.Rev, cfg)
		switch {
		case errors.Is(err, rushgate.ErrStale):
			if old, err = s.store.Get(ctx, id); err != nil {
				return Info{}, err
			}
			continue
		case errors.Is(err, ErrBelowClaimed):
			return Info{}, &ConfigError{"stock", "must be at least the units claimed already"}
		case errors.Is(err, ErrSoldOut):
			return Info{}, &ConfigError{"stock", "the drop is sold out: its stock can no longer change"}
		case err != nil:
			return Info{}, err
		}
		now := Info{Config: cfg, Claimed: old.Claimed, Listed: old.Listed}
		if fresh, err := s.store.Get(ctx, id); err == nil {
			now = fresh
		}
		rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "drop", ID: id, Action: rushgate.ActionUpdate,
			Changes: rushgate.Diff(old.audited(), now.audited())})
		if old.Config.tells(cfg) {
			s.restocked(ctx, id, cfg.Room)
		}
		return now, nil
	}
	return Info{}, rushgate.ErrUnavailable
}

// unchanged reports whether cfg changes none of what may change once a drop has claims.
func unchanged(old, cfg Config) bool {
	return old.Title == cfg.Title && old.Message == cfg.Message && old.Stock == cfg.Stock && old.PerVisitor == cfg.PerVisitor &&
		old.OpensAt.Equal(cfg.OpensAt) && rushgate.SameTime(old.ClosesAt, cfg.ClosesAt)
}

// fixed refuses, with a *FixedError naming the first, a change of the fields that a drop's claims were
// made under: all but its title, message, stock and times, and a per_visitor that goes up. A lower
// per_visitor would leave visitors holding more than it allows, which is refused as a config error.
func (s *Service) fixed(ctx context.Context, id string, old Info, cfg Config) error {
	if cfg.PerVisitor < old.Config.PerVisitor {
		return &ConfigError{"per_visitor", "may go up once the drop has claims, not down"}
	}
	want := old.Config
	want.Title, want.Message, want.Stock, want.OpensAt, want.ClosesAt = cfg.Title, cfg.Message, cfg.Stock, cfg.OpensAt, cfg.ClosesAt
	want.PerVisitor = cfg.PerVisitor
	if old.Listed > 0 && len(cfg.Codes) == old.Listed {
		codes, err := s.store.Codes(ctx, id)
		if err != nil {
			return err
		}
		want.Codes = codes
	} else if old.Listed != len(cfg.Codes) {
		return &FixedError{"codes"}
	}
	if want.Identity == "" {
		want.Identity = visitor.IdentityAny
	}
	if cfg.Identity == "" {
		cfg.Identity = visitor.IdentityAny
	}
	if changes := rushgate.Diff(want, cfg); len(changes) > 0 {
		return &FixedError{changes[0].Field}
	}
	return nil
}

// unfollowed returns a *FollowedError if room, the room the drop sits behind, follows its stock: the
// drop may not leave it. A room linked between this check and the change is caught by
// [Service.stillUnfollowed] after it.
func (s *Service) unfollowed(ctx context.Context, room, id string) error {
	if room == "" || s.gate == nil {
		return nil
	}
	follows, err := s.gate.Follows(ctx, room, id)
	if err != nil {
		return err
	}
	if follows {
		return &FollowedError{Room: room}
	}
	return nil
}

// stillUnfollowed checks again, once a drop is deleted or moved from behind its room, that the room
// does not follow it: a room linked after the check before the change but before the change itself
// was not seen then, and the room's service, which reads the drop again after writing its link, may
// have read it before this change. Of the two, at least one sees the other; here the drop is put back
// as it was (nothing is claimed of it: neither change is allowed otherwise), and the change refused.
func (s *Service) stillUnfollowed(ctx context.Context, was Config, id string) error {
	err := s.unfollowed(ctx, was.Room, id)
	if !errors.Is(err, ErrFollowed) {
		return nil // not followed, or the room cannot tell: the change stands
	}
	if perr := s.store.Put(context.WithoutCancel(ctx), id, was); perr != nil {
		s.log.ErrorContext(ctx, "a drop a room came to follow during its change is not put back", "drop", id, "room", was.Room, "err", perr)
	}
	return err
}

// whole returns the config of a drop that may have to be put back as it was, its listed codes
// included, which the store's Get leaves out; none are read for a drop no room can follow.
func (s *Service) whole(ctx context.Context, id string, info Info) (Config, error) {
	cfg := info.Config
	if info.Listed == 0 || cfg.Room == "" || s.gate == nil {
		return cfg, nil
	}
	codes, err := s.store.Codes(ctx, id)
	cfg.Codes = codes
	return cfg, err
}

// changed tells what keeps a drop's config that it changed: the checks of claims, and the sampler,
// since it may take claims again.
func (s *Service) changed(id string) {
	s.configs.Forget(id)
	s.seen.Wake(id)
}

// recorded returns the claims the record holds of a drop the store does not know: none without a
// record.
func (s *Service) recorded(ctx context.Context, id string) ([]Claim, error) {
	if s.record == nil {
		return nil, nil
	}
	claims, err := s.record.Claims(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: reading drop %s: %w", rushgate.ErrRecordUnavailable, id, err)
	}
	return claims, nil
}

// Get returns a drop and how much of it is claimed.
func (s *Service) Get(ctx context.Context, id string) (Info, error) { return s.store.Get(ctx, id) }

// Delete removes a drop while nothing is claimed and no room follows its stock (ErrFollowed).
func (s *Service) Delete(ctx context.Context, id string) error {
	defer s.changed(id)
	old, err := s.store.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.unfollowed(ctx, old.Config.Room, id); err != nil {
		return err
	}
	if old.Config, err = s.whole(ctx, id, old); err != nil {
		return err
	}
	if err := s.store.Delete(ctx, id); err != nil {
		return err
	}
	if err := s.stillUnfollowed(ctx, old.Config, id); err != nil {
		return err
	}
	s.seen.Forget(id)
	if s.history != nil {
		_ = s.history.Forget(context.WithoutCancel(ctx), entity(id))
	}
	rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "drop", ID: id, Action: rushgate.ActionDelete, Changes: rushgate.Diff(old.audited(), nil)})
	return nil
}

// Claims pages through a drop's claims by sequence.
func (s *Service) Claims(ctx context.Context, id string, after int64, limit int) ([]Claim, error) {
	return s.store.Claims(ctx, id, after, limit)
}

// ClaimOf returns the claim that handed out code: what a site's checkout asks of a code a customer
// presents, and an operator of a customer who says theirs does not work. ErrNoSuchCode when no claim
// of the drop has it, a listed code not handed out yet included. A listed code is found by its place in
// the list, a generated one by the number it ends with, so a lookup reads one claim, however many
// there are.
func (s *Service) ClaimOf(ctx context.Context, id, code string) (Claim, error) {
	info, err := s.store.Get(ctx, id)
	if err != nil {
		return Claim{}, err
	}
	seq, ok := generatedSeq(code)
	if info.Listed > 0 {
		if seq, ok, err = s.listedSeq(ctx, id, info.Rev, code); err != nil {
			return Claim{}, err
		}
	}
	if !ok || seq > int64(info.Claimed) {
		return Claim{}, ErrNoSuchCode
	}
	claims, err := s.store.Claims(ctx, id, seq-1, 1)
	if err != nil {
		return Claim{}, err
	}
	if len(claims) == 0 || subtle.ConstantTimeCompare([]byte(claims[0].Code), []byte(code)) != 1 {
		return Claim{}, ErrNoSuchCode
	}
	return claims[0], nil
}

// listedSeq returns the number of the claim that hands out a listed code: its place in the list, from
// 1. The list's index is built on the first lookup of a revision and kept for the next ones, since a
// checkout asks one code after another: searching a list of 100,000 codes in Redis (LPOS) held it
// for over a millisecond a lookup, in the middle of a crowd's claims.
func (s *Service) listedSeq(ctx context.Context, id, rev, code string) (int64, bool, error) {
	s.listedMu.Lock()
	defer s.listedMu.Unlock() // a lookup that builds an index holds the others, so it is built once
	x, ok := s.listed[id]
	if !ok || x.rev != rev {
		codes, err := s.store.Codes(ctx, id)
		if err != nil {
			return 0, false, err
		}
		x = listedIndex{rev: rev, seq: make(map[string]int64, len(codes))}
		for i, c := range codes {
			x.seq[c] = int64(i + 1)
		}
		if len(s.listed) >= listedKept {
			for other := range s.listed { // any other: the index a checkout asks next is rebuilt once
				delete(s.listed, other)
				break
			}
		}
		s.listed[id] = x
	}
	seq, ok := x.seq[code]
	return seq, ok, nil
}

// listedIndex maps a revision of a drop's listed codes to their claims' numbers.
type listedIndex struct {
	rev string
	seq map[string]int64
}

// listedKept bounds the drops whose listed-code index a service keeps: up to 100,000 codes each, a few
// megabytes.
const listedKept = 4

// Mine returns a visitor's claims on a drop.
func (s *Service) Mine(ctx context.Context, id, visitor string) ([]Claim, error) {
	return s.store.Mine(ctx, id, visitor)
}
