package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
)

// slowDB is a SQLite record whose commits take at least a fixed time, as an fsync on a slow disk does,
// fail while told to, and are counted.
type slowDB struct {
	*record.DB
	delay   time.Duration
	fail    atomic.Bool
	commits atomic.Int64
}

func (s *slowDB) Commit(ctx context.Context, b *record.Batch) error {
	s.commits.Add(1)
	time.Sleep(s.delay)
	if s.fail.Load() {
		return errors.New("fsync: input/output error")
	}
	return s.DB.Commit(ctx, b)
}

func openSlow(t *testing.T, delay time.Duration) *slowDB {
	t.Helper()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &slowDB{DB: db, delay: delay}
}

// claimAll has n visitors claim on d at once and returns their outcomes by visitor index.
func claimAll(d *memstore.Drops, from, n int) ([]drop.Claim, []error) {
	claims, errs := make([]drop.Claim, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			claims[i], _, errs[i] = d.Claim(context.Background(), "d", "", fmt.Sprint("v", from+i), fmt.Sprint("k", from+i))
		})
	}
	wg.Wait()
	return claims, errs
}

// TestGroupCommit: 300 claims at once, each answered only once it is in the record, share a handful of
// commits instead of one fsync each.
func TestGroupCommit(t *testing.T) {
	db := openSlow(t, 10*time.Millisecond)
	d := memstore.NewDrops(nil, db)
	ctx := context.Background()
	if err := d.Put(ctx, "d", drop.Config{Stock: 1000, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_, errs := claimAll(d, 0, 300)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	recorded, err := db.Claims(ctx, "d")
	if err != nil || len(recorded) != 300 {
		t.Fatalf("%d claims recorded of 300: %v", len(recorded), err)
	}
	if n := db.commits.Load(); n > 60 {
		t.Fatalf("300 claims took %d commits; group commit should share them", n)
	}
	t.Logf("300 claims in %d commits", db.commits.Load())
}

// TestFailedCommitRollsBack: while commits fail, every claim and bid of the failing batches is refused
// as unavailable and leaves no trace, in memory or in the record; once commits succeed again the
// next claims continue the sequence where the durable ones ended, and a repeated key answers its
// durable claim.
func TestFailedCommitRollsBack(t *testing.T) {
	db := openSlow(t, 2*time.Millisecond)
	d, a := memstore.NewDrops(nil, db), memstore.NewAuctions(nil, db)
	ctx := context.Background()
	if err := d.Put(ctx, "d", drop.Config{Stock: 1000, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	if err := a.Put(ctx, "a", auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, errs := claimAll(d, 0, 50); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	if _, err := a.Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 500}); err != nil {
		t.Fatal(err)
	}

	db.fail.Store(true)
	var wg sync.WaitGroup
	var bidErrs [20]error
	for i := range bidErrs {
		wg.Go(func() {
			_, bidErrs[i] = a.Bid(ctx, "a", "", auction.Bid{Bidder: fmt.Sprint("b", i), Max: 600 + int64(i)*20})
		})
	}
	_, errs := claimAll(d, 50, 100)
	wg.Wait()
	for _, err := range append(errs, bidErrs[:]...) {
		if !errors.Is(err, rushgate.ErrUnavailable) {
			t.Fatalf("a claim or bid while commits fail: %v, want ErrUnavailable", err)
		}
	}
	if info, _ := d.Get(ctx, "d"); info.Claimed != 50 {
		t.Fatalf("%d claimed after the failed batches, want the 50 durable ones", info.Claimed)
	}
	if st, _ := a.Get(ctx, "a"); st.Bids != 1 || st.Leader != "x" || st.Seq != 1 {
		t.Fatalf("auction after the failed batches: %+v, want the one durable bid", st)
	}

	db.fail.Store(false)
	claims, errs := claimAll(d, 50, 10)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Seq <= 50 || c.Seq > 60 {
			t.Fatalf("claim after recovery has seq %d, want 51..60", c.Seq)
		}
	}
	if c, created, err := d.Claim(ctx, "d", "", "v3", "k3"); err != nil || created || c.Seq > 50 {
		t.Fatalf("a repeated key after recovery: %+v %v %v, want its durable claim", c, created, err)
	}
	recorded, _ := db.Claims(ctx, "d")
	if len(recorded) != 60 {
		t.Fatalf("%d claims recorded, want 60", len(recorded))
	}
	for i, c := range recorded {
		if c.Seq != int64(i+1) {
			t.Fatalf("recorded claim %d has seq %d: a gap or a doubled claim", i, c.Seq)
		}
	}
	o, err := a.Bid(ctx, "a", "", auction.Bid{Bidder: "y", Max: 900})
	if err != nil || o.State.Leader != "y" || o.Events[0].Seq != 2 {
		t.Fatalf("bid after recovery: %+v %v, want y leading with event 2", o, err)
	}
	if evs, _ := db.Events(ctx, "a"); len(evs) != 2 {
		t.Fatalf("%d events recorded, want 2", len(evs))
	}
}

func (g *gated) RecordDrop(context.Context, string, drop.Config) error { return nil }

// TestSoldOutWaitsForTheLastClaims: a drop whose last unit is being committed answers the next claim
// "sold out" only once that unit is durable; if its commit fails, the refusal fails with it (503) rather
// than telling a visitor the stock is gone when it is not. Meanwhile neither the drop's list of claims
// nor the claimant's own shows the claim being committed.
func TestSoldOutWaitsForTheLastClaims(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("commit fails=", fail), func(t *testing.T) {
			g := &gated{started: make(chan struct{}, 1), release: make(chan struct{})}
			d := memstore.NewDrops(nil, g)
			ctx := context.Background()
			if err := d.Put(ctx, "d", drop.Config{Stock: 1, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
			g.armed.Store(true)
			g.fail.Store(fail)
			claim := func(v string) chan error {
				ch := make(chan error, 1)
				go func() {
					_, _, err := d.Claim(ctx, "d", "", v, "")
					ch <- err
				}()
				return ch
			}
			first := claim("v1")
			<-g.started // the last unit is decided, its commit held
			second := claim("v2")
			select {
			case err := <-second:
				t.Fatalf("answered %v while the last unit was being committed", err)
			case <-time.After(50 * time.Millisecond):
			}
			all, _ := d.Claims(ctx, "d", 0, 10)
			mine, _ := d.Mine(ctx, "d", "v1")
			if len(all) != 0 || len(mine) != 0 {
				t.Fatalf("a claim being committed is shown: all %+v, mine %+v", all, mine)
			}
			close(g.release)
			err1, err2 := <-first, <-second
			all, _ = d.Claims(ctx, "d", 0, 10)
			mine, _ = d.Mine(ctx, "d", "v1")
			if want := map[bool]int{false: 1, true: 0}[fail]; len(all) != want || len(mine) != want {
				t.Fatalf("after the commit (failed %v): all %+v, mine %+v; want %d each", fail, all, mine, want)
			}
			if fail {
				if !errors.Is(err1, rushgate.ErrUnavailable) || !errors.Is(err2, rushgate.ErrUnavailable) {
					t.Fatalf("failed commit: %v, %v; want both unavailable", err1, err2)
				}
				return
			}
			if err1 != nil || !errors.Is(err2, drop.ErrSoldOut) {
				t.Fatalf("%v, %v; want the unit taken, then sold out", err1, err2)
			}
		})
	}
}
