package redisstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/storetest"
)

// The comparisons (storetest, alike.go) send the same random steps to the embedded backend and to
// Redis, each on its own fake clock, and every answer must agree, and what each backend's SQL record
// holds of claims and bids, Redis's once its recorder has made a pass.

// TestRoomsAnswerAlike compares the embedded backend's rooms with standalone Redis's.
func TestRoomsAnswerAlike(t *testing.T) {
	compareWithEmbedded(t, false, 3, storetest.CompareRooms)
}

// TestRoomsAnswerAlikeOnCluster compares them with a 3-master Cluster's, where the one-line rule
// crosses slots.
func TestRoomsAnswerAlikeOnCluster(t *testing.T) {
	compareWithEmbedded(t, true, 2, storetest.CompareRooms)
}

// TestAuctionsAnswerAlike compares the embedded backend's auctions with standalone Redis's.
func TestAuctionsAnswerAlike(t *testing.T) {
	compareWithEmbedded(t, false, 3, storetest.CompareAuctions)
}

// TestDropsAnswerAlike compares the embedded backend's drops with standalone Redis's.
func TestDropsAnswerAlike(t *testing.T) {
	compareWithEmbedded(t, false, 3, storetest.CompareDrops)
}

// compareWithEmbedded runs one comparison over n seeds (Cluster's from 101) between the embedded
// stores and Redis's, standalone or a Cluster, each recording into a SQLite record of its own.
func compareWithEmbedded(t *testing.T, cluster bool, n int, compare func(*testing.T, uint64, storetest.Harness, storetest.Harness)) {
	rdb := redistest.Client(t, redistest.SharedAt(t, cluster)...)
	ctx := context.Background()
	for _, seed := range storetest.Seeds(t, n) {
		if cluster {
			seed += 100
		}
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			clock := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
			b := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("alike"), Clock: clock.Now, Timeout: 5 * time.Second, Cluster: cluster})
			rec := sqlite(t)
			red := storetest.Harness{Name: "redis", Rooms: b.Rooms(), Auctions: b.Auctions(), Drops: b.Drops(),
				Advance: clock.Advance, Now: clock.Now, Record: rec, Settle: func() {
					if err := b.Drops().RecordOnce(ctx, "alike", rec); err != nil {
						t.Fatal(err)
					}
					if err := b.Auctions().RecordOnce(ctx, "alike", rec); err != nil {
						t.Fatal(err)
					}
				}}
			mine, mrec := storetest.NewClock(red.Now()), sqlite(t)
			compare(t, seed, storetest.Harness{Name: "embedded",
				Rooms: memstore.NewRooms(memstore.Options{Clock: mine.Now}), Auctions: memstore.NewAuctions(mine.Now, mrec),
				Drops: memstore.NewDrops(mine.Now, mrec), Advance: mine.Advance, Now: mine.Now, Record: mrec}, red)
		})
	}
}

// sqlite opens a SQL record in a file of the test's own.
func sqlite(t *testing.T) *record.DB {
	t.Helper()
	r, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
