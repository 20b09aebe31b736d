package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

func do(t testing.TB, method, url, tok, body string) (int, map[string]any, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	start := time.Now()
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m, time.Since(start)
}

// TestRedisOutageAndRestarts checks the failure story of the Redis backend: while Redis is down,
// requests fail fast with 503 store_unavailable and /healthz and rushgate_store_up say so; when it
// returns (with AOF on), service resumes by itself and the visitor's place is intact; and a visitor
// keeps its place across a rushgate restart, since tokens and keys are shared through Redis.
func TestRedisOutageAndRestarts(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	bin := buildBinary(t)
	in := startInstances(t, bin, srv.Addr, 1)[0]

	if code, _, _ := do(t, "PUT", in.base+"/v1/rooms/r", testAdminKey, `{"capacity": 1, "paused": true}`); code != 200 {
		t.Fatalf("PUT room: %d", code)
	}
	tokens := joinAll(t, in.base, "r", 3)
	if n := metric(t, in.base, "rushgate_redis_visit_batch_size_sum"); n < 3 {
		t.Fatalf("the batch size metric counts %v visits after 3 joins", n)
	}

	srv.Kill()
	code, body, took := do(t, "POST", in.base+"/v1/rooms/r/join", tokens[2], "")
	if code != 503 || errorCode(body) != "store_unavailable" || took > 2*time.Second {
		t.Fatalf("join with Redis down: %d %v after %v; want a fast 503 store_unavailable", code, body, took)
	}
	if code, _, _ := do(t, "GET", in.base+"/healthz", "", ""); code != 503 {
		t.Fatalf("healthz with Redis down: %d", code)
	}
	if up := metric(t, in.base, "rushgate_store_up"); up != 0 {
		t.Errorf("rushgate_store_up is %v with Redis down, want 0", up)
	}

	srv.Restart(t) // same port and data directory: the AOF brings the line back
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, st, _ := do(t, "GET", in.base+"/v1/rooms/r/status", tokens[2], "")
		if code == 200 {
			if st["position"] != 3.0 {
				t.Fatalf("after the Redis restart the visitor is at %v, want 3", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service did not recover after Redis returned: %d %v", code, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _, _ := do(t, "GET", in.base+"/healthz", "", ""); code != 200 {
		t.Fatalf("healthz after recovery: %d", code)
	}
	if up := metric(t, in.base, "rushgate_store_up"); up != 1 {
		t.Errorf("rushgate_store_up is %v after Redis returned, want 1", up)
	}

	// A rushgate restart: a new process honours the old visitor token and finds the same place.
	_ = in.cmd.Process.Kill()
	_ = in.cmd.Wait()
	again := startInstances(t, bin, srv.Addr, 1)[0]
	code, st, _ := do(t, "GET", again.base+"/v1/rooms/r/status", tokens[1], "")
	if code != 200 || st["position"] != 2.0 {
		t.Fatalf("after a rushgate restart: %d %v, want position 2", code, st)
	}
}

func jsonBody(res *http.Response, v any) error {
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}

// TestRedisStall checks that a Redis that accepts connections but answers nothing (CLIENT PAUSE) turns
// every request into a 503 store_unavailable within about the store's 500ms timeout, lone requests and a
// burst alike, and that service resumes by itself when Redis answers again.
func TestRedisStall(t *testing.T) {
	srv := redistest.Start(t) // its own: the test pauses it
	in := startInstances(t, buildBinary(t), srv.Addr, 1)[0]
	if code, _, _ := do(t, "PUT", in.base+"/v1/rooms/r", testAdminKey, `{"capacity": 1, "paused": true}`); code != 200 {
		t.Fatalf("PUT room: %d", code)
	}
	rdb := redistest.Client(t, srv.Addr)
	if err := rdb.Do(t.Context(), rdb.B().ClientPause().Timeout(6000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	fast := func() {
		code, body, took := do(t, "POST", in.base+"/v1/rooms/r/join", "", "")
		if code != 503 || errorCode(body) != "store_unavailable" || took > 900*time.Millisecond {
			t.Errorf("join while Redis stalls: %d %v after %v; want 503 store_unavailable within the 500ms timeout", code, body, took)
		}
	}
	for range 3 { // lone requests, one after another
		fast()
	}
	var wg sync.WaitGroup
	for range 20 { // and a burst
		wg.Go(fast)
	}
	wg.Wait()
	if time.Since(paused) > 5*time.Second {
		t.Fatal("the pause ended before the checks did; the test proves nothing")
	}
	deadline := paused.Add(15 * time.Second)
	for {
		code, _, _ := do(t, "POST", in.base+"/v1/rooms/r/join", "", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service did not recover after Redis answered again: %d", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errorCode returns the code of a JSON error body, or "" for any other body.
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// unconfirmed reports whether an answer is the 503 of a claim or bid made but not yet confirmed by the
// replicas --redis-replicas asks for.
func unconfirmed(code int, body map[string]any) bool {
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return code == 503 && e["code"] == "store_unavailable" && strings.Contains(msg, "not yet confirmed")
}

// TestRedisThatMayEvict: an instance on a Redis with a maxmemory and an evicting policy (the default
// of many managed services) serves, but /healthz says "degraded", naming the node to the admin, and
// rushgate_redis_evicting counts it: once full, such a Redis deletes places and claims without a word.
// The same Redis keeps no append-only file: /healthz names it to the admin too, and
// rushgate_redis_unlogged counts it.
func TestRedisThatMayEvict(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru")
	base, _ := serveInProcess(t, "--redis", "redis://"+srv.Addr)
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, h, _ := do(t, "GET", base+"/healthz", testAdminKey, "")
		unlogged, _ := h["unlogged"].([]any)
		if code == 200 && h["status"] == "degraded" && h["store"] == "may evict keys" &&
			h["reason"] == "maxmemory-policy: "+srv.Addr+" (allkeys-lru)" && len(unlogged) == 1 && unlogged[0] == srv.Addr {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz on an evicting Redis: %d %v", code, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{"rushgate_redis_evicting", "rushgate_redis_unlogged"} {
		if n := metric(t, base, name); n != 1 {
			t.Fatalf("%s is %v, want 1", name, n)
		}
	}
	if code, _, _ := do(t, "PUT", base+"/v1/rooms/r", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatalf("PUT room on an evicting Redis: %d; it serves all the same", code)
	}
}

// TestBuildInfo: rushgate_build_info names the instance's version, backend and record, so that the
// instances of a rolling deploy can be counted by version.
func TestBuildInfo(t *testing.T) {
	base, _ := serveInProcess(t)
	if n := metric(t, base, `rushgate_build_info{backend="memory",record="sqlite",version="`+buildVersion()+`"}`); n != 1 {
		t.Fatalf("rushgate_build_info is %v, want 1", n)
	}
}

// metric reads one sample's value from an instance's /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	v, ok, err := metricValue(base, name)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("%s is not in /metrics", name)
	}
	return v
}

// metricValue reads one sample's value from an instance's /metrics, and whether it is there.
func metricValue(base, name string) (float64, bool, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil, err
		}
	}
	return 0, false, nil
}
