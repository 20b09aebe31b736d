package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCrowdSurvivesKill runs a crowd of claims (with idempotency keys) and bids against the embedded
// backend, kills the server (kill -9) at a random moment of it, starts it again on the same data, and
// checks what group commit promises: every claim answered 201 is there exactly once with its code and
// answers its key again; no more claims are there than were answered or in flight; every accepted
// bid is counted, none twice, and the event sequence has no gap. Three rounds, three kill moments;
// the last with --fsync everysec, which answers before the fsync: a crash of the process alone still
// loses nothing answered, since the operating system holds what was written.
func TestCrowdSurvivesKill(t *testing.T) {
	bin := buildBinary(t)
	for round := range 3 {
		var flags []string
		if round == 2 {
			flags = []string{"--fsync", "everysec"}
		}
		t.Run(fmt.Sprint("kill", round, flags), func(t *testing.T) {
			data := t.TempDir()
			cmd, base := startEmbedded(t, bin, data, flags...)
			opens := time.Now().Add(-time.Minute).UTC()
			if code, b, _ := do(t, "PUT", base+"/v1/drops/d", restartKey, fmt.Sprintf(`{"stock": 100000, "opens_at": %q}`, opens.Format(time.RFC3339))); code != 200 {
				t.Fatalf("PUT drop: %d %v", code, b)
			}
			cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 1, "increment": 1, "starts_at": %q, "ends_at": %q}`,
				opens.Format(time.RFC3339), opens.Add(2*time.Hour).Format(time.RFC3339))
			if code, b, _ := do(t, "PUT", base+"/v1/auctions/lot", restartKey, cfg); code != 200 {
				t.Fatalf("PUT auction: %d %v", code, b)
			}
			const workers, visitors = 32, 3000
			tokens := make([]string, visitors)
			for i := range tokens {
				_, v, _ := do(t, "POST", base+"/v1/visitors", restartKey, fmt.Sprintf(`{"subject": "s%d"}`, i))
				tokens[i] = v["visitor_token"].(string)
			}

			type answered struct{ id, code string }
			var mu sync.Mutex
			claims := map[int]answered{} // visitor -> the claim answered 201
			var accepted, price atomic.Int64
			var next atomic.Int64
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for {
						i := int(next.Add(1) - 1)
						if i >= visitors {
							return
						}
						code, c := claimOn(base, tokens[i], fmt.Sprint("key-", i))
						if code == 201 {
							mu.Lock()
							claims[i] = answered{c["claim_id"].(string), c["code"].(string)}
							mu.Unlock()
						} else if code != 0 {
							t.Errorf("claim: %d %v", code, c)
						}
						if code == 0 {
							return // the server is gone
						}
						if code, _ := bidOn(base, tokens[i], price.Add(1)+1000); code == 201 {
							accepted.Add(1)
						} else if code == 0 {
							return
						}
					}
				})
			}
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			wg.Wait()
			if len(claims) == 0 || accepted.Load() == 0 {
				t.Fatalf("the crowd made %d claims and %d bids before the kill; the test needs some", len(claims), accepted.Load())
			}

			_, base = startEmbedded(t, bin, data, flags...)
			recorded := map[string]string{} // claim id -> code
			for after := 0.0; ; {
				_, page, _ := do(t, "GET", fmt.Sprintf("%s/v1/drops/d/claims?after=%d&limit=1000", base, int64(after)), restartKey, "")
				list := page["claims"].([]any)
				for _, c := range list {
					m := c.(map[string]any)
					if _, dup := recorded[m["claim_id"].(string)]; dup {
						t.Fatalf("claim %s recorded twice", m["claim_id"])
					}
					if m["seq"].(float64) != float64(len(recorded)+1) {
						t.Fatalf("claim sequence has a gap at %v", m["seq"])
					}
					recorded[m["claim_id"].(string)] = m["code"].(string)
				}
				if len(list) == 0 {
					break
				}
				after = page["next_after"].(float64)
			}
			for _, c := range claims {
				if recorded[c.id] != c.code {
					t.Fatalf("claim %s answered 201 with code %s is %q after the restart", c.id, c.code, recorded[c.id])
				}
			}
			if len(recorded) > len(claims)+workers {
				t.Fatalf("%d claims after the restart; %d were answered and at most %d in flight", len(recorded), len(claims), workers)
			}
			checked := 0
			for i, c := range claims {
				if checked == 20 {
					break
				}
				checked++
				if code, again := claimOn(base, tokens[i], fmt.Sprint("key-", i)); code != 201 || again["claim_id"] != c.id {
					t.Fatalf("the key of claim %s after the restart: %d %v", c.id, code, again)
				}
			}

			_, st, _ := do(t, "GET", base+"/v1/auctions/lot", "", "")
			bids := int64(st["bid_count"].(float64))
			if bids < accepted.Load() || bids > accepted.Load()+workers {
				t.Fatalf("%d bids after the restart; %d were accepted and at most %d in flight", bids, accepted.Load(), workers)
			}
			seq := 0.0
			for after := 0.0; ; {
				_, page, _ := do(t, "GET", fmt.Sprintf("%s/v1/auctions/lot/bids?after=%d&limit=1000", base, int64(after)), "", "")
				for _, e := range page["bids"].([]any) {
					if s := e.(map[string]any)["seq"].(float64); s != seq+1 {
						t.Fatalf("bid events go from %v to %v", seq, s)
					} else {
						seq = s
					}
				}
				if page["next_after"].(float64) == after {
					break
				}
				after = page["next_after"].(float64)
			}
			t.Logf("killed after %d claims and %d bids answered; %d claims and %d bids after the restart",
				len(claims), accepted.Load(), len(recorded), bids)
		})
	}
}

// claimOn claims a unit of drop d with an Idempotency-Key; code 0 means the server did not answer.
func claimOn(base, tok, key string) (int, map[string]any) {
	return post(base+"/v1/drops/d/claims", tok, key, "")
}

// bidOn bids max on auction lot; code 0 means the server did not answer.
func bidOn(base, tok string, max int64) (int, map[string]any) {
	return post(base+"/v1/auctions/lot/bids", tok, "", fmt.Sprintf(`{"max_amount": %d}`, max))
}

// post sends a POST with a bearer token, an Idempotency-Key when key is set, and body; code 0 means the
// server did not answer (it was killed), which a crowd meets and stops at.
func post(url, tok, key, body string) (int, map[string]any) {
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := crashClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// crashClient keeps a connection per worker of the crowd.
var crashClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// TestPlacesSurviveKill has a crowd join a paused room on the embedded backend, kills the server
// (kill -9) at a random moment, and starts it again on the same data: every visitor whose join was
// answered more than a second before the kill is still waiting, at the place it was told, and a room
// that admitted meanwhile holds no more than its capacity. Three rounds, three kill moments.
func TestPlacesSurviveKill(t *testing.T) {
	bin := buildBinary(t)
	for round := range 3 {
		t.Run(fmt.Sprint("kill", round), func(t *testing.T) {
			data := t.TempDir()
			cmd, base := startEmbedded(t, bin, data)
			if code, b, _ := do(t, "PUT", base+"/v1/rooms/line", restartKey, `{"capacity": 10, "paused": true, "idle_timeout": "1h"}`); code != 200 {
				t.Fatalf("PUT room: %d %v", code, b)
			}
			// A second room admits as the crowd joins it: after the restart it holds no more than its
			// capacity, admissions from before the kill included.
			if code, b, _ := do(t, "PUT", base+"/v1/rooms/open", restartKey, `{"capacity": 5, "session_ttl": "1h", "grace": "1h", "idle_timeout": "1h"}`); code != 200 {
				t.Fatalf("PUT room: %d %v", code, b)
			}
			type joined struct {
				token    string
				position float64
				at       time.Time
			}
			var mu sync.Mutex
			var crowd []joined
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for {
						if code, _ := post(base+"/v1/rooms/open/join", "", "", ""); code != 200 {
							return // killed
						}
						code, v := post(base+"/v1/rooms/line/join", "", "", "")
						if code != 200 {
							return // killed
						}
						mu.Lock()
						crowd = append(crowd, joined{v["visitor_token"].(string), v["position"].(float64), time.Now()})
						mu.Unlock()
					}
				})
			}
			time.Sleep(time.Duration(1500+rand.IntN(1000)) * time.Millisecond)
			killed := time.Now()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			wg.Wait()

			_, base = startEmbedded(t, bin, data)
			checked := 0
			for _, j := range crowd {
				if killed.Sub(j.at) <= time.Second {
					continue
				}
				checked++
				req, _ := http.NewRequest("GET", base+"/v1/rooms/line/status", nil)
				req.Header.Set("Authorization", "Bearer "+j.token)
				res, err := crashClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var st map[string]any
				_ = json.NewDecoder(res.Body).Decode(&st)
				res.Body.Close()
				if st["state"] != "waiting" || st["position"] != j.position {
					t.Fatalf("a visitor told place %v %v before the kill: %v after the restart", j.position, killed.Sub(j.at), st)
				}
			}
			if checked == 0 {
				t.Fatal("no join was answered more than a second before the kill")
			}
			time.Sleep(300 * time.Millisecond) // the restarted gate's first ticks
			_, open, _ := do(t, "GET", base+"/v1/rooms/open", restartKey, "")
			if stats := open["stats"].(map[string]any); stats["active"].(float64) > 5 || stats["active"].(float64) < 1 {
				t.Fatalf("room of capacity 5 after the restart: %v", stats)
			}
			t.Logf("%d joins answered; the %d answered more than a second before the kill kept their places", len(crowd), checked)
		})
	}
}
