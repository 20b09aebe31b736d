package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// collectTokens sends n requests, conc at a time, and gathers the visitor_token and visitor_id of each
// answer.
func collectTokens(ctx context.Context, client *http.Client, n, conc int, request func(i int) *http.Request) (tokens, ids []string, err error) {
	tokens, ids = make([]string, n), make([]string, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				res, err := client.Do(request(i))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				var body struct {
					Token string `json:"visitor_token"`
					ID    string `json:"visitor_id"`
				}
				_ = json.NewDecoder(res.Body).Decode(&body)
				res.Body.Close()
				tokens[i], ids[i] = body.Token, body.ID
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, nil, err
	}
	return tokens, ids, ctx.Err()
}

// mintVisitors has the site mint n visitors, conc at a time: their tokens and their ids.
func mintVisitors(ctx context.Context, base, key string, n, conc int) (tokens, ids []string, err error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: 10 * time.Second}
	return collectTokens(ctx, client, n, conc, func(i int) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/visitors", strings.NewReader(fmt.Sprintf(`{"subject": "claim-%d"}`, i)))
		req.Header.Set("Authorization", "Bearer "+key)
		return req
	})
}

// timedRound is what timedRequests measured.
type timedRound struct {
	latencies [][]time.Duration // per worker
	elapsed   time.Duration
	failed    int64
}

// timedRequests has conc workers send requests until d has passed: next builds worker w's next
// request (false when it has none left) and check reads the answer and says whether it was a success.
// A request that fails in transport, or that check refuses, counts as failed.
func timedRequests(ctx context.Context, conc int, d time.Duration, next func(ctx context.Context, w int) (*http.Request, bool),
	check func(w int, res *http.Response) bool) timedRound {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var failed atomic.Int64
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, ok := next(ctx, w)
				if !ok {
					return
				}
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				good := check(w, res)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat[w] = append(lat[w], time.Since(t0))
				if !good {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return timedRound{latencies: lat, elapsed: time.Since(start), failed: failed.Load()}
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
