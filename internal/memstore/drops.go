package memstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
)

var _ drop.Store = (*Drops)(nil)

// Drops is the in-memory implementation of [drop.Store]. With a recorder, a claim is recorded before
// it is kept and answered, so no claim is ever answered "yours" that the record does not hold.
type Drops struct {
	clock    func() time.Time
	recorder Records
	commit   *committer // claims are group-committed (see commit.go)
	mu       sync.Mutex
	drops    map[string]*dropState
	written  int64 // the last number a config write took (see write)
}

// dropState is a drop with the revision of its config. Its claims past the first durable are decided
// but not yet committed to the record (see commit.go).
type dropState struct {
	drop.State
	rev     string
	written int64 // see drop.Info.Written
	durable int
}

// rollback forgets the claims not yet durable.
func (s *dropState) rollback() {
	if len(s.Claims) == s.durable {
		return
	}
	kept := s.Claims[:s.durable]
	s.State = drop.New(s.Config)
	for _, c := range kept {
		s.Take(c)
	}
}

// NewDrops returns an empty drop store; a nil clock means time.Now, a nil recorder keeps no record.
func NewDrops(clock func() time.Time, recorder Records) *Drops {
	if clock == nil {
		clock = time.Now
	}
	d := &Drops{clock: clock, recorder: recorder, drops: make(map[string]*dropState)}
	if recorder != nil {
		d.commit = &committer{db: recorder}
	}
	return d
}

// load puts a drop saved by an earlier run back with its claims and their idempotency keys, so that a
// restarted embedded instance never hands out again what was claimed before it stopped, and a repeated
// request answers with the claim it made.
func (d *Drops) load(id string, cfg drop.Config, claims []drop.Claim) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drops[id] = loaded(cfg, claims, d.write())
}

// write numbers a write of a drop's config as drop.Info.Written says: the clock in milliseconds, past
// every write of the store before it, so that a drop deleted and made again within a millisecond, or
// after the clock went back, still counts on from the number its rooms heard of.
func (d *Drops) write() int64 {
	d.written = max(d.clock().UnixMilli(), d.written+1)
	return d.written
}

// loaded is a drop holding claims that the record has, its config's write numbered written.
func loaded(cfg drop.Config, claims []drop.Claim, written int64) *dropState {
	s := &dropState{State: drop.New(cfg), rev: rushgate.NewRevision(), written: written, durable: len(claims)}
	for _, c := range claims {
		s.Take(c)
	}
	return s
}

