package auction_test

import (
	"context"
	"testing"
	"time"

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
