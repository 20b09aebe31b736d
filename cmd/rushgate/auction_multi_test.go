package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestAuctionOnThreeInstances: 300 bidders bid at random instances of three sharing one Redis for an
// auction's last seconds, and 300 callers race buy-now on another. Accepted bids strictly increase,
// the winner holds the highest, the shared PostgreSQL record holds exactly the accepted events, and
// buy-now sells once.
func TestAuctionOnThreeInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	addr := redistest.Shared(t)
	dsn := pgtest.Database(t)
	in := startInstances(t, buildBinary(t), addr, 3, "--postgres", dsn)
	pick := func() string { return in[rand.IntN(3)].base }
	now := time.Now().UTC()
	end := now.Add(3 * time.Second)
	cfg := func(extra string) string {
		return fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": [{"from": 0, "step": 10}, {"from": 5000, "step": 50}],
			"starts_at": %q, "ends_at": %q%s}`, now.Add(-time.Minute).Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), extra)
	}
	if code, b, _ := do(t, "PUT", pick()+"/v1/auctions/hot", testAdminKey, cfg("")); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	if code, b, _ := do(t, "PUT", pick()+"/v1/auctions/buy", testAdminKey, cfg(`, "buy_now_price": 9000`)); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	tokens := make([]string, 300)
	for i := range tokens {
		_, v, _ := do(t, "POST", pick()+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "bidder-%d"}`, i))
		tokens[i] = v["visitor_token"].(string)
	}
	var wg sync.WaitGroup
	var accepted, sold atomic.Int64
	for i, tok := range tokens {
		wg.Go(func() {
			code, _, _ := do(t, "POST", pick()+"/v1/auctions/buy/buy-now", tok, "")
			if code == 200 {
				sold.Add(1)
			}
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			minNext := 100.0
			for time.Now().Before(end.Add(-200 * time.Millisecond)) {
				// bid just above the last minimum this bidder was told, as a sniper would
				code, body, _ := do(t, "POST", pick()+"/v1/auctions/hot/bids", tok, fmt.Sprintf(`{"max_amount": %d}`, int(minNext)+rng.IntN(30)))
				switch code {
				case 201:
					accepted.Add(1)
					minNext = body["auction"].(map[string]any)["min_next_bid"].(float64)
				case 409:
					if e, ok := body["error"].(map[string]any); ok && e["min_next_bid"] != nil {
						minNext = e["min_next_bid"].(float64)
					}
				default:
					t.Errorf("bid answered %d", code)
					return
				}
				time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if sold.Load() != 1 {
		t.Fatalf("%d buy-now sales, want 1", sold.Load())
	}
	time.Sleep(time.Until(end) + 1500*time.Millisecond) // the closers close it; the recorders catch up
	_, st, _ := do(t, "GET", pick()+"/v1/auctions/hot", "", "")
	var bids []map[string]any
	for after := 0.0; ; {
		_, page, _ := do(t, "GET", fmt.Sprintf("%s/v1/auctions/hot/bids?after=%d&limit=1000", pick(), int(after)), "", "")
		list := page["bids"].([]any)
		for _, b := range list {
			bids = append(bids, b.(map[string]any))
		}
		if page["next_after"].(float64) == after {
			break
		}
		after = page["next_after"].(float64)
	}
	last := 0.0
	for _, b := range bids {
		if p := b["price"].(float64); p <= last {
			t.Fatalf("accepted prices went from %v to %v", last, p)
		}
		last = b["price"].(float64)
	}
	top := bids[len(bids)-1]
	if st["status"] != "closed" || st["winner"] != top["bidder"] || st["final_price"] != last || accepted.Load() == 0 {
		t.Fatalf("closed as %v; the highest accepted bid was %v", st, top)
	}
	t.Logf("%d bids answered 201, %d accepted price changes, final %v", accepted.Load(), len(bids), last)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seq := st["seq"].(float64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rows, bidRows int
		_ = db.QueryRowContext(context.Background(), `SELECT count(*), count(*) FILTER (WHERE kind = 'bid') FROM auction_events WHERE auction_id = 'hot'`).Scan(&rows, &bidRows)
		if rows == int(seq) && bidRows == len(bids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SQL holds %d events (%d bids); the auction has %v events (%d bids)", rows, bidRows, seq, len(bids))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var winner string
	var final int64
	if err := db.QueryRow(`SELECT winner, final_price FROM auction_results WHERE auction_id = 'hot'`).Scan(&winner, &final); err != nil ||
		winner != top["bidder"] || float64(final) != last {
		t.Fatalf("SQL settlement %s at %d (%v); want %v at %v", winner, final, err, top["bidder"], last)
	}
}

// TestAuctionClosesAfterAllInstancesDown stops every instance (kill -9) across an auction's end on
// Redis: within a second of the first one starting again the auction is closed, with its winner.
func TestAuctionClosesAfterAllInstancesDown(t *testing.T) {
	addr := redistest.Shared(t)
	bin := buildBinary(t)
	in := startInstances(t, bin, addr, 2)
	now := time.Now().UTC()
	end := now.Add(1500 * time.Millisecond)
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	if code, _, _ := do(t, "PUT", in[0].base+"/v1/auctions/lot", testAdminKey, cfg); code != 200 {
		t.Fatal(code)
	}
	_, v, _ := do(t, "POST", in[1].base+"/v1/visitors", testAdminKey, `{"subject": "alice"}`)
	if code, _, _ := do(t, "POST", in[1].base+"/v1/auctions/lot/bids", v["visitor_token"].(string), `{"max_amount": 700}`); code != 201 {
		t.Fatal(code)
	}
	for _, i := range in {
		_ = i.cmd.Process.Kill()
		_ = i.cmd.Wait()
	}
	time.Sleep(time.Until(end) + 500*time.Millisecond)
	if state, _ := exec.Command("redis-cli", "-p", addr[len("127.0.0.1:"):], "HGET", prefixOf(t)+":{auction:lot}:state", "closed").Output(); string(state) != "0\n" {
		t.Fatalf("closed while every instance was down? %q", state)
	}
	again := startInstances(t, bin, addr, 1)[0]
	started := time.Now()
	for {
		out, _ := exec.Command("redis-cli", "-p", addr[len("127.0.0.1:"):], "HGET", prefixOf(t)+":{auction:lot}:state", "winner").Output()
		if string(out) == v["visitor_id"].(string)+"\n" {
			break
		}
		if time.Since(started) > time.Second {
			t.Fatalf("not closed within a second of the restart (winner %q)", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, st, _ := do(t, "GET", again.base+"/v1/auctions/lot", "", ""); st["status"] != "closed" || st["final_price"] != 100.0 {
		t.Fatalf("after restart: %v", st)
	}
}

// sseLine is one data line of a Server-Sent Events feed, with when it came.
type sseLine struct {
	data string
	at   time.Time
}

// sseData opens the Server-Sent Events feed at url and returns its data lines until the feed ends (the
// channel then closes) or ctx ends.
func sseData(ctx context.Context, t *testing.T, url string) <-chan sseLine {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("feed %s: %v %v", url, res, err)
	}
	out := make(chan sseLine, 16)
	go func() {
		defer res.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case out <- sseLine{data, time.Now()}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// TestAuctionFeedAcrossInstances: bids made through one instance reach the live feeds (SSE) that
// visitors hold on the two others within a second, every feed gets every event once and in order,
// and each bid's event says the least next bid, as the bid's own answer did.
func TestAuctionFeedAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 3)
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/auctions/feed", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	_, v, _ := do(t, "POST", in[0].base+"/v1/visitors", testAdminKey, `{"subject": "bidder"}`)
	_, w, _ := do(t, "POST", in[0].base+"/v1/visitors", testAdminKey, `{"subject": "rival"}`)
	tokens := []string{v["visitor_token"].(string), w["visitor_token"].(string)}

	type seen struct {
		seq int64
		at  time.Time
		min float64
	}
	const perInstance, bids = 10, 8
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var feeds []chan seen
	for _, target := range in[1:] {
		for range perInstance {
			lines := sseData(ctx, t, target.base+"/v1/auctions/feed/live")
			got := make(chan seen, bids+1)
			feeds = append(feeds, got)
			go func() {
				defer close(got)
				for l := range lines {
					var e struct {
						Seq  int64   `json:"seq"`
						Kind string  `json:"kind"`
						Min  float64 `json:"min_next_bid"`
					}
					if json.Unmarshal([]byte(l.data), &e) == nil && e.Kind == "bid" {
						got <- seen{e.Seq, l.at, e.Min}
					}
				}
			}()
		}
	}
	time.Sleep(300 * time.Millisecond) // every feed has its snapshot and its instance its subscription
	minNext := 100.0
	for i := range bids {
		start := time.Now()
		code, body, _ := do(t, "POST", in[0].base+"/v1/auctions/feed/bids", tokens[i%2], fmt.Sprintf(`{"amount": %d}`, int(minNext)))
		if code != 201 {
			t.Fatalf("bid %d: %d %v", i, code, body)
		}
		minNext = body["auction"].(map[string]any)["min_next_bid"].(float64)
		for f, got := range feeds {
			select {
			case e, ok := <-got:
				if !ok {
					t.Fatalf("feed %d ended", f)
				}
				if e.seq != int64(i+1) || e.min != minNext {
					t.Fatalf("feed %d: bid %d came as event %d saying %v next; want event %d saying %v", f, i, e.seq, e.min, i+1, minNext)
				}
				if d := e.at.Sub(start); d > time.Second {
					t.Fatalf("feed %d: bid %d reached it after %v", f, i, d)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("feed %d on another instance: no event for bid %d", f, i)
			}
		}
	}
}
