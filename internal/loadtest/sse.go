package loadtest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runSSE opens many idle event streams on one server, measures the server's resident memory per
// stream, then opens the room and measures how long each stream takes to receive its admission.
func runSSE(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	base := fs.String("target", "http://127.0.0.1:8080", "rushgate base URL")
	key := fs.String("admin-key", "", "rushgate admin key")
	pid := fs.Int("pid", 0, "rushgate's process id, to read its memory")
	n := fs.Int("n", 10000, "streams")
	maxKiB := fs.Float64("max-kib", 20, "fail above this many KiB per stream")
	maxLatency := fs.Duration("max-latency", time.Second, "fail if an admission takes longer to arrive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*base); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	roomURL := *base + "/v1/rooms/ssebench"
	if err := adminDo(ctx, "PUT", roomURL, *key, fmt.Sprintf(`{"capacity": %d, "paused": true, "idle_timeout": "10m"}`, *n)); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *n, DisableCompression: true}
	client := &http.Client{Transport: tr}
	tokens, err := joinMany(ctx, client, roomURL+"/join", *n)
	if err != nil {
		return err
	}
	runtimeSettle()
	mBefore := goMem(ctx, *base, *key)
	before, err := rss(*pid)
	if err != nil {
		return err
	}
	streams := make([]*sseStream, *n)
	var opened sync.WaitGroup
	sem := make(chan struct{}, 200)
	for i, tok := range tokens {
		sem <- struct{}{}
		opened.Add(1)
		streams[i] = openStream(ctx, client, roomURL+"/events", tok, func() { <-sem; opened.Done() })
	}
	opened.Wait()
	for _, s := range streams {
		if s.err != nil {
			return fmt.Errorf("stream: %w", s.err)
		}
	}
	runtimeSettle()
	after, err := rss(*pid)
	if err != nil {
		return err
	}
	mAfter := goMem(ctx, *base, *key)
	for _, k := range []string{"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines"} {
		fmt.Printf("  %s: %.0f -> %.0f (%.1f per stream)\n", k, mBefore[k], mAfter[k], (mAfter[k]-mBefore[k])/float64(*n))
	}
	perKiB := float64(after-before) / 1024 / float64(*n)
	fmt.Printf("idle streams: %d, server RSS %0.1f MiB -> %0.1f MiB: %.1f KiB per stream (limit %.0f)\n",
		*n, float64(before)/(1<<20), float64(after)/(1<<20), perKiB, *maxKiB)

	start := time.Now()
	if err := adminDo(ctx, "PUT", roomURL, *key, fmt.Sprintf(`{"capacity": %d, "paused": false, "idle_timeout": "10m"}`, *n)); err != nil {
		return err
	}
	deadline := time.After(30 * time.Second)
	var lat []time.Duration
	for _, s := range streams {
		select {
		case at := <-s.admitted:
			lat = append(lat, at.Sub(start))
		case <-deadline:
		}
	}
	cancel()
	slices.Sort(lat)
	if len(lat) < *n {
		return fmt.Errorf("only %d of %d streams received their admission", len(lat), *n)
	}
	p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	fmt.Printf("admission events: %d/%d received; latency p50 %v, p99 %v, max %v (limit %v)\n",
		len(lat), *n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond), *maxLatency)
	if perKiB > *maxKiB || worst > *maxLatency {
		return fmt.Errorf("over budget")
	}
	return nil
}

func runtimeSettle() { time.Sleep(2 * time.Second) }

func joinMany(ctx context.Context, client *http.Client, u string, n int) ([]string, error) {
	tokens, _, err := collectTokens(ctx, client, n, 32, func(int) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, "POST", u, nil)
		return req
	})
	return tokens, err
}

type sseStream struct {
	err      error
	admitted chan time.Time
}

// openStream connects one stream and calls ready once its first event arrived (or it failed); it then
// keeps reading and reports the moment the admission arrives.
func openStream(ctx context.Context, client *http.Client, u, tok string, ready func()) *sseStream {
	s := &sseStream{admitted: make(chan time.Time, 1)}
	go func() {
		once := sync.OnceFunc(ready)
		defer once()
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := client.Do(req)
		if err != nil {
			s.err = err
			return
		}
		defer res.Body.Close()
		br := bufio.NewReaderSize(res.Body, 1024)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				if err != io.EOF && ctx.Err() == nil {
					s.err = err
				}
				return
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			if strings.Contains(data, `"admitted"`) {
				s.admitted <- time.Now()
				return
			}
			once()
		}
	}()
	return s
}

// rss reads a process's resident set size in bytes.
func rss(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// goMem reads a few Go runtime gauges from the server's /metrics, to show where stream memory goes.
func goMem(ctx context.Context, base, adminKey string) map[string]float64 {
	out := map[string]float64{}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return out
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if f, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// event is one Server-Sent Event as a rehearsal reads it: its id, its name and its data.
type event struct{ id, name, data string }

// readEvents reads a stream of Server-Sent Events, handing each to each until each returns false or the
// stream ends. An event ends at a blank line; comments and the retry hint are not events.
func readEvents(body io.Reader, each func(event) bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var e event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if e.name != "" || data != nil {
				e.data = strings.Join(data, "\n")
				if !each(e) {
					return
				}
			}
			e, data = event{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.id = value
		case "event":
			e.name = value
		case "data":
			data = append(data, value)
		}
	}
}
