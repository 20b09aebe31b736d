package redisstore_test

import (
	"fmt"
	"testing"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/storetest"
)

// The comparisons (storetest, alike.go) send the same random steps to the embedded backend and to
// Redis, each on its own fake clock, and every answer must agree.

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
// stores and Redis's, standalone or a Cluster.
func compareWithEmbedded(t *testing.T, cluster bool, n int, compare func(*testing.T, uint64, storetest.Harness, storetest.Harness)) {
	addrs := []string{redistest.Shared(t)}
	if cluster {
		addrs = redistest.SharedCluster(t)
	}
	rdb := redistest.Client(t, addrs...)
	for _, seed := range storetest.Seeds(t, n) {
		if cluster {
			seed += 100
		}
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			red := harnesses(rdb, cluster)(t)
			red.Name = "redis"
			clock := storetest.NewClock(red.Now())
			compare(t, seed, storetest.Harness{Name: "embedded",
				Rooms: memstore.NewRooms(memstore.Options{Clock: clock.Now}), Auctions: memstore.NewAuctions(clock.Now, nil),
				Drops: memstore.NewDrops(clock.Now, nil), Advance: clock.Advance, Now: clock.Now}, red)
		})
	}
}
