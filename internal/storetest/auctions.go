package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
)

// auctionTests are the auction checks of the suite.
var auctionTests = []check{
	{"Auction/IncrementTable", testIncrementTable},
	{"Auction/ProxyBidding", testProxyBidding},
	{"Auction/ExactBids", testExactBids},
	{"Auction/SelfRaise", testSelfRaise},
	{"Auction/Reserve", testReserve},
	{"Auction/BuyNow", testBuyNow},
	{"Auction/BuyNowWithReserve", testBuyNowWithReserve},
	{"Auction/SoftClose", testSoftClose},
	{"Auction/CloseAtEnd", testCloseAtEnd},
	{"Auction/WatchHearsEveryClose", testWatchHearsEveryClose},
	{"Auction/RefusedPutKeepsTheClose", testRefusedPutKeepsTheClose},
	{"Auction/Refusals", testRefusals},
	{"Auction/Events", testEvents},
	{"Auction/ConcurrentBids", testConcurrentBids},
	{"Auction/ConcurrentBuyNow", testConcurrentBuyNow},
	{"Auction/ReplaceAndDelete", testReplaceAndDelete},
	{"Auction/Revision", testAuctionRevision},
	{"Auction/Restore", testAuctionRestore},
	{"Auction/Amend", testAuctionAmend},
}

// testAuctionAmend: an auction with bids takes a new title and message, and nothing else, as one step
// with an updated event after its bids and a new config revision, so that a bid checked against the
// old config is checked again; the bids stand. One past its end is closed first, and takes the change
// with no event after its last: its feeds have ended. The change stays when the auction is read again.
func testAuctionAmend(t *testing.T, h Harness) {
	putAuction(t, h, "am", auctionCfg(h))
	bid(t, h, "am", "alice", 1500)
	before, err := h.Auctions.Get(ctx, "am")
	if err != nil {
		t.Fatal(err)
	}
	c := before.Config
	c.Title, c.Message, c.StartPrice = "Lot 7, corrected", "Shipping within Korea only", 5 // the price is ignored
	o, err := h.Auctions.Amend(ctx, "am", before.Rev, c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Auctions.Get(ctx, "am")
	if err != nil {
		t.Fatal(err)
	}
	if st.Config.Title != c.Title || st.Config.Message != c.Message || st.Config.StartPrice != 1000 || st.Bids != 1 ||
		st.Leader != "alice" || st.Price != before.Price || st.Rev == before.Rev || o.State.Config.Title != c.Title {
		t.Fatalf("amended: %+v (before %+v)", st, before)
	}
	evs, err := h.Auctions.Events(ctx, "am", before.Seq, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != auction.EventUpdated || evs[0].Seq != before.Seq+1 || evs[0].Price != before.Price {
		t.Fatalf("events after the amend: %+v %v", evs, err)
	}
	if _, err := h.Auctions.Bid(ctx, "am", before.Rev, auction.Bid{Bidder: "bob", Max: 2000}); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("a bid checked against the config before the amend: %v", err)
	}
	if _, err := h.Auctions.Amend(ctx, "am", before.Rev, c); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("an amend from an old revision: %v", err)
	}
	bid(t, h, "am", "bob", 2000)
	if _, err := h.Auctions.Amend(ctx, "none", "x", c); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("an unknown auction: %v", err)
	}
	open, err := h.Auctions.Get(ctx, "am")
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(2 * time.Hour) // past its end, not closed yet
	st, err = h.Auctions.Get(ctx, "am")
	if err != nil {
		t.Fatal(err)
	}
	c.Message = "The winner has been contacted"
	if _, err := h.Auctions.Amend(ctx, "am", st.Rev, c); err != nil {
		t.Fatalf("an amend after the end: %v", err)
	}
	ended, err := h.Auctions.Get(ctx, "am")
	if err != nil || !ended.Closed || ended.Winner != "bob" || ended.Final != open.Price || ended.Config.Message != c.Message ||
		ended.Config.Title != c.Title || ended.Rev == st.Rev || ended.Seq != open.Seq+1 {
		t.Fatalf("amended past its end: %+v %v (before %+v)", ended, err, open)
	}
	evs, err = h.Auctions.Events(ctx, "am", open.Seq, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != auction.EventClosed || evs[0].Bidder != "bob" {
		t.Fatalf("events of an amend past the end: %+v %v; want the close alone", evs, err)
	}
	c.Message = "Shipped"
	if _, err := h.Auctions.Amend(ctx, "am", ended.Rev, c); err != nil {
		t.Fatalf("a second amend after the end: %v", err)
	}
	if again, err := h.Auctions.Get(ctx, "am"); err != nil || again.Config.Message != "Shipped" || again.Seq != ended.Seq {
		t.Fatalf("after a second amend: %+v %v", again, err)
	}
	if _, err := h.Auctions.Bid(ctx, "am", "", auction.Bid{Bidder: "carol", Max: 9000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("a bid after the end: %v", err)
	}
}

func ptr(v int64) *int64 { return &v }

// auctionCfg opens at the harness's now and ends an hour later: start 1000, increment 100.
func auctionCfg(h Harness) auction.Config {
	now := h.Now().Truncate(time.Millisecond)
	return auction.Config{
		Title: "Lot", Currency: "EUR", StartPrice: 1000, Increment: auction.Fixed(100),
		StartsAt: now, EndsAt: now.Add(time.Hour),
	}
}

func putAuction(t *testing.T, h Harness, id string, c auction.Config) {
	t.Helper()
	if err := h.Auctions.Put(ctx, id, c); err != nil {
		t.Fatalf("Put(%s): %v", id, err)
	}
}

func bid(t *testing.T, h Harness, id, bidder string, max int64) auction.Outcome {
	t.Helper()
	o, err := h.Auctions.Bid(ctx, id, "", auction.Bid{Bidder: bidder, Max: max})
	if err != nil {
		t.Fatalf("Bid(%s, %d): %v", bidder, max, err)
	}
	return o
}

func wantLead(t *testing.T, o auction.Outcome, leader string, price int64) {
	t.Helper()
	if o.State.Leader != leader || o.State.Price != price {
		t.Fatalf("leader %q at %d, want %q at %d", o.State.Leader, o.State.Price, leader, price)
	}
}

func testIncrementTable(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.StartPrice = 50
	c.Increment = auction.Increment{Tiers: []auction.Tier{{From: 0, Step: 5}, {From: 100, Step: 25}, {From: 1000, Step: 100}}}
	putAuction(t, h, "a", c)
	wantLead(t, bid(t, h, "a", "x", 50), "x", 50)
	_, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "y", Max: 54})
	var low *auction.TooLowError
	if !errors.As(err, &low) || low.Min != 55 {
		t.Fatalf("below the 5-step: %v", err)
	}
	wantLead(t, bid(t, h, "a", "y", 100), "y", 55)   // one step of 5 above x's 50
	wantLead(t, bid(t, h, "a", "x", 1000), "x", 125) // y's 100 plus the 25-step that applies from 100
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "y", Max: 149}); !errors.As(err, &low) || low.Min != 150 {
		t.Fatalf("below the 25-step: %v", err)
	}
}

