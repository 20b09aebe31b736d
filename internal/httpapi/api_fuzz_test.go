package httpapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/apitest"
)

// fuzzRoutes are the API's routes, {x} standing for a fuzzed path segment (an id, a code, a name).
var fuzzRoutes = []string{
	"/healthz", "/v1/keys", "/v1/keys/rotate", "/v1/verify", "/v1/visitors", "/v1/visitors/me", "/v1/rooms", "/v1/audit",
	"/v1/operators", "/v1/operators/{x}", "/v1/webhooks", "/v1/webhooks/{x}/send", "/v1/webhooks/ping", "/v1/backups",
	"/v1/rooms/{x}", "/v1/rooms/{x}/invites", "/v1/rooms/{x}/history", "/v1/rooms/{x}/join", "/v1/rooms/{x}/status",
	"/v1/rooms/{x}/events", "/v1/rooms/{x}/leave", "/v1/rooms/{x}/release", "/v1/rooms/{x}/check", "/r/{x}",
	"/v1/auctions", "/v1/auctions/{x}", "/v1/auctions/{x}/history", "/v1/auctions/{x}/config", "/v1/auctions/{x}/events.csv",
	"/v1/auctions/{x}/end", "/v1/auctions/{x}/extend", "/v1/auctions/{x}/bids", "/v1/auctions/{x}/me", "/v1/auctions/{x}/buy-now",
	"/v1/auctions/{x}/live", "/a/{x}", "/v1/drops", "/v1/drops/{x}", "/v1/drops/{x}/history", "/v1/drops/{x}/config",
	"/v1/drops/{x}/open", "/v1/drops/{x}/close", "/v1/drops/{x}/live", "/v1/drops/{x}/claims", "/v1/drops/{x}/claims.csv",
	"/v1/drops/{x}/claims/mine", "/v1/drops/{x}/codes/{x}", "/v1/drops/{x}/codes/{x}/redeem", "/v1/drops/{x}/codes/{x}/unredeem",
	"/d/{x}", "/admin", "/admin/rooms/{x}", "/{x}",
}

var fuzzMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// FuzzAPI sends one server requests of any route, method, id, query and body, as the operator, as a
// visitor or as nobody, and the state they leave builds up: no answer is a 5xx (the store here never
// fails), and every refusal the API answers in JSON names a stable error code.
func FuzzAPI(f *testing.F) {
	e := setup(f)
	now := e.clock.Now()
	for _, put := range []struct{ path, body string }{
		{"/v1/rooms/r", `{"capacity": 1}`},
		{"/v1/drops/d", fmt.Sprintf(`{"stock": 2, "opens_at": %q, "room": "r"}`, now.Add(-time.Minute).Format(time.RFC3339))},
		{"/v1/auctions/a", fmt.Sprintf(`{"title": "t", "currency": "KRW", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))},
	} {
		if r := e.do("PUT", put.path, adminKey, put.body); r.code != 200 {
			f.Fatalf("PUT %s: %d %v", put.path, r.code, r.body)
		}
	}
	visitor := e.do("POST", "/v1/visitors", adminKey, `{"subject": "fuzz"}`).str("visitor_token")
	for _, s := range []struct {
		route, method   uint8
		id, query, body string
		who             uint8
	}{
		{14, 2, "r", "", `{"capacity": 2, "rate": {"admits": 1, "per": "1s"}}`, 1},
		{17, 1, "r", "", `{"switch": true}`, 2},
		{37, 3, "d", "", `{"stock": 5}`, 1},
		{43, 1, "d", "", ``, 2},
		{25, 3, "a", "", `{"title": "x", "message": null}`, 1},
		{31, 1, "a", "", `{"amount": 110}`, 2},
		{6, 0, "", "limit=2&after=a", ``, 1},
		{7, 0, "", "kind=room&before=9&limit=1", ``, 1},
		{47, 1, "d", "", `{"order": "o1"}`, 1},
		{9, 3, "mina", "", `{"role": "viewer"}`, 1},
		{4, 1, "", "", `{"subject": "s", "ttl": "1h"}`, 1},
		{3, 1, "", "", `{"token": "x.y.z"}`, 0},
	} {
		f.Add(s.route, s.method, s.id, s.query, s.body, s.who)
	}
	callers := apitest.Callers{"", adminKey, visitor}
	f.Fuzz(func(t *testing.T, route, method uint8, id, query, body string, who uint8) {
		req, ok := apitest.Request("http://rushgate.test", fuzzRoutes, fuzzMethods, route, method, id, query, body, callers, who)
		if !ok {
			return
		}
		// A live feed answers until its request ends.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req.WithContext(ctx))
		apitest.Check(t, req, body, rec.Code, rec.Header(), rec.Body.Bytes())
	})
}
