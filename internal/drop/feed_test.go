package drop_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/memstore"
)

// TestFollowersShareReads: 40 live feeds of a drop on one instance are told of claims made on the
// store by anyone (another instance here) within about drop.FeedEvery, all from one read per interval
// however many feeds there are; a feed of a drop that sells out is told so; once every feed has closed,
// the reads stop.
func TestFollowersShareReads(t *testing.T) {
	store := &countingDrops{Store: memstore.NewDrops(nil, nil)}
	svc := drop.NewService(store, drop.Options{})
	defer svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := drop.Config{Stock: 3, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}
	if _, err := svc.Put(ctx, "d", cfg); err != nil {
		t.Fatal(err)
	}
	info, _ := svc.Get(ctx, "d")
	const feeds = 40
	followers := make([]*drop.Follower, feeds)
	for i := range followers {
		followers[i] = svc.Follow("d", info)
	}
	store.gets.Store(0)
	start := time.Now()
	for i := range 3 { // claims through the store, as another instance makes them
		if _, _, err := store.Claim(ctx, "d", "", fmt.Sprint("v", i), ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, f := range followers {
			wg.Go(func() {
				for {
					changed := f.Changed()
					if latest, _ := f.Latest(); latest.Claimed > i {
						return
					}
					select {
					case <-changed:
					case <-ctx.Done():
						t.Errorf("a feed was not told of claim %d", i+1)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	if limit := int64(elapsed/drop.FeedEvery) + 2; store.gets.Load() > limit {
		t.Fatalf("%d reads of the store in %v for %d feeds; one per %v was the point", store.gets.Load(), elapsed, feeds, drop.FeedEvery)
	}
	if latest, err := followers[0].Latest(); err != nil || latest.Status(time.Now()) != drop.StatusSoldOut {
		t.Fatalf("the feeds see %+v (%v), want sold out", latest, err)
	}
	for _, f := range followers {
		f.Close()
	}
	if n := drop.Feeds(svc); n != 0 {
		t.Fatalf("%d drops still read after every feed closed", n)
	}
}