func testProxyBidding(t *testing.T, h Harness) {
	putAuction(t, h, "a", auctionCfg(h))
	wantLead(t, bid(t, h, "a", "alice", 5000), "alice", 1000) // a maximum bids only what it must
	o := bid(t, h, "a", "bob", 3000)
	wantLead(t, o, "alice", 3100) // alice's proxy answers one increment above bob
	if ev := o.Events[len(o.Events)-1]; !ev.Proxy || ev.Bidder != "alice" || ev.Price != 3100 {
		t.Fatalf("proxy event %+v", ev)
	}
	wantLead(t, bid(t, h, "a", "bob", 5000), "alice", 5000) // a tie: the earlier maximum wins
	wantLead(t, bid(t, h, "a", "carol", 7000), "carol", 5100)
	if s, _ := h.Auctions.Get(ctx, "a"); s.Bids != 4 || s.LeaderMax != 7000 {
		t.Fatalf("state %+v", s)
	}
}

func testExactBids(t *testing.T, h Harness) {
	putAuction(t, h, "a", auctionCfg(h))
	o, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 2500, Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	wantLead(t, o, "x", 2500)
	o, _ = h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "y", Max: 4000, Exact: true})
	wantLead(t, o, "y", 4000)
}

func testSelfRaise(t *testing.T, h Harness) {
	putAuction(t, h, "a", auctionCfg(h))
	bid(t, h, "a", "x", 2000)
	o := bid(t, h, "a", "x", 9000) // raising one's own maximum is not a bid against oneself
	wantLead(t, o, "x", 1000)
	if len(o.Events) != 0 || o.State.Bids != 1 {
		t.Fatalf("self-raise made events %v, bids %d", o.Events, o.State.Bids)
	}
	_, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 9000})
	var low *auction.TooLowError
	if !errors.As(err, &low) || low.Min != 9001 {
		t.Fatalf("lowering or repeating one's own maximum: %v", err)
	}
	wantLead(t, bid(t, h, "a", "y", 8000), "x", 8100)
}

