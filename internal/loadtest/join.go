package loadtest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type loadResult struct {
	ok, failed int64
	elapsed    time.Duration
}

func (r loadResult) perSec() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// load sends POSTs to target from conc workers until count requests are sent or d has passed.
func load(ctx context.Context, target string, conc, count int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent, ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil && sent.Add(1) <= int64(count) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
				res, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return loadResult{ok: ok.Load(), failed: failed.Load(), elapsed: time.Since(start)}
}

// runJoin alternates rounds against the null handler and rushgate's join, so that both see the same
// machine load, and reports the median ratio.
func runJoin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("join", flag.ContinueOnError)
	var c comparison
	c.flags(fs, "http://127.0.0.1:8080/v1/rooms/bench/join", "rushgate join URL", false)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	load(ctx, c.null, c.conc, 2000, time.Second) // warm up both
	load(ctx, c.target, c.conc, 2000, time.Second)
	return c.compare(ctx, "join", func(_ int, null bool) round {
		u := c.at(c.target, null)
		return timed(ctx, c.conc, c.dur, func(ctx context.Context, _ int) (*http.Request, bool) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
			return req, true
		}, func(_ int, res *http.Response) bool { return res.StatusCode == http.StatusOK })
	})
}

func adminDo(ctx context.Context, method, u, key, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("%s %s: %s %s", method, u, res.Status, b)
	}
	return nil
}
