package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/storetest"
)

func sqlite(t *testing.T) *record.DB {
	r, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// openLot returns an auction store on rec, its clock, and the auction "lot": open for an hour, starting
// at 100 and rising by 10.
func openLot(t *testing.T, rec memstore.Records) (*memstore.Auctions, *storetest.Clock) {
	t.Helper()
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	a := memstore.NewAuctions(c.Now, rec)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: c.Now(), EndsAt: c.Now().Add(time.Hour)}
	if err := a.Put(context.Background(), "lot", cfg); err != nil {
		t.Fatal(err)
	}
	return a, c
}

// TestRecordMatchesStore races 300 bidders and checks that the SQL record holds exactly the events
// the store acknowledged, and the settlement the store decided.
func TestRecordMatchesStore(t *testing.T) {
	rec := sqlite(t)
	a, c := openLot(t, rec)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			_, _ = a.Bid(ctx, "lot", "", auction.Bid{Bidder: fmt.Sprintf("b%d", i), Max: int64(100 + (i*7919)%5000)})
		})
	}
	wg.Wait()
	c.Advance(time.Hour)
	o, _ := a.Close(ctx, "lot")
	mem, _ := a.Events(ctx, "lot", 0, 100000)
	rows, err := rec.Events(ctx, "lot")
	if err != nil || len(rows) != len(mem) {
		t.Fatalf("%d rows, %d events: %v", len(rows), len(mem), err)
	}
	for i := range rows {
		m := mem[i]
		if r := rows[i]; r.Seq != m.Seq || r.Kind != m.Kind || r.Bidder != m.Bidder || r.Price != m.Price || r.Proxy != m.Proxy {
			t.Fatalf("row %d = %+v, event %+v", i, r, m)
		}
	}
	res, _ := rec.Result(ctx, "lot")
	if res.Winner != o.State.Winner || res.FinalPrice != o.State.Final {
		t.Fatalf("recorded result %+v, store %s at %d", res, o.State.Winner, o.State.Final)
	}
}

// failing commits batches, failing while told to, and counts the commits; it passes them on to the
// Records it holds, if any, and records nothing else.
type failing struct {
	memstore.Records
	fail    atomic.Bool
	commits atomic.Int64
}

func (f *failing) Commit(ctx context.Context, b *record.Batch) error {
	f.commits.Add(1)
	if f.fail.Load() {
		return errors.New("disk full")
	}
	if f.Records != nil {
		return f.Records.Commit(ctx, b)
	}
	return nil
}

// Events reads what the Records it holds recorded, if any: nothing else is recorded.
func (f *failing) Events(ctx context.Context, id string) ([]auction.Event, error) {
	if f.Records != nil {
		return f.Records.Events(ctx, id)
	}
	return nil, nil
}

func (f *failing) ForgetAuction(context.Context, string) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return nil
}

// TestUnrecordedBidIsRefused: when the record cannot be written the bid is refused as unavailable and
// the auction is left exactly as it was.
func TestUnrecordedBidIsRefused(t *testing.T) {
	f := &failing{}
	a, _ := openLot(t, f)
	ctx := context.Background()
	_, _ = a.Bid(ctx, "lot", "", auction.Bid{Bidder: "x", Max: 500})
	before, _ := a.Get(ctx, "lot")
	f.fail.Store(true)
	if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "y", Max: 900}); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("bid with a failing record: %v", err)
	}
	f.fail.Store(false)
	after, _ := a.Get(ctx, "lot")
	evs, _ := a.Events(ctx, "lot", 0, 100)
	if !reflect.DeepEqual(after, before) || len(evs) != 1 {
		t.Fatalf("a refused bid changed the auction: %+v -> %+v, %d events", before, after, len(evs))
	}
}