func testReserve(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.ReservePrice = ptr(5000)
	putAuction(t, h, "a", c)
	o := bid(t, h, "a", "x", 3000)
	if o.State.ReserveMet() || o.State.Price != 1000 {
		t.Fatalf("below the reserve: %+v", o.State)
	}
	o = bid(t, h, "a", "x", 6000) // the leader's new maximum meets the reserve: the price jumps to it
	if !o.State.ReserveMet() || o.State.Price != 5000 {
		t.Fatalf("after raising past the reserve: price %d, met %v", o.State.Price, o.State.ReserveMet())
	}
	putAuction(t, h, "b", c)
	bid(t, h, "b", "x", 2000)
	bid(t, h, "b", "y", 4000)
	h.Advance(time.Hour)
	s, _ := h.Auctions.Get(ctx, "b")
	if s.Status(h.Now()) != auction.StatusClosed || s.Winner != "" || s.Final != 0 {
		t.Fatalf("closed below the reserve, yet %+v", s)
	}
}

func testBuyNow(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.BuyNowPrice = ptr(20000)
	putAuction(t, h, "a", c)
	o, err := h.Auctions.BuyNow(ctx, "a", "", "x")
	if err != nil || !o.State.Sold || o.State.Winner != "x" || o.State.Final != 20000 {
		t.Fatalf("buy now: %+v %v", o.State, err)
	}
	if _, err := h.Auctions.BuyNow(ctx, "a", "", "y"); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("second buy now: %v", err)
	}
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "y", Max: 30000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("bid after sale: %v", err)
	}
	putAuction(t, h, "b", c)
	bid(t, h, "b", "x", 1000)
	if _, err := h.Auctions.BuyNow(ctx, "b", "", "y"); !errors.Is(err, auction.ErrBuyNowGone) {
		t.Fatalf("buy now after the first bid: %v", err)
	}
	c.BuyNowPrice = nil
	putAuction(t, h, "c", c)
	if _, err := h.Auctions.BuyNow(ctx, "c", "", "y"); !errors.Is(err, auction.ErrBuyNowGone) {
		t.Fatalf("buy now without a price: %v", err)
	}
}

func testBuyNowWithReserve(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.ReservePrice, c.BuyNowPrice = ptr(5000), ptr(9000)
	putAuction(t, h, "a", c)
	bid(t, h, "a", "x", 3000)
	o, err := h.Auctions.BuyNow(ctx, "a", "", "y") // bids below the reserve keep buy now
	if err != nil {
		t.Fatalf("buy now below the reserve: %v", err)
	}
	// The buyer holds the lot at the price sold, not the bidder it bought out (who is no winner).
	if s := o.State; s.Leader != "y" || s.Winner != "y" || s.Price != 9000 || s.Final != 9000 || !s.ReserveMet() {
		t.Fatalf("sold over a bid: %+v", s)
	}
	if s, _ := h.Auctions.Get(ctx, "a"); s.Leader != "y" || s.Price != 9000 {
		t.Fatalf("read after the sale: leader %q at %d", s.Leader, s.Price)
	}
	putAuction(t, h, "b", c)
	bid(t, h, "b", "x", 6000)
	if _, err := h.Auctions.BuyNow(ctx, "b", "", "y"); !errors.Is(err, auction.ErrBuyNowGone) {
		t.Fatalf("buy now once the reserve is met: %v", err)
	}
}

func testSoftClose(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.SoftClose = &auction.SoftClose{Window: rushgate.Duration(2 * time.Minute), Extend: rushgate.Duration(5 * time.Minute)}
	putAuction(t, h, "a", c)
	bid(t, h, "a", "x", 1000)
	h.Advance(56 * time.Minute) // four minutes before the end: outside the window, though inside extend
	if o := bid(t, h, "a", "y", 2000); !o.State.EndsAt.Equal(c.EndsAt) {
		t.Fatalf("extended outside the window: %v", o.State.EndsAt)
	}
	h.Advance(3 * time.Minute) // one minute before the end
	o := bid(t, h, "a", "x", 3000)
	if want := h.Now().Add(5 * time.Minute); !o.State.EndsAt.Equal(want) {
		t.Fatalf("ends at %v, want %v", o.State.EndsAt, want)
	}
	if ev := o.Events[len(o.Events)-1]; ev.Kind != auction.EventExtended || !ev.EndsAt.Equal(o.State.EndsAt) {
		t.Fatalf("no extension event: %+v", o.Events)
	}
	h.Advance(4 * time.Minute) // within the window of the new end: extended again
	o = bid(t, h, "a", "y", 4000)
	if want := h.Now().Add(5 * time.Minute); !o.State.EndsAt.Equal(want) {
		t.Fatalf("second extension: ends at %v, want %v", o.State.EndsAt, want)
	}
	h.Advance(5 * time.Minute)
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 9000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("bid at the extended end: %v", err)
	}
}

