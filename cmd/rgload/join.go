package main

import (
	"context"
	"errors"
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
	target := fs.String("target", "http://127.0.0.1:8080/v1/rooms/bench/join", "rushgate join URL")
	null := fs.String("null", "http://127.0.0.1:9090/", "null handler URL")
	conc := fs.Int("c", 64, "concurrent connections")
	count := fs.Int("n", 200000, "most requests per round")
	dur := fs.Duration("d", 2*time.Second, "longest round")
	rounds := fs.Int("rounds", 9, "rounds against each server")
	want := fs.Float64("want", 0, "fail unless the median ratio reaches this")
	cpu := fs.String("cpu", "", "also report the CPU time per request of these processes: name=pid,name=pid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	procs, err := parseProcesses(*cpu)
	if err != nil {
		return err
	}
	meter := newCPUMeter(procs)
	nullRound := func() loadResult { return load(ctx, *null, *conc, *count, *dur) }
	joinRound := func() loadResult { return load(ctx, *target, *conc, *count, *dur) }
	for _, u := range []string{*target, *null} {
		if err := loopback(u); err != nil {
			return err
		}
	}
	load(ctx, *null, *conc, 2000, time.Second) // warm up both
	load(ctx, *target, *conc, 2000, time.Second)
	var ratios []float64
	fmt.Printf("%-6s %14s %14s %8s\n", "round", "null req/s", "join req/s", "ratio")
	for i := range *rounds {
		// Short rounds in alternating order (null first, then join first) cancel most of the drift of
		// a shared machine's speed, which over a few seconds is larger than the effect measured.
		var n, j loadResult
		var nerr, jerr error
		if i%2 == 0 {
			n, nerr = meter.measure("null", nullRound)
			j, jerr = meter.measure("join", joinRound)
		} else {
			j, jerr = meter.measure("join", joinRound)
			n, nerr = meter.measure("null", nullRound)
		}
		if err := errors.Join(nerr, jerr); err != nil {
			return err
		}
		if j.failed > 0 || n.failed > 0 {
			return fmt.Errorf("round %d: %d join and %d null requests failed", i+1, j.failed, n.failed)
		}
		r := j.perSec() / n.perSec()
		ratios = append(ratios, r)
		fmt.Printf("%-6d %14.0f %14.0f %8.2f\n", i+1, n.perSec(), j.perSec(), r)
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	meter.report("null", "join")
	fmt.Printf("join/null median ratio: %.2f (concurrency %d)\n", med, *conc)
	if med < *want {
		return fmt.Errorf("ratio %.2f is below the target %.2f", med, *want)
	}
	return nil
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
