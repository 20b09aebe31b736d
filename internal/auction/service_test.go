package auction_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/storetest"
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
	feed := svc.Follow("a")
	defer feed.Close()
	changed := feed.Changed()
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
func (refuseAll) Hold(context.Context, string, string, string, string) (bool, error) {
	return false, rushgate.ErrAdmissionRequired
}
func (refuseAll) Follows(context.Context, string, string) (bool, error) { return false, nil }
func (refuseAll) Unhold(context.Context, string, string) error          { return nil }
func (refuseAll) SoldOut(context.Context, string, string) error         { return nil }
func (refuseAll) Restock(context.Context, string, string, rushgate.Level) error {
	return nil
}

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

// recorded is the durable record as Put sees it: one auction's state and events, or an error.
type recorded struct {
	auctions map[string]auction.Outcome // the state and its events
	err      error
	reads    int
}

func (r *recorded) Auction(_ context.Context, id string) (auction.State, []auction.Event, error) {
	r.reads++
	if r.err != nil {
		return auction.State{}, nil, r.err
	}
	sv, ok := r.auctions[id]
	if !ok {
		return auction.State{}, nil, auction.ErrNotFound
	}
	return sv.State, sv.Events, nil
}

// entries keeps the audit entries appended to it.
type entries struct{ list []rushgate.Entry }

func (a *entries) Append(_ context.Context, e rushgate.Entry) error {
	a.list = append(a.list, e)
	return nil
}

func (a *entries) Entries(context.Context, rushgate.AuditFilter, int) ([]rushgate.Entry, error) {
	return a.list, nil
}

