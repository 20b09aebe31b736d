package auction_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/memstore"
)

// TestCloserClosesAtDeadline runs the real closer on the real clock: an auction ending in 50ms is
// closed, with its winner, within a few milliseconds of its end, and its feed is told.
func TestCloserClosesAtDeadline(t *testing.T) {
	store := memstore.NewAuctions(nil, nil)
	svc := auction.NewService(store, auction.ServiceOptions{Poll: time.Minute})
	ctx := context.Background()
	svc.Start(ctx)
	defer svc.Stop()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Second), EndsAt: now.Add(50 * time.Millisecond)}
	if err := svc.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Bid(ctx, "a", auction.Bid{Bidder: "x", Max: 500}, nil); err != nil {
		t.Fatal(err)
	}
	changed := svc.Changed("a")
	select {
	case <-changed:
	case <-time.After(2 * time.Second):
		t.Fatal("closer did not close the auction")
	}
	if late := time.Since(cfg.EndsAt); late > 500*time.Millisecond {
		t.Fatalf("closed %v after the end", late)
	}
	evs, _ := svc.Events(ctx, "a", 0, 10)
	if last := evs[len(evs)-1]; last.Kind != auction.EventClosed || last.Bidder != "x" || last.Price != 100 {
		t.Fatalf("close event %+v", last)
	}
}

// TestStartClosesOverdue: an instance starting after an auction's end closes it before anything else.
func TestStartClosesOverdue(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	store := memstore.NewAuctions(clock, nil)
	ctx := context.Background()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(-time.Minute)}
	_ = store.Put(ctx, "a", cfg)
	svc := auction.NewService(store, auction.ServiceOptions{})
	svc.Start(ctx)
	defer svc.Stop()
	if ids, _, _ := store.Due(ctx, 10); len(ids) != 0 {
		t.Fatalf("still due after start: %v", ids)
	}
}

// countingAuctions counts the reads of an auction store, which a bid must not need once its config is
// cached.
type countingAuctions struct {
	auction.Store
	gets atomic.Int64
}

func (c *countingAuctions) Get(ctx context.Context, id string) (auction.State, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

// refuseAll is a waiting room that holds no live admission.
type refuseAll struct{}

func (refuseAll) Active(context.Context, string, string, string) (bool, error) { return false, nil }
func (refuseAll) Release(context.Context, string, string, string) error        { return nil }
func (refuseAll) Hold(context.Context, string, string, string) (bool, error) {
	return false, rushgate.ErrAdmissionRequired
}
func (refuseAll) Unhold(context.Context, string) error  { return nil }
func (refuseAll) SoldOut(context.Context, string) error { return nil }

// TestCachedConfigFollowsAnotherInstance runs two services over one store, as two instances share
// Redis: A bids with the config it cached, without reading the auction again; after B puts the auction
// behind a room, A's next bid is checked against the new config, not let through on the old one.
func TestCachedConfigFollowsAnotherInstance(t *testing.T) {
	store := &countingAuctions{Store: memstore.NewAuctions(nil, nil)}
	opts := auction.ServiceOptions{Gate: refuseAll{}}
	a, b := auction.NewService(store, opts), auction.NewService(store, opts)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}
	if err := b.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	store.gets.Store(0) // the put's own read, for its audit entry, is not a bid's or a claim's
	for range 3 {
		if _, err := a.Bid(ctx, "a", auction.Bid{Bidder: "x", Max: 500}, nil); !errors.Is(err, auction.ErrNotStarted) {
			t.Fatalf("bid before the start: %v", err)
		}
	}
	if n := store.gets.Load(); n != 1 {
		t.Fatalf("three bids read the auction %d times, want once", n)
	}
	cfg.StartsAt, cfg.Room = now.Add(-time.Minute), "line"
	if err := b.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bid(ctx, "a", auction.Bid{Bidder: "x", Max: 500}, nil); !errors.Is(err, rushgate.ErrAdmissionRequired) {
		t.Fatalf("bid without an admission after the auction moved behind a room: %v", err)
	}
	if st, _ := store.Get(ctx, "a"); st.Bids != 0 {
		t.Fatalf("%d bids taken on an outdated config", st.Bids)
	}
}
