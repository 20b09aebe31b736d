package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCrossOriginCallsChangeNothing checks that a page of another origin cannot act as a visitor with
// the rg_visitor cookie its browser holds: a form it posts (text/plain, no Authorization) to leave,
// claim or bid is refused with 403 cross_origin and changes nothing, whether the browser says so with
// Sec-Fetch-Site or only with Origin. The same calls from the server's own pages, from other servers
// (no Origin), or with a bearer token still work, and reads stay open to every origin.
func TestCrossOriginCallsChangeNothing(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1}`)
	e.join("sale", "")
	e.tick("sale")                                 // the first visitor holds the one slot
	tok := e.join("sale", "").str("visitor_token") // the second waits
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/auctions/lot1", adminKey, e.auctionCfg("")), 200, "")

	// post sends what a browser sends for a form: the cookie, a text/plain body, and its headers.
	post := func(path string, headers ...string) resp {
		t.Helper()
		body := "{}"
		if strings.HasSuffix(path, "/bids") {
			body = `{"amount": 1000}`
		}
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		req.AddCookie(&http.Cookie{Name: "rg_visitor", Value: tok})
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return e.send(req)
	}
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for _, from := range [][]string{
		{"Sec-Fetch-Site", "same-site", "Origin", "http://shop." + host},
		{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		{"Origin", "https://evil.example"}, // a browser from before Sec-Fetch-Site
		{"Origin", "null"},                 // a sandboxed frame
	} {
		for _, path := range []string{"/v1/rooms/sale/leave", "/v1/drops/coupon/claims", "/v1/auctions/lot1/bids",
			"/v1/rooms/sale/join", "/v1/nowhere"} {
			e.want(post(path, from...), http.StatusForbidden, "cross_origin")
		}
	}
	if r := e.do("GET", "/v1/rooms/sale/status", tok, ""); r.str("state") != "waiting" || r.num("position") != 1 {
		t.Fatalf("after the refused calls the visitor is %v", r.body)
	}
	if r := e.do("GET", "/v1/drops/coupon", "", ""); r.num("claimed") != 0 {
		t.Fatalf("after the refused claims the drop is %v", r.body)
	}
	if r := e.do("GET", "/v1/auctions/lot1", "", ""); r.num("bid_count") != 0 {
		t.Fatalf("after the refused bids the auction is %v", r.body)
	}

	// Reads are open to every origin; a bearer token or no browser header at all is not a page's form.
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/sale/status", nil)
	req.AddCookie(&http.Cookie{Name: "rg_visitor", Value: tok})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	e.want(e.send(req), 200, "")
	req, _ = http.NewRequest("POST", e.srv.URL+"/v1/auctions/lot1/bids", strings.NewReader(`{"amount": 1000}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	e.want(e.send(req), 201, "")
	e.want(post("/v1/drops/coupon/claims"), 201, "")
	e.want(post("/v1/rooms/sale/leave", "Origin", "http://"+host), 200, "")
	e.want(post("/v1/rooms/sale/join", "Sec-Fetch-Site", "same-origin"), 200, "")
}