func testCloseAtEnd(t *testing.T, h Harness) {
	c := auctionCfg(h)
	putAuction(t, h, "a", c)
	bid(t, h, "a", "x", 3000)
	bid(t, h, "a", "y", 2000)
	ids, next, err := h.Auctions.Due(ctx, 10)
	if err != nil || slices.Contains(ids, "a") || next.IsZero() || next.After(c.EndsAt) {
		t.Fatalf("Due before the end: %v %v %v", ids, next, err)
	}
	h.Advance(time.Hour)
	ids, _, _ = h.Auctions.Due(ctx, 10)
	if !slices.Contains(ids, "a") {
		t.Fatalf("Due at the end: %v", ids)
	}
	// A bid whose step runs after the end is refused, and that step closes the auction.
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "z", Max: 9000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("bid after the end: %v", err)
	}
	o, err := h.Auctions.Close(ctx, "a")
	if err != nil || len(o.Events) != 0 {
		t.Fatalf("close after the refusing bid closed it: %+v %v", o.Events, err)
	}
	if s := o.State; !s.Closed || s.Winner != "x" || s.Final != 2100 {
		t.Fatalf("closed state %+v", s)
	}
	if ids, _, _ := h.Auctions.Due(ctx, 10); slices.Contains(ids, "a") {
		t.Fatal("closed auction still due")
	}
	putAuction(t, h, "b", auctionCfg(h))
	h.Advance(time.Hour)
	o, _ = h.Auctions.Close(ctx, "b")
	if len(o.Events) != 1 || o.Events[0].Kind != auction.EventClosed || o.State.Winner != "" {
		t.Fatalf("closing an auction without bids: %+v", o)
	}
}

// testWatchHearsEveryClose: a watch of an auction hears of its changes whichever call made them: a bid,
// and the close that a read after the end makes as the closer's would. Live feeds learn of the end from
// it; on the embedded backend the close a read made went unheard, and the feeds open then never ended.
func testWatchHearsEveryClose(t *testing.T, h Harness) {
	w, ok := h.Auctions.(auction.Watcher)
	if !ok {
		t.Fatal("the auction store has no Watch: live feeds would not hear of the changes their service did not make")
	}
	putAuction(t, h, "a", auctionCfg(h))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := w.Watch(wctx, "a")
	heard := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("the watch did not hear of %s", what)
		}
	}
	bid(t, h, "a", "x", 3000)
	heard("a bid")
	time.Sleep(200 * time.Millisecond) // Redis's word that the subscription holds may come too: take it
	select {
	case <-ch:
	default:
	}
	h.Advance(time.Hour)
	if st, err := h.Auctions.Get(ctx, "a"); err != nil || !st.Closed {
		t.Fatalf("a read after the end: %+v %v", st, err)
	}
	heard("the close a read made")
	cancel()
	for range ch { // the channel closes once the watch's context ends
	}
}

// testRefusedPutKeepsTheClose: a put refused because the auction has bids changes nothing, its close
// least of all: the auction is due at its own end, not at the end the put named. A put that moves the
// end of an auction without bids later leaves it open until then, whatever wakes a closer earlier.
func testRefusedPutKeepsTheClose(t *testing.T, h Harness) {
	c := auctionCfg(h)
	putAuction(t, h, "a", c)
	bid(t, h, "a", "x", 3000)
	later := c
	later.EndsAt = c.EndsAt.Add(24 * time.Hour)
	if err := h.Auctions.Put(ctx, "a", later); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("put of an auction with bids: %v", err)
	}
	h.Advance(c.EndsAt.Sub(h.Now()) + time.Second)
	if ids, _, err := h.Auctions.Due(ctx, 10); err != nil || !slices.Contains(ids, "a") {
		t.Fatalf("Due at its end after a refused put: %v %v", ids, err)
	}

	c = auctionCfg(h)
	putAuction(t, h, "b", c)
	later = c
	later.EndsAt = c.EndsAt.Add(time.Hour)
	putAuction(t, h, "b", later)
	h.Advance(c.EndsAt.Sub(h.Now()) + time.Second)
	ids, _, err := h.Auctions.Due(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if o, err := h.Auctions.Close(ctx, id); err != nil || (id == "b" && o.State.Closed) {
			t.Fatalf("Close(%s) before its new end: %+v %v", id, o.State, err)
		}
	}
	ids, next, err := h.Auctions.Due(ctx, 10)
	if err != nil || slices.Contains(ids, "b") || !next.Equal(later.EndsAt) {
		t.Fatalf("Due after the closer's look: %v next %v (want b's new end %v) %v", ids, next, later.EndsAt, err)
	}
}

