package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// restartKey is the admin key of the restarted instances.
const restartKey = "restart-admin-key-0123"

// TestAuctionClosesAfterDowntime kills the only instance (kill -9) while an auction runs, keeps it
// down across the auction's end, and starts it again: within a second the auction is closed with the
// right winner, from the SQL record the embedded backend resumes from.
func TestAuctionClosesAfterDowntime(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	start := func() (*exec.Cmd, string) { return startEmbedded(t, bin, data) }
	cmd, base := start()
	now := time.Now().UTC()
	end := now.Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	if code, body, _ := do(t, "PUT", base+"/v1/auctions/lot", restartKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, body)
	}
	_, alice, _ := do(t, "POST", base+"/v1/visitors", restartKey, `{"subject": "alice"}`)
	_, bob, _ := do(t, "POST", base+"/v1/visitors", restartKey, `{"subject": "bob"}`)
	if code, _, _ := do(t, "POST", base+"/v1/auctions/lot/bids", alice["visitor_token"].(string), `{"max_amount": 900}`); code != 201 {
		t.Fatal(code)
	}
	if code, _, _ := do(t, "POST", base+"/v1/auctions/lot/bids", bob["visitor_token"].(string), `{"max_amount": 500}`); code != 201 {
		t.Fatal(code)
	}
	_ = cmd.Process.Kill() // kill -9: nothing is flushed on the way out
	_ = cmd.Wait()
	time.Sleep(time.Until(end) + 500*time.Millisecond) // down across the end

	_, base = start()
	started := time.Now()
	code, st, _ := do(t, "GET", base+"/v1/auctions/lot", "", "")
	if code != 200 || st["status"] != "closed" || st["winner"] != alice["visitor_id"] || st["final_price"] != 510.0 {
		t.Fatalf("after restart: %d %v", code, st)
	}
	if d := time.Since(started); d > time.Second {
		t.Fatalf("closed %v after the restart", d)
	}
	// The live feed of the restarted instance still numbers events without a gap.
	_, bids, _ := do(t, "GET", base+"/v1/auctions/lot/bids", "", "")
	if list := bids["bids"].([]any); len(list) != 2 {
		t.Fatalf("bids after restart: %v", bids)
	}
}

