package main

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/apitest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// storeRoutes are the routes whose answers a store's scripts decide, {x} standing for a fuzzed
// segment: an id, a code.
var storeRoutes = []string{
	"/v1/rooms/{x}", "/v1/rooms/{x}/join", "/v1/rooms/{x}/status", "/v1/rooms/{x}/leave", "/v1/rooms/{x}/release",
	"/v1/rooms/{x}/invites", "/v1/rooms/{x}/check", "/v1/rooms", "/v1/drops/{x}", "/v1/drops/{x}/claims",
	"/v1/drops/{x}/claims/mine", "/v1/drops/{x}/open", "/v1/drops/{x}/close", "/v1/drops/{x}/codes/{x}",
	"/v1/drops/{x}/codes/{x}/redeem", "/v1/drops", "/v1/auctions/{x}", "/v1/auctions/{x}/bids", "/v1/auctions/{x}/me",
	"/v1/auctions/{x}/buy-now", "/v1/auctions/{x}/end", "/v1/auctions/{x}/extend", "/v1/auctions", "/v1/visitors",
	"/v1/audit",
}

// FuzzRedisAPI sends an instance on a real redis-server requests of the routes its scripts answer,
// with any method, id, query and body, as the operator, a visitor or nobody, the state they leave
// building up: no answer is a 5xx (Redis stays up: a script that fails on an input would answer 503),
// and every JSON refusal names an error code. The embedded backend's twin is httpapi's FuzzAPI.
func FuzzRedisAPI(f *testing.F) {
	base, _ := serveInProcess(f, "--redis", "redis://"+redistest.Shared(f), "--redis-prefix", redistest.Prefix("fuzz"))
	now := time.Now().UTC()
	for _, put := range []struct{ path, body string }{
		{"/v1/rooms/r", `{"capacity": 1}`},
		{"/v1/drops/d", fmt.Sprintf(`{"stock": 3, "opens_at": %q, "room": "r"}`, now.Add(-time.Minute).Format(time.RFC3339))},
		{"/v1/drops/c", fmt.Sprintf(`{"stock": 3, "opens_at": %q, "codes": ["A", "B", "C"]}`, now.Add(-time.Minute).Format(time.RFC3339))},
		{"/v1/auctions/a", fmt.Sprintf(`{"title": "t", "currency": "KRW", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))},
	} {
		if code, b, _ := do(f, "PUT", base+put.path, testAdminKey, put.body); code != 200 {
			f.Fatalf("PUT %s: %d %v", put.path, code, b)
		}
	}
	_, v, _ := do(f, "POST", base+"/v1/visitors", testAdminKey, `{"subject": "fuzz"}`)
	visitor, _ := v["visitor_token"].(string)
	for _, s := range []struct {
		route, method uint8
		id, body      string
		who           uint8
	}{
		{1, 1, "r", `{"switch": true}`, 2}, {9, 1, "c", ``, 2}, {9, 1, "d", ``, 2}, {17, 1, "a", `{"amount": 110}`, 2},
		{19, 1, "a", ``, 2}, {8, 3, "d", `{"stock": 9}`, 1}, {0, 3, "r", `{"rate": {"admits": 2, "per": "1s"}}`, 1},
		{5, 1, "r", `{"codes": ["K1", "%d", "\u0000"]}`, 1}, {14, 1, "c", `{"order": "o"}`, 1}, {16, 4, "a", ``, 1},
		{21, 1, "a", `{"by": "1m"}`, 1}, {23, 1, "", `{"subject": "%s%s"}`, 1},
	} {
		f.Add(s.route, s.method, s.id, "", s.body, s.who)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	callers := apitest.Callers{"", testAdminKey, visitor}
	f.Fuzz(func(t *testing.T, route, method uint8, id, query, body string, who uint8) {
		req, ok := apitest.Request(base, storeRoutes, methods, route, method, id, query, body, callers, who)
		if !ok {
			return
		}
		res, err := client.Do(req)
		if err != nil {
			return // a path the client will not send as it is (it checks less than NewRequest)
		}
		defer res.Body.Close()
		var answer []byte
		if res.StatusCode >= 400 { // a success may be a live feed, which never ends
			answer, _ = io.ReadAll(io.LimitReader(res.Body, 1<<16))
		}
		apitest.Check(t, req, body, res.StatusCode, res.Header, answer)
	})
}
