package redisstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestRestoreWaitsForTheOneUnderWay: a restore of a drop while another one holds it waits rather
// than clearing the other's pieces (racing restores used to clear each other until all gave up), then
// finds the drop restored; and a holder that died lets the next restore take over once its hold
// lapses.
func TestRestoreWaitsForTheOneUnderWay(t *testing.T) {
	rdb := redistest.Client(t, redistest.Shared(t))
	d := New(rdb, Options{Prefix: redistest.Prefix("restorehold")}).Drops()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := drop.Config{Stock: 10, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}
	claims := make([]drop.Claim, 3)
	var piece []string
	for i := range claims {
		seq := int64(i + 1)
		claims[i] = drop.Claim{Seq: seq, ID: drop.ClaimID("d", seq), Code: fmt.Sprint("C", seq), Visitor: fmt.Sprint("v", seq), ClaimedAt: now}
		piece = append(piece, itoa(seq), claims[i].ID, claims[i].Code, claims[i].Visitor, itoa(now.UnixMilli()), "")
	}
	keys := append(d.keys.drop("d"), d.keys.restoring("drop:d"))
	other := func(args ...string) error { return d.runCode(ctx, dropRestScript, keys, &dropErrors, args...) }

	// Another restore has sent its first piece: two of the three claims.
	if err := other(append([]string{"first", "other"}, piece[:12]...)...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Restore(ctx, "d", cfg, claims) }()
	select {
	case err := <-done:
		t.Fatalf("a restore while another holds the drop returned at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n, err := rdb.Do(ctx, rdb.B().Xlen().Key(keys[1]).Build()).AsInt64(); err != nil || n != 2 {
		t.Fatalf("the holder's pieces: %d claims (%v), want its 2", n, err)
	}
	args, err := configArgs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := other(append([]string{"more", "other"}, piece[12:]...)...); err != nil {
		t.Fatal(err)
	}
	if err := other(append([]string{"last", "other", "3"}, args...)...); err != nil {
		t.Fatalf("the holder's last call: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, drop.ErrStarted) {
			t.Fatalf("the waiting restore: %v, want it to find the drop restored", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting restore still waits after the holder finished")
	}
	if info, err := d.Get(ctx, "d"); err != nil || info.Claimed != 3 {
		t.Fatalf("the drop: %+v %v", info, err)
	}

	// A holder that dies: its hold lapses (here at once) and the next restore takes over.
	keys = append(d.keys.drop("e"), d.keys.restoring("drop:e"))
	if err := other("first", "dead"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, rdb.B().Pexpire().Key(keys[5]).Milliseconds(200).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		claims[i].ID = drop.ClaimID("e", claims[i].Seq)
	}
	if err := d.Restore(ctx, "e", cfg, claims); err != nil {
		t.Fatalf("a restore after a dead holder's hold lapsed: %v", err)
	}
	if info, err := d.Get(ctx, "e"); err != nil || info.Claimed != 3 {
		t.Fatalf("the drop restored after the dead holder: %+v %v", info, err)
	}
}

// TestRestoreOfADeletedAuctionKeepsItsEvents: an auction deleted moments after its last events, while
// the SQL record has not yet copied them, and then put again is taken back from the record (which
// still holds its state) with the events the record has. Those used to replace the stream, losing
// the deleted auction's latest events; the stream keeps them now, and the new auction goes on from
// them, as it does on the embedded backend.
func TestRestoreOfADeletedAuctionKeepsItsEvents(t *testing.T) {
	a := New(redistest.Client(t, redistest.Shared(t)), Options{Prefix: redistest.Prefix("restoredeleted")}).Auctions()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}
	if err := a.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	o, err := a.Reschedule(ctx, "a", now) // ends it: its events, no bids
	if err != nil || len(o.Events) == 0 {
		t.Fatalf("ending: %+v %v", o, err)
	}
	ended := o.Events
	if err := a.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// The record had copied none of its events: the put takes it back as put, with none.
	if err := a.Restore(ctx, "a", auction.New(cfg), nil); err != nil {
		t.Fatal(err)
	}
	evs, err := a.Events(ctx, "a", 0, 10)
	if err != nil || !reflect.DeepEqual(evs, ended) {
		t.Fatalf("the events after the restore: %+v %v; want the deleted auction's %+v", evs, err, ended)
	}
	b, err := a.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 500})
	if err != nil || len(b.Events) != 1 || b.Events[0].Seq != ended[len(ended)-1].Seq+1 {
		t.Fatalf("the first bid: %+v %v; want it numbered after %d", b.Events, err, ended[len(ended)-1].Seq)
	}
}