func testRefusals(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.StartsAt = h.Now().Add(time.Minute).Truncate(time.Millisecond)
	putAuction(t, h, "a", c)
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 5000}); !errors.Is(err, auction.ErrNotStarted) {
		t.Fatalf("before the start: %v", err)
	}
	if s, _ := h.Auctions.Get(ctx, "a"); s.Status(h.Now()) != auction.StatusScheduled {
		t.Fatalf("status before the start: %s", s.Status(h.Now()))
	}
	h.Advance(time.Minute)
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 999}); !errors.Is(err, auction.ErrTooLow) {
		t.Fatalf("below the start price: %v", err)
	}
	if _, err := h.Auctions.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 0}); !errors.Is(err, auction.ErrInvalidAmount) {
		t.Fatalf("zero: %v", err)
	}
	if _, err := h.Auctions.Bid(ctx, "nope", "", auction.Bid{Bidder: "x", Max: 5000}); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("unknown auction: %v", err)
	}
	bid(t, h, "a", "x", 5000)
	if err := h.Auctions.Put(ctx, "a", c); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("replacing an auction with bids: %v", err)
	}
}

func testEvents(t *testing.T, h Harness) {
	putAuction(t, h, "a", auctionCfg(h))
	for i, who := range []string{"x", "y", "x", "y"} {
		bid(t, h, "a", who, int64(2000+1000*i))
	}
	all, err := h.Auctions.Events(ctx, "a", 0, 100)
	if err != nil || len(all) < 4 {
		t.Fatalf("events %v %v", all, err)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if i > 0 && ev.Kind == auction.EventBid && ev.Price <= all[i-1].Price {
			t.Fatalf("bid prices do not strictly increase: %+v", all)
		}
	}
	rest, _ := h.Auctions.Events(ctx, "a", 2, 100)
	if !slices.Equal(rest, all[2:]) {
		t.Fatalf("resume after 2: %v, want %v", rest, all[2:])
	}
	if page, _ := h.Auctions.Events(ctx, "a", 1, 2); len(page) != 2 || page[0].Seq != 2 {
		t.Fatalf("page: %v", page)
	}
	if page, err := h.Auctions.Events(ctx, "a", math.MaxInt64, 2); err != nil || len(page) != 0 {
		t.Fatalf("after the largest number: %v, %v", page, err)
	}
}

