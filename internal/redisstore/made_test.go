package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestNothingMadeUnrecorded: a drop or an auction is listed in the recorders' registry (a key of
// another slot) before its script makes it, and a room in the set of rooms. When that step fails (here:
// a Redis user that may not run SADD), nothing is made, and nothing is changed: made first, a drop or
// an auction could take claims or bids that no recorder would ever read into the SQL record, and a room
// would be left out by the other instances.
func TestNothingMadeUnrecorded(t *testing.T) {
	addr := redistest.Shared(t)
	ctx := context.Background()
	admin := redistest.Client(t, addr)
	denied := redistest.ClientWithout(t, addr, "sadd")
	prefix := redistest.Prefix("made")
	full := redisstore.New(admin, redisstore.Options{Prefix: prefix})
	half := redisstore.New(denied, redisstore.Options{Prefix: prefix})

	now := time.Now().UTC().Truncate(time.Millisecond)
	dc := drop.Config{Stock: 5, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}
	if err := half.Drops().Put(ctx, "d", dc); err == nil {
		t.Fatal("a drop put while its registry refuses it")
	}
	if info, err := full.Drops().Get(ctx, "d"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("after a put that failed: %+v %v, want no drop", info, err)
	}
	ac := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour)}
	if err := half.Auctions().Put(ctx, "a", ac); err == nil {
		t.Fatal("an auction put while its registry refuses it")
	}
	if st, err := full.Auctions().Get(ctx, "a"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("after a put that failed: %+v %v, want no auction", st, err)
	}

	// A room, listed in the set of rooms that every instance starts the gates of.
	rc := room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Minute), Grace: rushgate.Duration(time.Minute),
		IdleTimeout: rushgate.Duration(time.Minute)}
	if err := half.Rooms().PutRoom(ctx, "r", rc); err == nil {
		t.Fatal("a room put while the set of rooms refuses it")
	}
	if _, err := full.Rooms().Room(ctx, "r"); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("after a put that failed: %v, want no room", err)
	}

	// A drop that the recorders may have retired (sold out or closed), reopened: the change waits for
	// its registry too.
	if err := full.Drops().Put(ctx, "d", dc); err != nil {
		t.Fatal(err)
	}
	info, err := full.Drops().Get(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	more := dc
	more.Stock = 9
	if err := half.Drops().Amend(ctx, "d", info.Rev, more); err == nil {
		t.Fatal("a drop amended while its registry refuses it")
	}
	if after, err := full.Drops().Get(ctx, "d"); err != nil || after.Config.Stock != 5 || after.Rev != info.Rev {
		t.Fatalf("after an amend that failed: %+v %v, want it unchanged", after, err)
	}
}
