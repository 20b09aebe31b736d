package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/httpapi"
)

// TestIdentity: five tokenless joins once gave five claims on a per_visitor 1 drop. A drop or auction
// with "identity": "site" takes only visitors the site minted for a subject; "room" only those
// admitted through its room; the default takes anyone, as before.
func TestIdentity(t *testing.T) {
	e := setup(t)
	opens := e.clock.Now().Add(-time.Minute).Format(time.RFC3339)
	e.putRoom("line", `{"capacity": 1}`)
	anon := e.join("line", "").str("visitor_token") // admitted at once: capacity 1
	alice := e.do(http.MethodPost, "/v1/visitors", adminKey, `{"subject": "alice"}`).str("visitor_token")

	e.want(e.do(http.MethodPut, "/v1/drops/site", adminKey, `{"stock": 5, "opens_at": "`+opens+`", "identity": "site"}`), http.StatusOK, "")
	e.want(e.do(http.MethodPost, "/v1/drops/site/claims", anon, ""), http.StatusForbidden, "identity_required")
	e.want(e.do(http.MethodPost, "/v1/drops/site/claims", alice, ""), http.StatusCreated, "")
	if r := e.do(http.MethodGet, "/v1/drops/site", "", ""); r.str("identity") != "site" || r.num("claimed") != 1 {
		t.Fatalf("the drop's view: %v", r.body)
	}

	e.want(e.do(http.MethodPut, "/v1/drops/bad", adminKey, `{"stock": 5, "opens_at": "`+opens+`", "identity": "room"}`), http.StatusBadRequest, "invalid_config")
	e.want(e.do(http.MethodPut, "/v1/drops/bad", adminKey, `{"stock": 5, "opens_at": "`+opens+`", "identity": "people"}`), http.StatusBadRequest, "invalid_config")
	e.want(e.do(http.MethodPut, "/v1/drops/room", adminKey, `{"stock": 5, "opens_at": "`+opens+`", "room": "line", "identity": "room"}`), http.StatusOK, "")
	e.want(e.do(http.MethodPost, "/v1/drops/room/claims", alice, ""), http.StatusForbidden, "not_admitted")

	e.want(e.do(http.MethodPut, "/v1/drops/any", adminKey, `{"stock": 5, "opens_at": "`+opens+`"}`), http.StatusOK, "")
	e.want(e.do(http.MethodPost, "/v1/drops/any/claims", anon, ""), http.StatusCreated, "")

	auction := `{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "buy_now_price": 900, "identity": "site",
		"starts_at": "` + opens + `", "ends_at": "` + e.clock.Now().Add(time.Hour).Format(time.RFC3339) + `"}`
	e.want(e.do(http.MethodPut, "/v1/auctions/lot", adminKey, auction), http.StatusOK, "")
	e.want(e.do(http.MethodPost, "/v1/auctions/lot/bids", anon, `{"amount": 100}`), http.StatusForbidden, "identity_required")
	e.want(e.do(http.MethodPost, "/v1/auctions/lot/buy-now", anon, ""), http.StatusForbidden, "identity_required")
	e.want(e.do(http.MethodPost, "/v1/auctions/lot/bids", alice, `{"amount": 100}`), http.StatusCreated, "")
}

// TestVisitorMe: a browser learns which visitor it is, from its cookie or a bearer token, so that an
// auction's page can tell its own bids in a new tab; without one the answer is empty and no visitor is
// made (a GET gives nothing), and a bad token is refused as anywhere.
func TestVisitorMe(t *testing.T) {
	e := setup(t)
	none := e.do("GET", "/v1/visitors/me", "", "")
	e.want(none, 200, "")
	if id, ok := none.body["visitor_id"]; !ok || id != "" || none.header.Get("Set-Cookie") != "" {
		t.Fatalf("without a visitor: %v, Set-Cookie %q", none.body, none.header.Get("Set-Cookie"))
	}
	minted := e.do("POST", "/v1/visitors", adminKey, `{"subject": "kim"}`)
	if got := e.do("GET", "/v1/visitors/me", minted.str("visitor_token"), ""); got.str("visitor_id") != minted.str("visitor_id") || got.str("visitor_id") == "" {
		t.Fatalf("by bearer token: %v, want %s", got.body, minted.str("visitor_id"))
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/visitors/me", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.VisitorCookie, Value: minted.str("visitor_token")})
	if got := e.send(req); got.str("visitor_id") != minted.str("visitor_id") {
		t.Fatalf("by cookie: %v", got.body)
	}
	e.want(e.do("GET", "/v1/visitors/me", "v2.forged.token.x", ""), 401, "invalid_visitor_token")
}

// TestAuctionMe: an auction's /me says which visitor the request carries and whether its bid was taken
// there, also one that was outbid at once and one buried under later bids; it makes no visitor, and
// refuses a forged token and an auction there is not.
func TestAuctionMe(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	none := e.do("GET", "/v1/auctions/lot/me", "", "")
	e.want(none, 200, "")
	if none.body["visitor_id"] != "" || none.body["bid"] != false || none.header.Get("Set-Cookie") != "" {
		t.Fatalf("without a visitor: %v, Set-Cookie %q", none.body, none.header.Get("Set-Cookie"))
	}
	early, rival, watcher := e.visitorToken("early"), e.visitorToken("rival"), e.visitorToken("watcher")
	e.want(e.do("POST", "/v1/auctions/lot/bids", rival, `{"max_amount": 900000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", early, `{"amount": 1200}`), 201, "") // outbid at once
	// Each answered by the rival's maximum: early's bid is far behind the last 100.
	e.bidInTurn("lot", 120, watcher)
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("late"), `{"amount": 1}`), 409, "bid_too_low")
	for tok, want := range map[string]bool{early: true, watcher: true, e.visitorToken("late"): false, e.visitorToken("nobody"): false} {
		got := e.do("GET", "/v1/auctions/lot/me", tok, "")
		if got.code != 200 || got.body["bid"] != want || got.str("visitor_id") == "" {
			t.Errorf("%v, want bid %v", got.body, want)
		}
	}
	e.want(e.do("GET", "/v1/auctions/lot/me", "v2.forged.token.x", ""), 401, "invalid_visitor_token")
	e.want(e.do("GET", "/v1/auctions/none/me", early, ""), 404, "auction_not_found")
	e.want(e.do("GET", "/v1/auctions/none/me", "", ""), 404, "auction_not_found")
}