// testConcurrentBids races 300 bidders: every accepted bid raises the price strictly, and the winner is
// the holder of the highest accepted bid.
func testConcurrentBids(t *testing.T, h Harness) {
	cfg := auctionCfg(h)
	putAuction(t, h, "a", cfg)
	st, _ := h.Auctions.Get(ctx, "a")
	var wg sync.WaitGroup
	var accepted atomic.Int64
	var mu sync.Mutex
	var seen []auction.State // what each answer showed
	for i := range 300 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for range 5 {
				o, err := h.Auctions.Bid(ctx, "a", st.Rev, auction.Bid{Bidder: fmt.Sprintf("b%03d", i), Max: 1000 + rng.Int64N(100000)})
				var low *auction.TooLowError
				if err == nil {
					accepted.Add(1)
				} else if !errors.As(err, &low) {
					t.Error(err)
				} else if want := o.State.Price + cfg.Increment.Step(o.State.Price); o.State.Leader != fmt.Sprintf("b%03d", i) && low.Min != want {
					t.Errorf("refused below %d, but the state shown (%d by %s) asks for %d", low.Min, o.State.Price, o.State.Leader, want)
				}
				mu.Lock()
				seen = append(seen, o.State)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	evs, _ := h.Auctions.Events(ctx, "a", 0, 10000)
	last := int64(0)
	at := map[int64]auction.Event{} // the last bid as of each event
	var bid auction.Event
	for _, ev := range evs {
		if ev.Kind == auction.EventBid {
			if ev.Price <= last {
				t.Fatalf("price went from %d to %d", last, ev.Price)
			}
			last, bid = ev.Price, ev
		}
		at[ev.Seq] = bid
	}
	// Every answer, accepted or refused, showed the auction as it was at one point of its log, though
	// the answers of a batch share one reply.
	for _, s := range seen {
		if b := at[s.Seq]; s.Seq > 0 && (s.Price != b.Price || s.Leader != b.Bidder) {
			t.Fatalf("an answer showed %d by %s as of event %d, the log %d by %s", s.Price, s.Leader, s.Seq, b.Price, b.Bidder)
		}
	}
	h.Advance(time.Hour)
	o, _ := h.Auctions.Close(ctx, "a")
	if o.State.Final != last || o.State.Winner != evs[len(evs)-1].Bidder || accepted.Load() == 0 {
		t.Fatalf("winner %s at %d; the last accepted bid was %d by %s", o.State.Winner, o.State.Final, last, evs[len(evs)-1].Bidder)
	}
}

func testConcurrentBuyNow(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.BuyNowPrice = ptr(50000)
	putAuction(t, h, "a", c)
	var wg sync.WaitGroup
	var sold atomic.Int64
	for i := range 300 {
		wg.Go(func() {
			if _, err := h.Auctions.BuyNow(ctx, "a", "", fmt.Sprintf("b%03d", i)); err == nil {
				sold.Add(1)
			}
		})
	}
	wg.Wait()
	if sold.Load() != 1 {
		t.Fatalf("%d buyers, want exactly 1", sold.Load())
	}
}

// testReplaceAndDelete: an auction that closed without bids (a wrong end) can be corrected, and its
// events go on in sequence; one with bids, or sold, can be neither replaced nor deleted; one without
// bids can be deleted, and created again, its events numbering on after the deleted one's.
func testReplaceAndDelete(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.EndsAt = h.Now().Add(time.Second).Truncate(time.Millisecond)
	putAuction(t, h, "a", c)
	h.Advance(2 * time.Second)
	o, err := h.Auctions.Close(ctx, "a")
	if err != nil || !o.State.Closed || len(o.Events) != 1 {
		t.Fatalf("closing the mistaken auction: %+v %v", o, err)
	}
	closedSeq := o.Events[0].Seq
	putAuction(t, h, "a", auctionCfg(h)) // corrected: ends in an hour
	st, err := h.Auctions.Get(ctx, "a")
	if err != nil || st.Closed || st.Status(h.Now()) != auction.StatusOpen {
		t.Fatalf("the corrected auction: %+v %v", st, err)
	}
	// A replacement is the config put, whole: nothing of the one it replaced stays, however the store
	// keeps configs it read (all of these are left out of the replacement's JSON).
	full, bare := auctionCfg(h), auctionCfg(h)
	price := int64(5000)
	full.Message, full.Room, full.ReservePrice, full.BuyNowPrice = "m", "r", &price, &price
	full.SoftClose = &auction.SoftClose{Window: rushgate.Duration(time.Minute), Extend: rushgate.Duration(time.Minute)}
	putAuction(t, h, "full", full)
	if st, err := h.Auctions.Get(ctx, "full"); err != nil || st.Config.Room != "r" {
		t.Fatalf("the auction before its replacement: %+v %v", st.Config, err)
	}
	putAuction(t, h, "full", bare)
	if got, err := h.Auctions.Get(ctx, "full"); err != nil || !reflect.DeepEqual(got.Config, bare) {
		t.Fatalf("the replaced auction's config: %+v, %v; want %+v", got.Config, err, bare)
	}
	first := bid(t, h, "a", "x", 3000)
	if len(first.Events) != 1 || first.Events[0].Seq <= closedSeq {
		t.Fatalf("the corrected auction's first event %+v, want a sequence after the close's %d", first.Events, closedSeq)
	}
	evs, err := h.Auctions.Events(ctx, "a", closedSeq, 10)
	if err != nil || len(evs) != 1 || evs[0].Seq != first.Events[0].Seq {
		t.Fatalf("events after the close: %+v %v", evs, err)
	}
	if err := h.Auctions.Put(ctx, "a", auctionCfg(h)); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("replacing an auction with bids: %v", err)
	}
	if err := h.Auctions.Delete(ctx, "a"); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("deleting an auction with bids: %v", err)
	}
	if _, err := h.Auctions.Get(ctx, "a"); err != nil {
		t.Fatalf("a refused delete changed the auction: %v", err)
	}

	b := auctionCfg(h)
	b.BuyNowPrice = ptr(5000)
	putAuction(t, h, "sold", b)
	if _, err := h.Auctions.BuyNow(ctx, "sold", "", "y"); err != nil {
		t.Fatal(err)
	}
	if err := h.Auctions.Delete(ctx, "sold"); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("deleting a sold auction: %v", err)
	}
	if err := h.Auctions.Put(ctx, "sold", auctionCfg(h)); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("replacing a sold auction: %v", err)
	}

	g := auctionCfg(h)
	g.EndsAt = h.Now().Add(time.Second).Truncate(time.Millisecond)
	putAuction(t, h, "gone", g)
	h.Advance(2 * time.Second)
	o, err = h.Auctions.Close(ctx, "gone") // an event to number, and no bids
	if err != nil || len(o.Events) != 1 {
		t.Fatalf("closing the auction to delete: %+v %v", o, err)
	}
	goneSeq := o.Events[0].Seq
	if err := h.Auctions.Delete(ctx, "gone"); err != nil {
		t.Fatalf("deleting an auction without bids: %v", err)
	}
	if _, err := h.Auctions.Get(ctx, "gone"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if _, err := h.Auctions.Bid(ctx, "gone", "", auction.Bid{Bidder: "x", Max: 5000}); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("Bid after Delete: %v", err)
	}
	if evs, err := h.Auctions.Events(ctx, "gone", 0, 10); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("Events after Delete: %v, %v", evs, err)
	}
	if ids, _, _ := h.Auctions.Due(ctx, 10); slices.Contains(ids, "gone") {
		t.Fatal("a deleted auction is due")
	}
	if err := h.Auctions.Delete(ctx, "gone"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	// Created again, it numbers on: a feed that resumes after the deleted one's last event misses
	// none of the new one's.
	putAuction(t, h, "gone", auctionCfg(h))
	if o := bid(t, h, "gone", "z", 2000); o.State.Leader != "z" || o.State.Bids != 1 || len(o.Events) != 1 || o.Events[0].Seq != goneSeq+1 {
		t.Fatalf("the auction created again: %+v, events %+v; want its first event numbered %d", o.State, o.Events, goneSeq+1)
	}
	// Its history goes on from the deleted one's, as a replaced auction's does.
	if evs, err := h.Auctions.Events(ctx, "gone", 0, 10); err != nil || len(evs) != 2 || evs[0].Kind != auction.EventClosed || evs[1].Seq != goneSeq+1 {
		t.Fatalf("the events of the auction created again: %+v %v, want the deleted one's close, then the bid", evs, err)
	}
}

