package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/sqlstore"
)

// dying writes to SQL, then dies before it can acknowledge: the write committed, the ack never came.
type dying struct{ *sqlstore.Records }

func (d dying) Record(ctx context.Context, id string, st auction.State, evs []auction.Event) error {
	if err := d.Records.Record(ctx, id, st, evs[:len(evs)/2]); err != nil {
		return err
	}
	return errors.New("killed before acknowledging")
}

// TestRecorderSurvivesAConsumerDeath: a consumer records half of what it read and dies without
// acknowledging; another consumer takes the unacknowledged events over, and the SQL record ends with
// every event exactly once and the one settlement.
func TestRecorderSurvivesAConsumerDeath(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv.Addr)
	a := redisstore.NewAuctions(redisstore.New(rdb, redisstore.Options{Prefix: "rec"}))
	a.ClaimIdle = 200 * time.Millisecond
	rec, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(300 * time.Millisecond)}
	if err := a.Put(ctx, "lot", cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := a.Bid(ctx, "lot", auction.Bid{Bidder: fmt.Sprintf("b%d", i%3), Max: int64(200 + 50*i)}); err != nil && !errors.Is(err, auction.ErrTooLow) {
			t.Fatal(err)
		}
	}
	if err := a.RecordOnce(ctx, "dies", dying{rec}); err == nil {
		t.Fatal("the dying consumer reported success")
	}
	time.Sleep(400 * time.Millisecond) // the auction ends, and the dead consumer's events go idle
	if _, err := a.Close(ctx, "lot"); err != nil {
		t.Fatal(err)
	}
	want, _ := a.Events(ctx, "lot", 0, 1000)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := a.RecordOnce(ctx, "lives", rec); err != nil {
			t.Fatal(err)
		}
		rows, _ := rec.Events(ctx, "lot")
		if len(rows) == len(want) {
			for i := range rows {
				if rows[i].Seq != want[i].Seq || rows[i].Price != want[i].Price || rows[i].Bidder != want[i].Bidder {
					t.Fatalf("row %d = %+v, event %+v", i, rows[i], want[i])
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %d events after the takeover", len(rows), len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := rec.Result(ctx, "lot")
	if last := want[len(want)-1]; err != nil || last.Kind != auction.EventClosed || res.Winner != last.Bidder || res.FinalPrice != last.Price {
		t.Fatalf("result %+v %v, last event %+v", res, err, last)
	}
}
