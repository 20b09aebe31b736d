package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestTimesOutsideWindowRefused: instants before 2000 or from 2200 on, and durations beyond a year, are
// refused with invalid_config naming the field, for rooms, drops and auctions alike. A room opening in
// 9999 was once taken and admitted everybody at once (Unix nanoseconds wrapped).
func TestTimesOutsideWindowRefused(t *testing.T) {
	e := setup(t)
	auctionCfg := func(starts, ends, extra string) string {
		return `{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": "` + starts +
			`", "ends_at": "` + ends + `"` + extra + `}`
	}
	for _, c := range []struct{ path, body, field string }{
		{"/v1/rooms/r", `{"capacity": 5, "opens_at": "9999-12-31T23:59:59Z"}`, "opens_at"},
		{"/v1/rooms/r", `{"capacity": 5, "opens_at": "1999-12-31T23:59:59Z"}`, "opens_at"},
		{"/v1/rooms/r", `{"capacity": 5, "session_ttl": "100000h"}`, "session_ttl"},
		{"/v1/drops/d", `{"stock": 5, "opens_at": "2200-01-01T00:00:00Z"}`, "opens_at"},
		{"/v1/drops/d", `{"stock": 5, "opens_at": "2026-01-01T00:00:00Z", "closes_at": "9999-01-01T00:00:00Z"}`, "closes_at"},
		{"/v1/auctions/a", auctionCfg("2026-01-01T00:00:00Z", "9999-12-31T23:59:59Z", ""), "ends_at"},
		{"/v1/auctions/a", auctionCfg("1970-01-01T00:00:00Z", "1970-01-02T00:00:00Z", ""), "starts_at"},
		{"/v1/auctions/a", auctionCfg("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", `, "soft_close": {"window": "1m", "extend": "1000000h"}`), "soft_close"},
	} {
		r := e.do(http.MethodPut, c.path, adminKey, c.body)
		e.want(r, http.StatusBadRequest, "invalid_config")
		if msg, _ := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, c.field) {
			t.Errorf("PUT %s %s: message %q does not name %s", c.path, c.body, msg, c.field)
		}
	}
	// Nothing half-made is left behind: the room was never created.
	e.want(e.do(http.MethodGet, "/v1/rooms/r", adminKey, ""), http.StatusNotFound, "room_not_found")
	// The edges of the window are taken.
	if r := e.do(http.MethodPut, "/v1/rooms/r", adminKey, `{"capacity": 5, "opens_at": "2199-12-31T23:59:59Z"}`); r.code != 200 {
		t.Fatalf("opens_at at the end of the window: %d %v", r.code, r.body)
	}
	if r := e.do(http.MethodPost, "/v1/rooms/r/join", "", ""); r.code != 200 || r.str("state") != "waiting" {
		t.Fatalf("join before a far opening: %d %v, want waiting", r.code, r.body)
	}
}