// testAuctionRevision: a bid or buy-now that names a revision other than the auction's config's is
// refused with ErrStale and changes nothing; at the current revision it goes through, and the state it
// answers carries the config of that revision.
func testAuctionRevision(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.Title, c.BuyNowPrice = "first", ptr(9000)
	putAuction(t, h, "a", c)
	first, err := h.Auctions.Get(ctx, "a")
	if err != nil || first.Rev == "" || first.Config.Title != "first" {
		t.Fatalf("Get: %+v %v, want a revision and the first config", first, err)
	}
	c.Title = "second"
	putAuction(t, h, "a", c)
	if _, err := h.Auctions.Bid(ctx, "a", first.Rev, auction.Bid{Bidder: "x", Max: 5000}); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("bid at the replaced revision: %v, want ErrStale", err)
	}
	if _, err := h.Auctions.BuyNow(ctx, "a", first.Rev, "x"); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("buy-now at the replaced revision: %v, want ErrStale", err)
	}
	st, err := h.Auctions.Get(ctx, "a")
	if err != nil || st.Bids != 0 || st.Sold || st.Seq != first.Seq || st.Rev == first.Rev || st.Config.Title != "second" {
		t.Fatalf("after stale steps: %+v %v, want no bids, no sale, the second config at a new revision", st, err)
	}
	o, err := h.Auctions.Bid(ctx, "a", st.Rev, auction.Bid{Bidder: "x", Max: 5000})
	if err != nil || o.State.Bids != 1 || o.State.Rev != st.Rev || o.State.Config.Title != "second" {
		t.Fatalf("bid at the current revision: %+v %v", o.State, err)
	}
}

