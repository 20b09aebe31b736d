package auction_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/memstore"
)

// sharedAuctions is an auction store that other instances share, as Redis is: it counts the reads of
// events, and its watches report what the test says another instance did.
type sharedAuctions struct {
	auction.Store
	reads   atomic.Int64
	mu      sync.Mutex
	watches map[string][]chan struct{}
	ended   atomic.Int64 // watches whose context ended
}

func (s *sharedAuctions) Events(ctx context.Context, id string, after int64, limit int) ([]auction.Event, error) {
	s.reads.Add(1)
	return s.Store.Events(ctx, id, after, limit)
}

func (s *sharedAuctions) Watch(ctx context.Context, id string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watches[id] = append(s.watches[id], ch)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, c := range s.watches[id] {
			if c == ch {
				s.watches[id] = append(s.watches[id][:i], s.watches[id][i+1:]...)
			}
		}
		s.ended.Add(1)
		close(ch)
	}()
	return ch
}

// changedElsewhere tells the watches of id that another instance changed it.
func (s *sharedAuctions) changedElsewhere(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.watches[id] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (s *sharedAuctions) watching(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches[id])
}

// openAuction starts a service over store with auction "a" open for an hour, from 100 by steps of 10;
// the service stops and ctx ends with the test.
func openAuction(t *testing.T, store auction.Store) (*auction.Service, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	svc := auction.NewService(store, auction.ServiceOptions{Poll: time.Minute})
	svc.Start(ctx)
	t.Cleanup(svc.Stop)
	now := time.Now()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
	if err := svc.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	return svc, ctx
}

// follow runs a live feed's loop on f from after until it has seen seq want or ctx ends, and returns
// the sequence numbers it saw; progress, if not nil, holds the last.
func follow(ctx context.Context, f *auction.Follower, after, want int64, progress *atomic.Int64) ([]int64, error) {
	var seen []int64
	for after < want {
		changed := f.Changed()
		ups, err := f.Events(ctx, after, 500)
		if err != nil {
			return seen, err
		}
		for _, u := range ups {
			seen = append(seen, u.Seq)
			after = u.Seq
		}
		if progress != nil {
			progress.Store(after)
		}
		if len(ups) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return seen, ctx.Err()
		}
	}
	return seen, nil
}