// TestEndedAuctionAmendIsRecorded: an ended auction's new message makes no event, yet is written to the
// record before it is answered, so that the embedded backend has it after a restart; one the record
// refuses changes nothing.
func TestEndedAuctionAmendIsRecorded(t *testing.T) {
	rec := sqlite(t)
	f := &failing{Records: rec}
	a, c := openLot(t, f)
	ctx := context.Background()
	if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "x", Max: 500}); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Hour)
	st, err := a.Get(ctx, "lot")
	if err != nil || !st.Over() {
		t.Fatalf("past its end: %+v %v", st, err)
	}
	cfg := st.Config
	cfg.Message = "The winner has been contacted"
	f.fail.Store(true)
	if _, err := a.Amend(ctx, "lot", st.Rev, cfg); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("an amend the record refuses: %v", err)
	}
	if after, _ := a.Get(ctx, "lot"); !reflect.DeepEqual(after, st) {
		t.Fatalf("a refused amend changed the auction: %+v -> %+v", st, after)
	}
	f.fail.Store(false)
	commits := f.commits.Load()
	if _, err := a.Amend(ctx, "lot", st.Rev, cfg); err != nil {
		t.Fatal(err)
	}
	if f.commits.Load() == commits {
		t.Fatal("the amend of an ended auction was answered without a commit")
	}
	saved, evs, err := rec.Auction(ctx, "lot")
	if err != nil || saved.Config.Message != cfg.Message || !saved.Closed || saved.Winner != "x" || evs[len(evs)-1].Kind != auction.EventClosed {
		t.Fatalf("the record after the amend: %+v, %d events %v", saved, len(evs), err)
	}
}

