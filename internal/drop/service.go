package drop

import (
	"context"
	"errors"
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

	ctx     context.Context // ends at Stop; releases being retried stop with it
	cancel  context.CancelFunc
	retries sync.WaitGroup
}

// NewService returns a service over store; gate is the waiting room that drops with a room sit behind.
// A nil log means slog.Default().
func NewService(store Store, gate rushgate.Gatekeeper, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{store: store, gate: gate, log: log, ctx: ctx, cancel: cancel}
}

// Stop ends the releases still being retried and waits for them.
func (s *Service) Stop() {
	s.cancel()
	s.retries.Wait()
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
func (s *Service) Claim(ctx context.Context, req ClaimRequest) (c Claim, created bool, err error) {
	err = s.configs.Run(req.Drop, func() (Config, string, error) {
		info, err := s.store.Get(ctx, req.Drop)
		return info.Config, info.Rev, err
	}, func(cfg Config, rev string) error {
		if cfg.Identity == visitor.IdentitySite && !visitor.Subject(req.Visitor) {
			return rushgate.ErrIdentityRequired
		}
		if cfg.Room != "" {
			if err := rushgate.CheckAdmission(ctx, s.gate, cfg.Room, req.Visitor, req.Admission); err != nil {
				return err
			}
		}
		var err error
		c, created, err = s.store.Claim(ctx, req.Drop, rev, req.Visitor, req.Key)
		if err == nil && cfg.ReleaseOnClaim {
			// The claim is made: its release must not end with a client that has stopped waiting.
			s.release(context.WithoutCancel(ctx), cfg.Room, req.Visitor, req.Admission.ID)
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

// release ends the admission a claim was made with. An admission already gone is fine; one the room's
// store could not release now is retried in the background.
func (s *Service) release(ctx context.Context, room, vid, admissionID string) {
	err := s.gate.Release(ctx, room, vid, admissionID)
	if !errors.Is(err, rushgate.ErrUnavailable) {
		return // released, or nothing left to release
	}
	s.retries.Go(func() {
		deadline := time.Now().Add(retryFor)
		for wait := retryFirst; time.Now().Before(deadline); wait = min(2*wait, retryMax) {
			select {
			case <-s.ctx.Done():
				s.log.Warn("stopping with a release after a claim not done; the admission will run out", "room", room, "err", err)
				return
			case <-time.After(wait):
			}
			if err = s.gate.Release(s.ctx, room, vid, admissionID); !errors.Is(err, rushgate.ErrUnavailable) {
				return
			}
		}
		s.log.Warn("gave up releasing an admission after a claim; it will run out", "room", room, "err", err)
	})
}

// Put creates a drop or replaces it while nothing is claimed.
func (s *Service) Put(ctx context.Context, id string, cfg Config) error {
	defer s.configs.Forget(id)
	return s.store.Put(ctx, id, cfg)
}

// Get returns a drop and how much of it is claimed.
func (s *Service) Get(ctx context.Context, id string) (Info, error) { return s.store.Get(ctx, id) }

// Delete removes a drop while nothing is claimed.
func (s *Service) Delete(ctx context.Context, id string) error {
	defer s.configs.Forget(id)
	return s.store.Delete(ctx, id)
}

// Claims pages through a drop's claims by sequence.
func (s *Service) Claims(ctx context.Context, id string, after int64, limit int) ([]Claim, error) {
	return s.store.Claims(ctx, id, after, limit)
}

// Mine returns a visitor's claims on a drop.
func (s *Service) Mine(ctx context.Context, id, visitor string) ([]Claim, error) {
	return s.store.Mine(ctx, id, visitor)
}