// testAuctionRestore: an auction taken back from a recorded state and its events goes on exactly as
// the one recorded: the same answers to the same bids (the leader's proxy maximum included), the
// numbering goes on, the bidders its events name count, and it closes at its end.
func testAuctionRestore(t *testing.T, h Harness) {
	c := auctionCfg(h)
	c.SoftClose = nil
	putAuction(t, h, "src", c)
	bid(t, h, "src", "x", 1500)
	bid(t, h, "src", "y", 1300) // x's proxy answers
	bid(t, h, "src", "z", 1700) // z leads at 1600, its maximum kept
	st, err := h.Auctions.Get(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := h.Auctions.Events(ctx, "src", 0, 100)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events %v %v", evs, err)
	}
	if err := h.Auctions.Restore(ctx, "copy", st, evs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	got, err := h.Auctions.Get(ctx, "copy")
	if err != nil || got.Price != st.Price || got.Leader != st.Leader || got.Bids != st.Bids || got.Seq != st.Seq ||
		!got.EndsAt.Equal(st.EndsAt) || got.Config.Title != c.Title {
		t.Fatalf("restored %+v %v, recorded %+v", got, err, st)
	}
	if copied, err := h.Auctions.Events(ctx, "copy", 0, 100); err != nil || !slices.Equal(copied, evs) {
		t.Fatalf("restored events %+v %v, recorded %+v", copied, err, evs)
	}
	// The bidders are counted again from the events, which name those who led at some point.
	named := map[string]bool{}
	for _, e := range evs {
		if e.Kind == auction.EventBid || e.Kind == auction.EventSold {
			named[e.Bidder] = true
		}
	}
	if n := bidders(t, h, "copy"); n != int64(len(named)) || n < 2 {
		t.Fatalf("restored bidders %d, named in the events %d", n, len(named))
	}
	for b := range named {
		if ok, err := h.Auctions.HasBidder(ctx, "copy", b); err != nil || !ok {
			t.Fatalf("restored bidder %q not known: %v", b, err)
		}
	}
	for _, b := range []auction.Bid{{Bidder: "y", Max: 1450}, {Bidder: "w", Max: 2000}} {
		want, werr := h.Auctions.Bid(ctx, "src", "", b)
		got, gerr := h.Auctions.Bid(ctx, "copy", "", b)
		if (werr == nil) != (gerr == nil) || got.State.Leader != want.State.Leader || got.State.Price != want.State.Price ||
			got.State.Seq != want.State.Seq || len(got.Events) != len(want.Events) {
			t.Fatalf("bid %+v: restored %+v %v, recorded %+v %v", b, got, gerr, want, werr)
		}
	}
	if err := h.Auctions.Restore(ctx, "copy", st, evs); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("restoring an auction with bids: %v", err)
	}
	if err := h.Auctions.Put(ctx, "copy", c); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("replacing a restored auction with bids: %v", err)
	}

	// Restores of one auction at once: one wins, the others find it restored, and it is whole.
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = h.Auctions.Restore(ctx, "race", st, evs) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, auction.ErrStarted) {
			t.Fatalf("a racing restore: %v (all: %v)", err, errs)
		}
	}
	if copied, err := h.Auctions.Events(ctx, "race", 0, 100); won != 1 || err != nil || !slices.Equal(copied, evs) {
		t.Fatalf("%d racing restores won; the events %+v %v, recorded %+v", won, copied, err, evs)
	}

	// Events out of order, or past the state's sequence, are refused and leave nothing.
	for _, bad := range [][]auction.Event{{evs[1], evs[0]}, append(slices.Clone(evs), auction.Event{Seq: st.Seq + 1, Kind: auction.EventBid})} {
		if err := h.Auctions.Restore(ctx, "bad", st, bad); err == nil {
			t.Fatal("restored events out of order")
		}
	}
	if _, err := h.Auctions.Get(ctx, "bad"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("a refused restore left an auction: %v", err)
	}

	// A restored auction closes at its end, to its leader.
	h.Advance(2 * time.Hour)
	closed, err := h.Auctions.Get(ctx, "copy")
	if err != nil || !closed.Closed || closed.Winner != "w" {
		t.Fatalf("after its end: %+v %v", closed, err)
	}
	// And one restored closed stays closed.
	if err := h.Auctions.Restore(ctx, "ended", closed, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Auctions.Bid(ctx, "ended", "", auction.Bid{Bidder: "late", Max: 9000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("a bid on a restored closed auction: %v", err)
	}
}

func bidders(t *testing.T, h Harness, id string) int64 {
	t.Helper()
	n, err := h.Auctions.Bidders(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
