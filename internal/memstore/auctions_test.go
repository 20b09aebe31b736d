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

// TestRecordMatchesStore races 300 bidders and checks that the SQL record holds exactly the events
// the store acknowledged, and the settlement the store decided.
func TestRecordMatchesStore(t *testing.T) {
	rec := sqlite(t)
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	a := memstore.NewAuctions(c.Now, rec)
	ctx := context.Background()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: c.Now(), EndsAt: c.Now().Add(time.Hour)}
	if err := a.Put(ctx, "lot", cfg); err != nil {
		t.Fatal(err)
	}
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

// failing commits batches, failing while told to, and counts the commits; it records nothing else.
type failing struct {
	memstore.Records
	fail    atomic.Bool
	commits atomic.Int64
}

func (f *failing) Commit(context.Context, *record.Batch) error {
	f.commits.Add(1)
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return nil
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
	c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	a := memstore.NewAuctions(c.Now, f)
	ctx := context.Background()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: c.Now(), EndsAt: c.Now().Add(time.Hour)}
	_ = a.Put(ctx, "lot", cfg)
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