// TestPutRestoresWhatTheStoreLost: an auction the store does not know but the record holds with bids
// comes back as recorded, even when the put names another config (refused then, as for any auction
// with bids); one recorded without bids starts as put, going on from the recorded events; a put while the record cannot be
// read is refused and creates nothing; a known auction is put without a read of the record.
func TestPutRestoresWhatTheStoreLost(t *testing.T) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}

	// What the record holds: "lot" with two bids, "quiet" closed without any.
	earlier := memstore.NewAuctions(nil, nil)
	saved := map[string]auction.Outcome{}
	for _, id := range []string{"lot", "quiet"} {
		if err := earlier.Put(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []auction.Bid{{Bidder: "x", Max: 300}, {Bidder: "y", Max: 200}} {
		if _, err := earlier.Bid(ctx, "lot", "", b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := earlier.Reschedule(ctx, "quiet", now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"lot", "quiet"} {
		st, _ := earlier.Get(ctx, id)
		evs, _ := earlier.Events(ctx, id, 0, 100)
		saved[id] = auction.Outcome{State: st, Events: evs}
	}
	rec, log := &recorded{auctions: saved, err: errors.New("disk gone")}, &entries{}
	svc := auction.NewService(memstore.NewAuctions(nil, nil), auction.ServiceOptions{Record: rec, Audit: log})

	if err := svc.Put(ctx, "lot", cfg); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("with the record unreadable: %v", err)
	}
	if _, err := svc.Get(ctx, "lot"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("a refused put left an auction: %v", err)
	}
	rec.err = nil
	other := cfg
	other.Title = "Another lot"
	if err := svc.Put(ctx, "lot", other); !errors.Is(err, auction.ErrStarted) {
		t.Fatalf("another config for an auction recorded with bids: %v", err)
	}
	st, err := svc.Get(ctx, "lot")
	if want := saved["lot"].State; err != nil || st.Leader != want.Leader || st.Price != want.Price || st.Seq != want.Seq || st.Config.Title != "Lot" {
		t.Fatalf("restored %+v %v, recorded %+v", st, err, want)
	}
	if o, err := svc.Bid(ctx, "lot", auction.Bid{Bidder: "z", Max: 250}, nil); err != nil || o.State.Leader != "x" {
		t.Fatalf("x's recorded maximum answers a bid under it: %+v %v", o.State, err)
	}

	if err := svc.Put(ctx, "quiet", other); err != nil {
		t.Fatal(err)
	}
	o, err := svc.Bid(ctx, "quiet", auction.Bid{Bidder: "x", Max: 100}, nil)
	if err != nil || o.State.Config.Title != "Another lot" || o.Events[0].Seq != saved["quiet"].State.Seq+1 {
		t.Fatalf("a bid on the auction put anew: %+v %v (recorded up to %d)", o, err, saved["quiet"].State.Seq)
	}
	// Its history goes on from the recorded events, as a replaced auction's does.
	was := saved["quiet"].Events
	if evs, err := svc.Events(ctx, "quiet", 0, 10); err != nil || len(evs) != len(was)+1 || !slices.Equal(evs[:len(was)], was) || evs[len(was)].Kind != auction.EventBid {
		t.Fatalf("the events of the auction put anew: %+v %v; want the recorded ones %+v, then the bid", evs, err, was)
	}
	if len(log.list) != 2 || log.list[0].Action != "restore" || log.list[1].Action != "create" {
		t.Fatalf("audit %+v", log.list)
	}

	reads := rec.reads
	dearer := other
	dearer.StartPrice++
	if err := svc.Put(ctx, "quiet", dearer); !errors.Is(err, auction.ErrStarted) { // known, with a bid
		t.Fatalf("replacing an auction with a bid: %v", err)
	}
	if rec.reads != reads {
		t.Fatal("a put of a known auction read the record")
	}
}

// countingGets counts the reads of each auction.
type countingGets struct {
	auction.Store
	storetest.Reads
}

func (c *countingGets) Get(ctx context.Context, id string) (auction.State, error) {
	c.Add(id)
	return c.Store.Get(ctx, id)
}

// TestSamplingQuietsWhatIsOver: an auction closed or sold is sampled once a minute instead of every
// second, and one replaced after a close without bids is read every second again.
func TestSamplingQuietsWhatIsOver(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Second))
	store := &countingGets{Store: memstore.NewAuctions(clock.Now, nil)}
	hist := memstore.NewHistory(clock.Now)
	svc := auction.NewService(store, auction.ServiceOptions{History: hist, Clock: clock.Now})
	ctx := t.Context()
	lot := func(ends time.Time) auction.Config {
		return auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
			BuyNowPrice: ptr(900), StartsAt: clock.Now().Add(-time.Minute), EndsAt: ends}
	}
	for id, ends := range map[string]time.Time{"open": clock.Now().Add(time.Hour), "sold": clock.Now().Add(time.Hour), "ended": clock.Now().Add(time.Second)} {
		if err := svc.Put(ctx, id, lot(ends)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.BuyNow(ctx, "sold", "x", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, err := store.Close(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	store.Take()
	for range 120 {
		clock.Advance(time.Second)
		svc.Sample(ctx)
	}
	if got, want := store.Take(), map[string]int{"open": 120, "sold": 2, "ended": 2}; !maps.Equal(got, want) {
		t.Fatalf("reads over two minutes of samples: %v, want %v", got, want)
	}
	if err := svc.Put(ctx, "ended", lot(clock.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	store.Take()
	for range 3 {
		clock.Advance(time.Second)
		svc.Sample(ctx)
	}
	if got := store.Take(); got["ended"] != 3 {
		t.Fatalf("the replaced auction was read %d times in three samples", got["ended"])
	}

	// The metrics report what the sampler read, reading nothing themselves; an hour after it was sold,
	// the sold auction leaves them.
	latest := func() map[string]string {
		got := map[string]string{}
		svc.Latest(func(a auction.Summary) { got[a.ID] = fmt.Sprintf("%d %d %s", a.Price, a.Bids, a.Status) })
		return got
	}
	if got, want := latest(), map[string]string{"open": "100 0 open", "sold": "900 0 sold", "ended": "100 0 open"}; !maps.Equal(got, want) {
		t.Fatalf("latest: %v, want %v", got, want)
	}
	if n := store.Take(); len(n) != 0 {
		t.Fatalf("Latest read the store: %v", n)
	}
	for range 60 {
		clock.Advance(time.Minute)
		svc.Sample(ctx)
	}
	if got := latest(); got["sold"] != "" || got["open"] == "" {
		t.Fatalf("an hour later: %v", got)
	}
}

func ptr(v int64) *int64 { return &v }

// TestBidded: whether a visitor's bid was taken, for a page opened anew; a visitor that did not bid on
// an auction bid on through this instance costs no read of the auction (every page asks once), and an
// auction there is not is ErrNotFound.
func TestBidded(t *testing.T) {
	store := &countingGets{Store: memstore.NewAuctions(nil, nil)}
	svc := auction.NewService(store, auction.ServiceOptions{Poll: time.Minute})
	ctx := context.Background()
	now := time.Now()
	if err := svc.Put(ctx, "a", auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Bid(ctx, "a", auction.Bid{Bidder: "x", Max: 500}, nil); err != nil {
		t.Fatal(err)
	}
	store.Take()
	for visitor, want := range map[string]bool{"x": true, "y": false, "": false} {
		if got, err := svc.Bidded(ctx, "a", visitor); err != nil || got != want {
			t.Fatalf("Bidded(a, %q) = %v, %v; want %v", visitor, got, err, want)
		}
	}
	if reads := store.Take(); len(reads) != 0 {
		t.Fatalf("reads of the auction: %v", reads)
	}
	if _, err := svc.Bidded(ctx, "none", "x"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("an auction there is not: %v", err)
	}
}
