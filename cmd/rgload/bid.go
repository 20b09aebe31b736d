package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
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
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	rctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var accepted, refused, failed atomic.Int64
	lat := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range *conc {
		wg.Go(func() {
			next := int64(1)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for rctx.Err() == nil {
				offer := fmt.Sprintf(`{"max_amount": %d}`, next+rng.Int64N(*margin+1))
				req, _ := http.NewRequestWithContext(rctx, "POST", *base+"/v1/auctions/benchhot/bids", strings.NewReader(offer))
				req.Header.Set("Authorization", "Bearer "+tokens[w])
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					if rctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				var body struct {
					Auction struct {
						Min int64 `json:"min_next_bid"`
					} `json:"auction"`
					Error struct {
						Min int64 `json:"min_next_bid"`
					} `json:"error"`
				}
				_ = json.NewDecoder(res.Body).Decode(&body)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat[w] = append(lat[w], time.Since(t0))
				switch res.StatusCode {
				case http.StatusCreated:
					accepted.Add(1)
					next = body.Auction.Min
				case http.StatusConflict:
					refused.Add(1)
					next = body.Error.Min
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed.Load() > 0 {
		return fmt.Errorf("%d bid requests failed", failed.Load())
	}
	count, p50, p99 := percentiles(lat)
	acc := float64(accepted.Load()) / elapsed.Seconds()
	reqs := float64(count) / elapsed.Seconds()
	fmt.Printf("null handler: %.0f req/s\n", n.perSec())
	fmt.Printf("bid requests: %.0f req/s (%.2f of null); accepted bids: %.0f/s (%.2f of null), refused as too low: %d\n",
		reqs, reqs/n.perSec(), acc, acc/n.perSec(), refused.Load())
	fmt.Printf("bid latency: p50 %v, p99 %v (concurrency %d)\n", p50, p99, *conc)
	return nil
}
