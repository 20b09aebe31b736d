package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
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
	var next atomic.Int64
	n := load(ctx, *null, *conc, 1<<30, *dur)
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	rctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var ok, failed atomic.Int64
	lat := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range *conc {
		wg.Go(func() {
			for rctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(tokens)) {
					return
				}
				req, _ := http.NewRequestWithContext(rctx, "POST", *base+"/v1/drops/benchdrop/claims", nil)
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					if rctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat[w] = append(lat[w], time.Since(t0))
				if res.StatusCode == http.StatusCreated {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed.Load() > 0 {
		return fmt.Errorf("%d claim requests failed", failed.Load())
	}
	_, p50, p99 := percentiles(lat)
	rate := float64(ok.Load()) / elapsed.Seconds()
	fmt.Printf("null handler: %.0f req/s\n", n.perSec())
	fmt.Printf("successful claims: %.0f/s (%.2f of null); latency p50 %v, p99 %v (concurrency %d)\n",
		rate, rate/n.perSec(), p50, p99, *conc)
	return nil
}

// percentiles merges per-worker latencies and returns their count, median and 99th percentile.
func percentiles(perWorker [][]time.Duration) (int, time.Duration, time.Duration) {
	all := slices.Concat(perWorker...)
	if len(all) == 0 {
		return 0, 0, 0
	}
	slices.Sort(all)
	return len(all), all[len(all)/2].Round(time.Microsecond), all[len(all)*99/100].Round(time.Microsecond)
}

// mintVisitors has the site mint n visitor tokens, conc at a time.
func mintVisitors(ctx context.Context, base, key string, n, conc int) ([]string, error) {
	tokens := make([]string, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: 10 * time.Second}
	for range conc {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/visitors", strings.NewReader(fmt.Sprintf(`{"subject": "claim-%d"}`, i)))
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				var v struct {
					Token string `json:"visitor_token"`
				}
				_ = json.NewDecoder(res.Body).Decode(&v)
				res.Body.Close()
				tokens[i] = v.Token
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	return tokens, nil
}
