package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestCorrectAndDeleteAuctionsAndDrops: an auction created with a past end and no bids could never be
// corrected. Replacing is refused only once there are bids; DELETE removes auctions and drops that
// have no bids or claims, and answers 409 otherwise.
func TestCorrectAndDeleteAuctionsAndDrops(t *testing.T) {
	e := setup(t)
	now := e.clock.Now()
	cfg := func(ends time.Time) string {
		return `{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": "` +
			now.Add(-time.Hour).Format(time.RFC3339) + `", "ends_at": "` + ends.Format(time.RFC3339) + `"}`
	}
	e.want(e.do(http.MethodPut, "/v1/auctions/a", adminKey, cfg(now.Add(-time.Minute))), http.StatusOK, "")
	if r := e.do(http.MethodGet, "/v1/auctions/a", "", ""); r.str("status") != "closed" {
		t.Fatalf("an auction ending in the past: %v", r.body)
	}
	if r := e.do(http.MethodPut, "/v1/auctions/a", adminKey, cfg(now.Add(time.Hour))); r.code != http.StatusOK || r.str("status") != "open" {
		t.Fatalf("correcting the end of a closed auction without bids: %d %v", r.code, r.body)
	}
	bidder := e.do(http.MethodPost, "/v1/visitors", adminKey, `{"subject": "alice"}`).str("visitor_token")
	e.want(e.do(http.MethodPost, "/v1/auctions/a/bids", bidder, `{"amount": 100}`), http.StatusCreated, "")
	e.want(e.do(http.MethodPut, "/v1/auctions/a", adminKey, cfg(now.Add(2*time.Hour))), http.StatusConflict, "auction_started")
	e.want(e.do(http.MethodDelete, "/v1/auctions/a", adminKey, ""), http.StatusConflict, "auction_started")
	e.want(e.do(http.MethodDelete, "/v1/auctions/a", "", ""), http.StatusUnauthorized, "unauthorized")

	e.want(e.do(http.MethodPut, "/v1/auctions/b", adminKey, cfg(now.Add(time.Hour))), http.StatusOK, "")
	if r := e.do(http.MethodDelete, "/v1/auctions/b", adminKey, ""); r.code != http.StatusOK || r.body["deleted"] != true {
		t.Fatalf("DELETE an auction without bids: %d %v", r.code, r.body)
	}
	e.want(e.do(http.MethodGet, "/v1/auctions/b", "", ""), http.StatusNotFound, "auction_not_found")
	e.want(e.do(http.MethodDelete, "/v1/auctions/b", adminKey, ""), http.StatusNotFound, "auction_not_found")

	drop := `{"stock": 2, "opens_at": "` + now.Add(-time.Minute).Format(time.RFC3339) + `"}`
	e.want(e.do(http.MethodPut, "/v1/drops/d", adminKey, drop), http.StatusOK, "")
	e.want(e.do(http.MethodDelete, "/v1/drops/d", adminKey, ""), http.StatusOK, "")
	e.want(e.do(http.MethodGet, "/v1/drops/d", "", ""), http.StatusNotFound, "drop_not_found")
	e.want(e.do(http.MethodPut, "/v1/drops/d", adminKey, drop), http.StatusOK, "")
	e.want(e.do(http.MethodPost, "/v1/drops/d/claims", bidder, ""), http.StatusCreated, "")
	e.want(e.do(http.MethodDelete, "/v1/drops/d", adminKey, ""), http.StatusConflict, "drop_started")
}
