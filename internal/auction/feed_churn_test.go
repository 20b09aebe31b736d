package auction_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/memstore"
)

// TestFollowersComeAndGo: while 200 bids land, 16 goroutines keep opening a feed at some point of the
// auction, reading it for a while and closing it. Every feed sees every event after its start once
// and in order, and when the last feed closes no hub is left behind.
func TestFollowersComeAndGo(t *testing.T) {
	svc, ctx := openAuction(t, memstore.NewAuctions(nil, nil))
	const bids = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				st, err := svc.Get(ctx, "a")
				if err != nil {
					errs <- err
					return
				}
				f := svc.Follow("a")
				after, want := st.Seq, st.Seq+int64(1+rng.IntN(20))
				for after < want {
					changed := f.Changed()
					ups, err := f.Events(ctx, after, 1+rng.IntN(5))
					if err != nil {
						errs <- err
						break
					}
					for _, u := range ups {
						if u.Seq != after+1 {
							errs <- fmt.Errorf("a feed from %d saw %d after %d", st.Seq, u.Seq, after)
						}
						after = u.Seq
					}
					if len(ups) > 0 {
						continue
					}
					select {
					case <-changed:
					case <-done:
						want = after
					case <-ctx.Done():
						errs <- ctx.Err()
						want = after
					}
				}
				f.Close()
			}
		})
	}
	for i := range bids {
		if _, err := svc.Bid(ctx, "a", auction.Bid{Bidder: fmt.Sprint("b", i%3), Max: 100 + 10*int64(i), Exact: true}, nil); err != nil {
			t.Fatalf("bid %d: %v", i, err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := auction.Hubs(svc); n != 0 {
		t.Fatalf("%d hubs left after every feed closed", n)
	}
}
