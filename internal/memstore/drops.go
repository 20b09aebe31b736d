package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
)

var _ drop.Store = (*Drops)(nil)

// Drops is the in-memory implementation of [drop.Store]. With a recorder, a claim is recorded before
// it is kept and answered, so no claim is ever answered "yours" that the record does not hold.
type Drops struct {
	clock    func() time.Time
	recorder Records
	mu       sync.Mutex
	drops    map[string]*dropState
}

// dropState is a drop with the revision of its config.
type dropState struct {
	drop.State
	rev string
}

// NewDrops returns an empty drop store; a nil clock means time.Now, a nil recorder keeps no record.
func NewDrops(clock func() time.Time, recorder Records) *Drops {
	if clock == nil {
		clock = time.Now
	}
	return &Drops{clock: clock, recorder: recorder, drops: make(map[string]*dropState)}
}

// Restore loads a drop saved by an earlier run with its claims and their idempotency keys, so that a
// restarted embedded instance never hands out again what was claimed before it stopped, and a repeated
// request answers with the claim it made.
func (d *Drops) Restore(id string, cfg drop.Config, claims []drop.Claim) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &dropState{State: drop.New(cfg), rev: rushgate.NewRevision()}
	for _, c := range claims {
		s.Take(c)
	}
	d.drops[id] = s
}

// Put implements [drop.Store].
func (d *Drops) Put(ctx context.Context, id string, cfg drop.Config) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.drops[id]; ok && len(s.Claims) > 0 {
		return drop.ErrStarted
	}
	if d.recorder != nil {
		if err := d.recorder.RecordDrop(ctx, id, cfg); err != nil {
			return fmt.Errorf("%w: recording drop %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	d.drops[id] = &dropState{State: drop.New(cfg), rev: rushgate.NewRevision()}
	return nil
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

// Get implements [drop.Store].
func (d *Drops) Get(_ context.Context, id string) (drop.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return drop.Info{}, drop.ErrNotFound
	}
	return drop.Info{Config: s.Config, Claimed: len(s.Claims), Rev: s.rev}, nil
}

// Claim implements [drop.Store]. The new claim is recorded under the lock before it is kept, so a
// failed record leaves the unit unclaimed.
func (d *Drops) Claim(ctx context.Context, id, rev, visitor, key string) (drop.Claim, bool, error) {
	code := drop.NewCode()
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	switch {
	case !ok:
		return drop.Claim{}, false, drop.ErrNotFound
	case rev != "" && rev != s.rev:
		return drop.Claim{}, false, rushgate.ErrStale
	}
	c, created, err := s.Decide(id, visitor, key, code, d.clock())
	if err != nil || !created {
		return c, created, err
	}
	if d.recorder != nil {
		if err := d.recorder.RecordClaims(ctx, id, []drop.Claim{c}); err != nil {
			return drop.Claim{}, false, fmt.Errorf("%w: recording claim on %s: %w", rushgate.ErrUnavailable, id, err)
		}
	}
	s.Take(c)
	return c, true, nil
}

// Claims implements [drop.Store].
func (d *Drops) Claims(_ context.Context, id string, after int64, limit int) ([]drop.Claim, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.drops[id]
	if !ok {
		return nil, drop.ErrNotFound
	}
	start := min(max(after, 0), int64(len(s.Claims)))
	end := min(start+int64(limit), int64(len(s.Claims)))
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
	return s.Mine(visitor), nil
}