// Restore implements [drop.Store]: the embedded backend loses no drop its record holds (Open loads
// them), but it takes one back all the same, recording its config. A Put is a Restore of no claims.
func (d *Drops) Restore(ctx context.Context, id string, cfg drop.Config, claims []drop.Claim) error {
	if err := drop.Numbered(claims); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.drops[id]
	if s != nil && len(s.Claims) > 0 {
		return drop.ErrStarted // claims not yet durable count: they may become so
	}
	if d.recorder != nil {
		if err := d.recorder.RecordDrop(ctx, id, cfg); err != nil {
			return fmt.Errorf("%w: recording drop %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	d.drops[id] = loaded(cfg, claims, d.write())
	return nil
}

// Put implements [drop.Store].
func (d *Drops) Put(ctx context.Context, id string, cfg drop.Config) error {
	return d.Restore(ctx, id, cfg, nil)
}

// Delete implements [drop.Store]; the record goes in the same step.
func (d *Drops) Delete(ctx context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	switch {
	case !ok:
		return drop.ErrNotFound
	case len(s.Claims) > 0:
		return drop.ErrStarted
	}
	if d.recorder != nil {
		if err := d.recorder.ForgetDrop(ctx, id); err != nil {
			return fmt.Errorf("%w: forgetting drop %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	delete(d.drops, id)
	return nil
}

// Amend implements [drop.Store].
func (d *Drops) Amend(ctx context.Context, id, rev string, cfg drop.Config) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	switch {
	case !ok:
		return drop.ErrNotFound
	case s.rev != rev:
		return rushgate.ErrStale
	case cfg.Stock != s.Config.Stock && len(s.Claims) >= s.Config.Stock:
		return drop.ErrSoldOut
	case cfg.Stock < len(s.Claims):
		return drop.ErrBelowClaimed
	}
	c := s.Config
	c.Title, c.Message, c.Stock, c.PerVisitor, c.OpensAt, c.ClosesAt = cfg.Title, cfg.Message, cfg.Stock, cfg.PerVisitor, cfg.OpensAt, cfg.ClosesAt
	if d.recorder != nil {
		if err := d.recorder.RecordDrop(ctx, id, c); err != nil {
			return fmt.Errorf("%w: recording drop %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	s.Config, s.rev, s.written = c, rushgate.NewRevision(), d.write()
	return nil
}

// Codes implements [drop.Store].
func (d *Drops) Codes(_ context.Context, id string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return nil, drop.ErrNotFound
	}
	return slices.Clone(s.Config.Codes), nil
}

// Get implements [drop.Store].
func (d *Drops) Get(_ context.Context, id string) (drop.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return drop.Info{}, drop.ErrNotFound
	}
	cfg := s.Config
	cfg.Codes = nil
	return drop.Info{Config: cfg, Claimed: len(s.Claims), Listed: len(s.Config.Codes), Rev: s.rev, Written: s.written}, nil
}

// Claim implements [drop.Store]. A new claim is taken in memory at once and answered once its record
// is committed, with the claims of other requests, in one transaction (see commit.go); a failed
// commit undoes it. A repeat answered with a claim not yet committed waits for that claim's commit too.
func (d *Drops) Claim(ctx context.Context, id, rev, visitor, key string) (drop.Claim, bool, error) {
	code := drop.NewCode()
	d.mu.Lock()
	s, ok := d.drops[id]
	switch {
	case !ok:
		d.mu.Unlock()
		return drop.Claim{}, false, drop.ErrNotFound
	case rev != "" && rev != s.rev:
		d.mu.Unlock()
		return drop.Claim{}, false, rushgate.ErrStale
	}
	c, created, err := s.Decide(id, visitor, key, code, d.clock())
	if created {
		c.ClaimedAt = c.ClaimedAt.Truncate(time.Millisecond) // told as Redis tells it
	}
	var g *group
	var qerr error
	switch {
	case d.commit == nil: // no record: every claim is as durable as it gets
		if created {
			s.Take(c)
			s.durable = len(s.Claims)
		}
	case created:
		s.Take(c)
		g, qerr = d.commit.enqueue(change{
			add:    func(b *record.Batch) { b.AddClaims(id, c) },
			settle: func(err error) { d.settle(s, c.Seq, err) },
		})
	case d.speculative(s, c, err):
		g, qerr = d.commit.last()
	}
	if qerr != nil {
		s.rollback()
		d.mu.Unlock()
		return drop.Claim{}, false, qerr
	}
	d.mu.Unlock()
	if werr := g.wait(); werr != nil {
		return drop.Claim{}, false, werr
	}
	return c, created, err
}

// speculative reports whether an answer rests on claims of s that are not durable yet: the repeat c,
// one of the visitor's claims in an AlreadyClaimedError, or a stock that only they used up.
func (d *Drops) speculative(s *dropState, c drop.Claim, err error) bool {
	if err == nil {
		return c.Seq > int64(s.durable)
	}
	if errors.Is(err, drop.ErrSoldOut) {
		return s.durable < s.Config.Stock
	}
	var already *drop.AlreadyClaimedError
	if errors.As(err, &already) {
		for _, mine := range already.Claims {
			if mine.Seq > int64(s.durable) {
				return true
			}
		}
	}
	return false
}

// settle makes the claim seq of s durable, or rolls back every claim not yet durable.
func (d *Drops) settle(s *dropState, seq int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		s.rollback()
		return
	}
	s.durable = max(s.durable, int(seq))
}

// Claims implements [drop.Store].
func (d *Drops) Claims(_ context.Context, id string, after int64, limit int) ([]drop.Claim, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return nil, drop.ErrNotFound
	}
	// Only durable claims are listed: a failed commit may still undo the others.
	start := min(max(after, 0), int64(s.durable))
	end := min(start+int64(limit), int64(s.durable))
	return append([]drop.Claim(nil), s.Claims[start:end]...), nil
}

// Mine implements [drop.Store].
func (d *Drops) Mine(_ context.Context, id, visitor string) ([]drop.Claim, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return nil, drop.ErrNotFound
	}
	// Only durable claims are shown: one still being committed is the visitor's own request in flight,
	// which a failed commit may undo.
	mine := s.Mine(visitor)
	for len(mine) > 0 && mine[len(mine)-1].Seq > int64(s.durable) {
		mine = mine[:len(mine)-1]
	}
	return mine, nil
}

// List implements [drop.Store].
func (d *Drops) List(_ context.Context, after string, limit int) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return page(maps.Keys(d.drops), after, limit), nil
}
