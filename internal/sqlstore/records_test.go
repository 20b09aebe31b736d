package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/sqlstore"
)

func TestSQLite(t *testing.T) {
	r, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	testRecords(t, r)
}

func TestPostgres(t *testing.T) {
	r, err := sqlstore.OpenPostgres(context.Background(), pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	testRecords(t, r)
}

// testRecords replays events as a crashed writer would (twice, and concurrently) and races two
// different closes: the record holds each event once and the first settlement only.
func testRecords(t *testing.T, r *sqlstore.Records) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: now, EndsAt: now.Add(time.Hour)}
	s := auction.New(cfg)
	var all []auction.Event
	for i, who := range []string{"a", "b", "a", "c"} {
		evs, err := s.Bid(auction.Bid{Bidder: who, Max: int64(200 + 100*i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	if _, err := r.Result(ctx, "lot"); !errors.Is(err, sqlstore.ErrNoResult) {
		t.Fatalf("result before the end: %v", err)
	}
	var wg sync.WaitGroup
	for range 4 { // the same batch delivered four times at once
		wg.Go(func() {
			if err := r.Record(ctx, "lot", s, all); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	closed := s.CloseIfDue(now.Add(time.Hour))
	if err := r.Record(ctx, "lot", s, closed); err != nil {
		t.Fatal(err)
	}
	fake := []auction.Event{{Seq: closed[0].Seq, Kind: auction.EventClosed, Bidder: "mallory", Price: 1}}
	if err := r.Record(ctx, "lot", s, fake); err != nil { // a replay with the same seq cannot rewrite it
		t.Fatal(err)
	}
	got, err := r.Events(ctx, "lot")
	if err != nil || len(got) != len(all)+1 {
		t.Fatalf("%d recorded events, want %d: %v", len(got), len(all)+1, err)
	}
	for i, ev := range got {
		if ev.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d", i, ev.Seq)
		}
	}
	res, err := r.Result(ctx, "lot")
	if err != nil || res.Winner != s.Winner || res.FinalPrice != s.Final || res.Status != "closed" {
		t.Fatalf("result %+v %v; want %s at %d", res, err, s.Winner, s.Final)
	}
	other := []auction.Event{{Seq: 99, Kind: auction.EventSold, Bidder: "late", Price: 5}}
	_ = r.Record(ctx, "lot", s, other)
	if again, _ := r.Result(ctx, "lot"); again != res {
		t.Fatalf("settled twice: %+v then %+v", res, again)
	}
	saved, err := r.Load(ctx)
	if err != nil || saved["lot"].State.Winner != s.Winner || saved["lot"].State.LeaderMax != s.LeaderMax || len(saved["lot"].Events) != len(got)+1 { // + the late seq-99 replay above
		t.Fatalf("loaded %+v, %v", saved["lot"], err)
	}
}

func TestClaimsIdempotent(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) *sqlstore.Records{
		"sqlite": func(t *testing.T) *sqlstore.Records {
			r, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"))
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
		"postgres": func(t *testing.T) *sqlstore.Records {
			r, err := sqlstore.OpenPostgres(context.Background(), pgtest.Start(t))
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := open(t)
			defer r.Close()
			ctx := context.Background()
			claims := []drop.Claim{{ID: "d.1", Seq: 1, Code: "A", Visitor: "x", ClaimedAt: time.Now()}, {ID: "d.2", Seq: 2, Code: "B", Visitor: "y", ClaimedAt: time.Now()}}
			for range 3 {
				if err := r.RecordClaims(ctx, "d", claims); err != nil {
					t.Fatal(err)
				}
			}
			got, err := r.Claims(ctx, "d")
			if err != nil || len(got) != 2 || got[1].Code != "B" {
				t.Fatalf("claims %+v %v", got, err)
			}
		})
	}
}