// TestFollowersShareReads: 50 live feeds of one auction on one instance each see every one of 40 bids'
// events once and in order, while the store is read about once per change rather than once per feed
// per change, which is what a crowd watching a hot auction would cost. Each bid waits until every feed
// has shown the one before, so that no two changes share a read.
func TestFollowersShareReads(t *testing.T) {
	store := &sharedAuctions{Store: memstore.NewAuctions(nil, nil), watches: map[string][]chan struct{}{}}
	svc, ctx := openAuction(t, store)
	const feeds, bids = 50, 40
	var wg sync.WaitGroup
	var started sync.WaitGroup
	started.Add(feeds)
	results := make([][]int64, feeds)
	errs := make([]error, feeds)
	progress := make([]atomic.Int64, feeds)
	for i := range feeds {
		wg.Go(func() {
			f := svc.Follow("a")
			defer f.Close()
			started.Done()
			results[i], errs[i] = follow(ctx, f, 0, bids, &progress[i])
		})
	}
	started.Wait()
	for store.watching("a") == 0 && ctx.Err() == nil { // the watch starts on a goroutine of its own
		time.Sleep(time.Millisecond)
	}
	if n := store.watching("a"); n != 1 {
		t.Fatalf("%d watches of the store for %d feeds, want one", n, feeds)
	}
	store.reads.Store(0)
	for i := range bids {
		if _, err := svc.Bid(ctx, "a", auction.Bid{Bidder: fmt.Sprint("b", i%2), Max: 100 + 10*int64(i), Exact: true}, nil); err != nil {
			t.Fatalf("bid %d: %v", i, err)
		}
		for f := range progress {
			for progress[f].Load() < int64(i+1) && ctx.Err() == nil {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	wg.Wait()
	for i := range feeds {
		if errs[i] != nil || len(results[i]) != bids {
			t.Fatalf("feed %d saw %v (%v), want 1..%d", i, results[i], errs[i], bids)
		}
		for j, seq := range results[i] {
			if seq != int64(j+1) {
				t.Fatalf("feed %d saw %v, want 1..%d in order", i, results[i], bids)
			}
		}
	}
	// A read per change, and a few more where a change lands while a read is under way.
	if n := store.reads.Load(); n > 2*bids {
		t.Fatalf("%d reads of the store for %d bids and %d feeds; one read per change was the point", n, bids, feeds)
	}
	t.Logf("%d feeds, %d bids: %d reads of the store", feeds, bids, store.reads.Load())
	for store.watching("a") != 0 { // the last feed's Close ends the watch
		if ctx.Err() != nil {
			t.Fatalf("%d watches left after the last feed closed", store.watching("a"))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFollowerSeesOtherInstances: a bid that another instance made on the shared store reaches this
// instance's feed when the store's watch says so, with no bid through this service.
func TestFollowerSeesOtherInstances(t *testing.T) {
	mem := memstore.NewAuctions(nil, nil)
	store := &sharedAuctions{Store: mem, watches: map[string][]chan struct{}{}}
	svc := auction.NewService(store, auction.ServiceOptions{Poll: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc.Start(ctx)
	now := time.Now()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
	if err := svc.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	f := svc.Follow("a")
	changed := f.Changed()
	if ups, err := f.Events(ctx, 0, 10); err != nil || len(ups) != 0 {
		t.Fatalf("events before any bid: %v %v", ups, err)
	}
	for store.watching("a") == 0 { // the watch holds
		time.Sleep(time.Millisecond)
	}
	if _, err := mem.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 100}); err != nil { // another instance's bid
		t.Fatal(err)
	}
	store.changedElsewhere("a")
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the feed was not told of another instance's bid")
	}
	if ups, err := f.Events(ctx, 0, 10); err != nil || len(ups) != 1 || ups[0].Price != 100 {
		t.Fatalf("after another instance's bid: %v %v", ups, err)
	}
	f.Close()
	svc.Stop() // ends the watch too: goleak holds the package to it
	if store.ended.Load() != 1 {
		t.Fatalf("%d watches ended, want 1", store.ended.Load())
	}
}

// TestUpdatesSayWhatIsOpen: each bid's update carries the minimum next bid and, while the reserve is
// unmet, the buy-now price, exactly as a read of the auction right after the bid shows them; a
// closing event carries neither.
func TestUpdatesSayWhatIsOpen(t *testing.T) {
	mem := memstore.NewAuctions(nil, nil)
	svc := auction.NewService(mem, auction.ServiceOptions{})
	ctx := context.Background()
	now := time.Now()
	reserve, buyNow := int64(500), int64(900)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100,
		Increment:    auction.Increment{Tiers: []auction.Tier{{From: 0, Step: 10}, {From: 300, Step: 50}}},
		ReservePrice: &reserve, BuyNowPrice: &buyNow,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
	if err := svc.Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	f := svc.Follow("a")
	defer f.Close()
	after := int64(0)
	for i, b := range []auction.Bid{{Bidder: "x", Max: 100}, {Bidder: "y", Max: 350, Exact: true}, {Bidder: "x", Max: 700}, {Bidder: "y", Max: 2000}} {
		if _, err := svc.Bid(ctx, "a", b, nil); err != nil {
			t.Fatalf("bid %d: %v", i, err)
		}
		st, _ := svc.Get(ctx, "a")
		ups, err := f.Events(ctx, after, 10)
		if err != nil || len(ups) == 0 {
			t.Fatalf("bid %d: updates %v %v", i, ups, err)
		}
		last := ups[len(ups)-1]
		after = last.Seq
		var wantBuy *int64
		if st.BuyNowAvailable(now) {
			wantBuy = &buyNow
		}
		if last.MinNextBid != st.MinNext() || (last.BuyNowPrice == nil) != (wantBuy == nil) || last.ReserveMet == nil || *last.ReserveMet != st.ReserveMet() {
			t.Fatalf("bid %d: update %+v; the auction says min next %d, buy-now offered %v, reserve met %v", i, last, st.MinNext(),
				wantBuy != nil, st.ReserveMet())
		}
	}
	if _, err := svc.EndNow(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	ups, _ := f.Events(ctx, after, 10)
	if n := len(ups); n == 0 || ups[n-1].Kind != auction.EventClosed || ups[n-1].MinNextBid != 0 || ups[n-1].BuyNowPrice != nil {
		t.Fatalf("close: %+v", ups)
	}
}

// plainStore hides a store's Watch: the service then tells its followers of its own steps alone, at
// once, which a test can follow step by step.
type plainStore struct{ auction.Store }

// TestAChangeToldTwiceWakesOnce: a change told while an earlier one still waits to be read wakes no
// follower again, since the wake of the first brings both; a change told after that read does, and no
// event is lost either way. On a store that watches, every step is told twice (by the service and by
// the watch), and before, each feed woke for each telling.
func TestAChangeToldTwiceWakesOnce(t *testing.T) {
	svc, ctx := openAuction(t, plainStore{memstore.NewAuctions(nil, nil)})
	f := svc.Follow("a")
	defer f.Close()
	bid := func(who string, amount int64) {
		t.Helper()
		if _, err := svc.Bid(ctx, "a", auction.Bid{Bidder: who, Max: amount, Exact: true}, nil); err != nil {
			t.Fatal(err)
		}
	}
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	before := f.Changed()
	bid("x", 100)
	if !closed(before) {
		t.Fatal("the first bid woke nobody")
	}
	woken := f.Changed()
	bid("y", 110) // told while the first waits to be read
	if closed(woken) {
		t.Fatal("a second change woke the followers again before they read the first")
	}
	if ups, err := f.Events(ctx, 0, 10); err != nil || len(ups) != 2 || ups[0].Seq != 1 || ups[1].Seq != 2 {
		t.Fatalf("events after both: %+v %v; want both bids", ups, err)
	}
	read := f.Changed()
	bid("x", 120)
	if !closed(read) {
		t.Fatal("a change after the read woke nobody")
	}
	if ups, err := f.Events(ctx, 2, 10); err != nil || len(ups) != 1 || ups[0].Seq != 3 {
		t.Fatalf("events after the third bid: %+v %v", ups, err)
	}
}