// TestDropSurvivesRestart: on the embedded backend a drop resumes from the SQL record after kill -9,
// so what was claimed before is neither forgotten nor handed out again.
func TestDropSurvivesRestart(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	start := func() (*exec.Cmd, string) { return startEmbedded(t, bin, data) }
	cmd, base := start()
	if code, b, _ := do(t, "PUT", base+"/v1/drops/d", restartKey, fmt.Sprintf(`{"stock": 3, "opens_at": %q}`, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	tok := func(s string) string {
		_, v, _ := do(t, "POST", base+"/v1/visitors", restartKey, `{"subject": "`+s+`"}`)
		return v["visitor_token"].(string)
	}
	a, b, c, d := tok("a"), tok("b"), tok("c"), tok("d")
	if code, _, _ := do(t, "POST", base+"/v1/drops/d/claims", a, ""); code != 201 {
		t.Fatal(code)
	}
	code, first := claimWithKey(t, base, b, "order-1")
	if code != 201 {
		t.Fatalf("b's claim with a key: %d %v", code, first)
	}
	if code, v, _ := do(t, "PATCH", base+"/v1/drops/d", restartKey, `{"stock": 4}`); code != 200 { // restocked
		t.Fatalf("restock: %d %v", code, v)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_, base = start()
	// The idempotency key was recorded with the claim: the same request answers with the same claim.
	if code, again := claimWithKey(t, base, b, "order-1"); code != 201 || again["claim_id"] != first["claim_id"] || again["code"] != first["code"] {
		t.Fatalf("the same Idempotency-Key after kill -9: %d %v, want the claim %v", code, again, first)
	}
	if _, v, _ := do(t, "GET", base+"/v1/drops/d", "", ""); v["claimed"] != 2.0 || v["remaining"] != 2.0 || v["stock"] != 4.0 {
		t.Fatalf("after restart: %v", v)
	}
	if code, _, _ := do(t, "PUT", base+"/v1/drops/d", restartKey, fmt.Sprintf(`{"stock": 4, "identity": "site", "opens_at": %q}`, time.Now().UTC().Format(time.RFC3339))); code != 409 {
		t.Fatalf("changing what the claims were made under, after a restart: %d", code)
	}
	if code, _, _ := do(t, "POST", base+"/v1/drops/d/claims", a, ""); code != 409 {
		t.Fatalf("a's second claim after restart: %d", code)
	}
	for _, v := range []string{c, d} {
		if code, _, _ := do(t, "POST", base+"/v1/drops/d/claims", v, ""); code != 201 {
			t.Fatalf("the last units: %d", code)
		}
	}
	if code, _, _ := do(t, "POST", base+"/v1/drops/d/claims", tok("e"), ""); code != 410 {
		t.Fatalf("past the stock after restart: %d", code)
	}
}

// TestRoomWaitsForItsDropAfterRestart: on the embedded backend a room that follows a drop not open yet
// still holds its line after kill -9 (the drop's opening is told to the room again at the start, not
// journaled), in the order it came; opened by its operator, the drop lets the line in.
func TestRoomWaitsForItsDropAfterRestart(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, base := startEmbedded(t, bin, data)
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, b, _ := do(t, "PUT", base+"/v1/drops/d", restartKey, fmt.Sprintf(`{"stock": 5, "opens_at": %q, "room": "line"}`, opens)); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, b)
	}
	if code, b, _ := do(t, "PUT", base+"/v1/rooms/line", restartKey, `{"capacity": 2, "drop": "d"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, b)
	}
	tokens := joinAll(t, base, "line", 3)
	status := func(base, tok string) map[string]any { return statusIn(t, base, "line", tok) }
	time.Sleep(1200 * time.Millisecond) // the journal is written at least once a second, and the room stepped
	for i, tok := range tokens {
		if st := status(base, tok); st["state"] != "waiting" || st["position"] != float64(i+1) || st["drop_opens_at"] != opens {
			t.Fatalf("visitor %d before the drop's opening: %v", i, st)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_, base = startEmbedded(t, bin, data)
	time.Sleep(300 * time.Millisecond) // a step or two of the restarted room
	for i, tok := range tokens {
		if st := status(base, tok); st["state"] != "waiting" || st["position"] != float64(i+1) || st["drop_opens_at"] != opens {
			t.Fatalf("visitor %d after kill -9, before the drop's opening: %v", i, st)
		}
	}
	if code, b, _ := do(t, "POST", base+"/v1/drops/d/open", restartKey, ""); code != 200 {
		t.Fatalf("open: %d %v", code, b)
	}
	waitAdmitted(t, base, "line", tokens[0])
	waitAdmitted(t, base, "line", tokens[1])
	if st := status(base, tokens[2]); st["state"] != "waiting" || st["position"] != 1.0 || st["drop_opens_at"] != nil {
		t.Fatalf("the third, the drop open: %v", st)
	}
}

// joinAll makes n new visitors join room on base, one after another, and returns their tokens.
func joinAll(t *testing.T, base, room string, n int) []string {
	t.Helper()
	var tokens []string
	for range n {
		_, v, _ := do(t, "POST", base+"/v1/rooms/"+room+"/join", "", "")
		tok, _ := v["visitor_token"].(string)
		if tok == "" {
			t.Fatalf("join %s: %v", room, v)
		}
		tokens = append(tokens, tok)
	}
	return tokens
}

// statusIn is the status of the visitor of tok in room on base.
func statusIn(t *testing.T, base, room, tok string) map[string]any {
	t.Helper()
	_, v, _ := do(t, "GET", base+"/v1/rooms/"+room+"/status", tok, "")
	return v
}

// claimWithKey claims a unit of drop d with an Idempotency-Key.
func claimWithKey(t *testing.T, base, tok, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/drops/d/claims", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// startEmbedded runs rushgate serve on the embedded backend over data, with extra flags, killed when
// the test ends.
func startEmbedded(t *testing.T, bin, data string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--data", data, "--admin-key", restartKey, "--log-level", "warn"}, extra...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitHealthy(t, "http://"+addr)
	return cmd, "http://" + addr
}

// TestRoomsSurviveRestart: on the embedded backend rooms are recorded as they change, and a graceful
// restart (SIGTERM) keeps every place in line and every admission; after a crash (kill -9) more than
// a second after the last change, the rooms, every standing in line and the releases are still there,
// from the journal.
func TestRoomsSurviveRestart(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, base := startEmbedded(t, bin, data)
	for _, r := range []string{"sale", "gone"} {
		if code, b, _ := do(t, "PUT", base+"/v1/rooms/"+r, restartKey, `{"capacity": 1, "session_ttl": "1h"}`); code != 200 {
			t.Fatalf("PUT %s: %d %v", r, code, b)
		}
	}
	if code, _, _ := do(t, "DELETE", base+"/v1/rooms/gone", restartKey, ""); code != 200 {
		t.Fatalf("DELETE: %d", code)
	}
	tokens := joinAll(t, base, "sale", 3)
	status := func(base, tok string) map[string]any { return statusIn(t, base, "sale", tok) }
	adm := waitAdmitted(t, base, "sale", tokens[0])

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	cmd, base = startEmbedded(t, bin, data)
	if st := status(base, tokens[0]); st["admission_token"] != adm {
		t.Fatalf("admitted visitor after a graceful restart: %v", st)
	}
	for i, want := range []float64{1, 2} {
		if st := status(base, tokens[i+1]); st["state"] != "waiting" || st["position"] != want {
			t.Fatalf("visitor %d after a graceful restart: %v, want position %v", i+1, st, want)
		}
	}
	if code, _, _ := do(t, "GET", base+"/v1/rooms/gone", restartKey, ""); code != 404 {
		t.Fatalf("a deleted room came back: %d", code)
	}
	if code, b, _ := do(t, "POST", base+"/v1/rooms/sale/release", "", `{"admission_token": "`+adm+`"}`); code != 200 {
		t.Fatalf("release with a token issued before the restart: %d %v", code, b)
	}

	waitAdmitted(t, base, "sale", tokens[1]) // the released place goes to the next in line
	before := status(base, tokens[2])
	time.Sleep(1200 * time.Millisecond) // the journal is written at least once a second
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_, base = startEmbedded(t, bin, data)
	if code, v, _ := do(t, "GET", base+"/v1/rooms/sale", restartKey, ""); code != 200 || v["capacity"] != 1.0 {
		t.Fatalf("room after a crash: %d %v", code, v)
	}
	if st := status(base, tokens[1]); st["state"] != "admitted" {
		t.Fatalf("the admitted visitor after a crash: %v", st)
	}
	if st := status(base, tokens[2]); st["state"] != "waiting" || st["position"] != before["position"] {
		t.Fatalf("the waiting visitor after a crash: %v, before it: %v", st, before)
	}
	// The admission released before the crash stays refused by the check in front of the site, which
	// verifies its token offline: the token itself runs for its hour.
	if code := checkAdmission(t, base, "sale", adm); code != http.StatusUnauthorized {
		t.Fatalf("the check of an admission released before the crash: %d, want 401", code)
	}
}
