package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// runClaim measures successful claims/s on one drop through HTTP: as in a real crowd every claim is
// a different visitor's first (tokens are minted beforehand), so every request takes a unit, next to
// the null handler's requests/s in the same run.
func runClaim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("claim", flag.ContinueOnError)
	base := fs.String("target", "http://127.0.0.1:8080", "rushgate base URL")
	null := fs.String("null", "http://127.0.0.1:9090/", "null handler URL")
	key := fs.String("admin-key", "", "rushgate admin key")
	conc := fs.Int("c", 64, "concurrent visitors")
	dur := fs.Duration("d", 5*time.Second, "length of each round")
	visitors := fs.Int("visitors", 60000, "visitors minted beforehand: the most claims a round can make")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, u := range []string{*base, *null} {
		if err := loopback(u); err != nil {
			return err
		}
	}
	cfg := fmt.Sprintf(`{"stock": 10000000, "opens_at": %q}`, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339))
	if err := adminDo(ctx, "PUT", *base+"/v1/drops/benchdrop", *key, cfg); err != nil {
		return err
	}
	tokens, err := mintVisitors(ctx, *base, *key, *visitors, *conc)
	if err != nil {
		return err
	}
	var next, ok atomic.Int64
	n := load(ctx, *null, *conc, 1<<30, *dur)
	round := timedRequests(ctx, *conc, *dur, func(ctx context.Context, _ int) (*http.Request, bool) {
		i := next.Add(1) - 1
		if i >= int64(len(tokens)) {
			return nil, false
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", *base+"/v1/drops/benchdrop/claims", nil)
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		return req, true
	}, func(_ int, res *http.Response) bool {
		if res.StatusCode != http.StatusCreated {
			return false
		}
		ok.Add(1)
		return true
	})
	if round.failed > 0 {
		return fmt.Errorf("%d claim requests failed", round.failed)
	}
	_, p50, p99 := percentiles(round.latencies)
	rate := float64(ok.Load()) / round.elapsed.Seconds()
	fmt.Printf("null handler: %.0f req/s\n", n.perSec())
	fmt.Printf("successful claims: %.0f/s (%.2f of null); latency p50 %v, p99 %v (concurrency %d)\n",
		rate, rate/n.perSec(), p50, p99, *conc)
	return nil
}
