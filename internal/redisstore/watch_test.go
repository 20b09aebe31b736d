package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestAuctionWatch: an instance's watch of an auction hears of the events that another instance's bids
// append, on a standalone server and on a Cluster: once when its subscription holds, then after each
// step that appended events, and not after one that appended none (a bid refused as too low). Its
// channel closes when its context ends.
func TestAuctionWatch(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		prefix := redistest.Prefix("watch")
		open := func() *redisstore.Auctions {
			return redisstore.New(tp.Client(t), redisstore.Options{Prefix: prefix, Timeout: 5 * time.Second, Cluster: tp.Cluster}).Auctions()
		}
		a, b := open(), open() // two instances
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		now := time.Now()
		cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
			StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
		if err := a.Put(ctx, "lot", cfg); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		told := b.Watch(wctx, "lot")
		heard := func(what string) {
			t.Helper()
			select {
			case _, ok := <-told:
				if !ok {
					t.Fatalf("%s: the watch ended", what)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the watch heard nothing", what)
			}
		}
		heard("subscribing")
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "x", Max: 200}); err != nil {
			t.Fatal(err)
		}
		heard("a bid on the other instance")
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "y", Max: 100}); err == nil {
			t.Fatal("a bid at the price was taken")
		}
		select {
		case <-told:
			t.Fatal("told of a refused bid, which appended no event")
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "y", Max: 300}); err != nil {
			t.Fatal(err)
		}
		heard("an outbidding bid, answered by the leader's proxy")
		stop()
		for range told { // closed once the subscription ends
		}
	})
}