// TestFarDeadlinesDoNotStallCloser: auctions ending after 2262 (where Unix nanoseconds wrap; configs
// refuse them now, but a record may hold some) once looked overdue forever, so the closer spun on them
// at full CPU and closed nothing else. A hundred and fifty far deadlines and one near one: the near one
// closes on time and the far ones stay open.
func TestFarDeadlinesDoNotStallCloser(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	store := memstore.NewAuctions(c.Now, nil)
	ctx := context.Background()
	put := func(id string, ends time.Time) {
		cfg := auction.Config{Title: id, Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
			StartsAt: c.Now().Add(-time.Minute), EndsAt: ends}
		if err := store.Put(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		put(fmt.Sprintf("far-%d", i), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
	}
	put("near", c.Now().Add(time.Minute))
	svc := auction.NewService(store, auction.ServiceOptions{})
	c.Advance(2 * time.Minute)
	done := make(chan time.Time, 1)
	go func() { done <- svc.CloseDue(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("CloseDue still running after 10s: the closer spins on far deadlines")
	}
	if st, err := store.Get(ctx, "near"); err != nil || !st.Closed {
		t.Fatalf("near auction: closed %v, err %v; want closed", st.Closed, err)
	}
	if st, err := store.Get(ctx, "far-7"); err != nil || st.Closed {
		t.Fatalf("far auction: closed %v, err %v; want open", st.Closed, err)
	}
	ids, next, err := store.Due(ctx, 10)
	if err != nil || len(ids) != 0 || next.Year() < 2262 {
		t.Fatalf("Due after closing: %v next %v err %v; want nothing due and the far deadlines far", ids, next, err)
	}
}

// gated commits at once until armed; then a commit tells started, waits for release, and fails while
// fail is set.
type gated struct {
	memstore.Records
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
	fail    atomic.Bool
}

// Events reads nothing: nothing is recorded.
func (g *gated) Events(context.Context, string) ([]auction.Event, error) { return nil, nil }

func (g *gated) Commit(context.Context, *record.Batch) error {
	if !g.armed.Load() {
		return nil
	}
	g.started <- struct{}{}
	<-g.release
	if g.fail.Load() {
		return errors.New("fsync: input/output error")
	}
	return nil
}

// answer is what a bid was told.
type answer struct {
	o   auction.Outcome
	err error
}

// gatedLot opens the lot on an armed gated record (every commit is held until released) and returns
// the record, the store, and a way to bid on the lot in the background.
func gatedLot(t *testing.T) (*gated, *memstore.Auctions, func(bidder string, max int64) chan answer) {
	t.Helper()
	g := &gated{started: make(chan struct{}, 1), release: make(chan struct{})}
	a, _ := openLot(t, g)
	g.armed.Store(true)
	return g, a, func(bidder string, max int64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			o, err := a.Bid(context.Background(), "lot", "", auction.Bid{Bidder: bidder, Max: max})
			ch <- answer{o, err}
		}()
		return ch
	}
}

// TestRefusalsWhileCommitting: while a bid is being committed, a bid the last durable state refuses
// too is answered at once from that state (it shows nothing not yet durable), and one refused only
// because of the bid being committed waits for that commit and shows its outcome. If the commit fails,
// the waiting refusal fails with it, and the answered one stays true.
func TestRefusalsWhileCommitting(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("commit fails=", fail), func(t *testing.T) {
			g, _, bid := gatedLot(t)
			leader := bid("x", 500)
			<-g.started // x's bid is decided, and its commit is held
			g.fail.Store(fail)

			var low *auction.TooLowError
			select {
			case ans := <-bid("y", 50): // below the start price: refused by the durable state too
				if !errors.As(ans.err, &low) || low.Min != 100 || ans.o.State.Leader != "" {
					t.Fatalf("bid of 50 while x's commits: %+v, %v; want too low, minimum 100, no leader shown", ans.o.State, ans.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a bid the durable state refuses waited for another bid's commit")
			}

			waiting := bid("z", 100) // the durable state would take it; x's bid being committed refuses it
			select {
			case ans := <-waiting:
				t.Fatalf("a refusal that shows a bid not yet durable was answered before its commit: %+v, %v", ans.o.State, ans.err)
			case <-time.After(50 * time.Millisecond):
			}
			close(g.release)
			x, z := <-leader, <-waiting
			if fail {
				if !errors.Is(x.err, rushgate.ErrUnavailable) || !errors.Is(z.err, rushgate.ErrUnavailable) {
					t.Fatalf("failed commit: x %v, z %v; want both unavailable", x.err, z.err)
				}
				return
			}
			if x.err != nil || !errors.As(z.err, &low) || low.Min != 110 {
				t.Fatalf("x %v; z %v; want x accepted and z too low with minimum 110", x.err, z.err)
			}
		})
	}
}

// TestRefusalWaitsForTheEarliestRefusingStep: with x's bid being committed and w's queued behind it, a
// bid that the state after x's bid refuses already is answered once x's bid is committed, from that
// state (minimum 110, not the 320 after w's), without waiting for w's commit. Meanwhile the auction's
// feed shows only committed events, and its bidders count only bids taken and committed: not z, whom
// the state before x's bid would have taken.
func TestRefusalWaitsForTheEarliestRefusingStep(t *testing.T) {
	g, a, bid := gatedLot(t)
	ctx := context.Background()
	x := bid("x", 500)
	<-g.started // x's bid is decided; its commit is held
	w := bid("w", 300)
	for a.Undurable("lot") < 2 { // until w's bid is decided (x leads at 310), its commit queued behind x's
		time.Sleep(time.Millisecond)
	}
	if evs, _ := a.Events(ctx, "lot", 0, 10); len(evs) != 0 {
		t.Fatalf("the feed shows %d events not yet committed: %+v", len(evs), evs)
	}
	z := bid("z", 100) // the durable state takes it; the state after x's bid refuses it
	select {
	case ans := <-z:
		t.Fatalf("a refusal answered before the step it shows was committed: %+v, %v", ans.o.State, ans.err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release <- struct{}{} // x's commit only
	var low *auction.TooLowError
	select {
	case ans := <-z:
		if !errors.As(ans.err, &low) || low.Min != 110 || ans.o.State.Price != 100 || ans.o.State.Leader != "x" {
			t.Fatalf("z: %+v, %v; want too low with minimum 110, from the state after x's bid", ans.o.State, ans.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a refusal waited for a later step's commit than the one it shows")
	}
	<-g.started // w's commit, held
	select {
	case ans := <-w:
		t.Fatalf("w answered before its commit: %+v, %v", ans.o.State, ans.err)
	default:
	}
	g.release <- struct{}{}
	if ans := <-x; ans.err != nil {
		t.Fatalf("x: %v", ans.err)
	}
	if ans := <-w; ans.err != nil || ans.o.State.Price != 310 {
		t.Fatalf("w: %+v, %v; want accepted, x leading at 310", ans.o.State, ans.err)
	}
	if evs, _ := a.Events(ctx, "lot", 0, 10); len(evs) != 2 || evs[1].Price != 310 || !evs[1].Proxy {
		t.Fatalf("the feed after both commits: %+v; want x's bid and x's proxy answer to w", evs)
	}
	if n, _ := a.Bidders(ctx, "lot"); n != 2 {
		t.Fatalf("%d bidders counted; want x and w, not the refused z", n)
	}
}

// TestRetryAfterAFailedCommit: a step refused because the record failed, retried at once once the
// record takes writes again, goes through: the rollback is over before the refused step hears of it.
func TestRetryAfterAFailedCommit(t *testing.T) {
	f := &failing{}
	a, _ := openLot(t, f)
	ctx := context.Background()
	for i := range 300 {
		f.fail.Store(true)
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "x", Max: int64(200 + i)}); !errors.Is(err, rushgate.ErrUnavailable) {
			t.Fatalf("round %d: a bid the record refuses: %v", i, err)
		}
		f.fail.Store(false)
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: "x", Max: int64(200 + i)}); err != nil {
			t.Fatalf("round %d: the bid retried once the record takes writes: %v", i, err)
		}
	}
}
