package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// runBid measures bidding on one hot auction: every worker is a bidder that offers the last minimum it
// was told plus a random margin, as a crowd does in an auction's last seconds. It reports accepted bids/s and the
// p99 latency of a bid request, next to the null handler's requests/s measured in the same run.
func runBid(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bid", flag.ContinueOnError)
	base := fs.String("target", "http://127.0.0.1:8080", "rushgate base URL")
	null := fs.String("null", "http://127.0.0.1:9090/", "null handler URL")
	key := fs.String("admin-key", "", "rushgate admin key")
	conc := fs.Int("c", 64, "concurrent bidders")
	dur := fs.Duration("d", 5*time.Second, "length of each round")
	margin := fs.Int64("margin", 200, "bidders offer the minimum next bid plus up to this much")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, u := range []string{*base, *null} {
		if err := loopback(u); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "bench", "currency": "EUR", "start_price": 1, "increment": 1, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	if err := adminDo(ctx, "PUT", *base+"/v1/auctions/benchhot", *key, cfg); err != nil {
		return err
	}
	tokens, err := mintVisitors(ctx, *base, *key, *conc, *conc)
	if err != nil {
		return err
	}
	n := load(ctx, *null, *conc, 1<<30, *dur)
	var accepted, refused atomic.Int64
	next := make([]int64, *conc) // the minimum each bidder was last told
	rngs := make([]*rand.Rand, *conc)
	for w := range rngs {
		next[w], rngs[w] = 1, rand.New(rand.NewPCG(uint64(w), 1))
	}
	round := timedRequests(ctx, *conc, *dur, func(ctx context.Context, w int) (*http.Request, bool) {
		offer := fmt.Sprintf(`{"max_amount": %d}`, next[w]+rngs[w].Int64N(*margin+1))
		req, _ := http.NewRequestWithContext(ctx, "POST", *base+"/v1/auctions/benchhot/bids", strings.NewReader(offer))
		req.Header.Set("Authorization", "Bearer "+tokens[w])
		return req, true
	}, func(w int, res *http.Response) bool {
		var body struct {
			Auction struct {
				Min int64 `json:"min_next_bid"`
			} `json:"auction"`
			Error struct {
				Min int64 `json:"min_next_bid"`
			} `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		switch res.StatusCode {
		case http.StatusCreated:
			accepted.Add(1)
			next[w] = body.Auction.Min
		case http.StatusConflict:
			refused.Add(1)
			next[w] = body.Error.Min
		default:
			return false
		}
		return true
	})
	if round.failed > 0 {
		return fmt.Errorf("%d bid requests failed", round.failed)
	}
	count, p50, p99 := percentiles(round.latencies)
	acc := float64(accepted.Load()) / round.elapsed.Seconds()
	reqs := float64(count) / round.elapsed.Seconds()
	fmt.Printf("null handler: %.0f req/s\n", n.perSec())
	fmt.Printf("bid requests: %.0f req/s (%.2f of null); accepted bids: %.0f/s (%.2f of null), refused as too low: %d\n",
		reqs, reqs/n.perSec(), acc, acc/n.perSec(), refused.Load())
	fmt.Printf("bid latency: p50 %v, p99 %v (concurrency %d)\n", p50, p99, *conc)
	return nil
}
