package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func (e *env) auctionCfg(extra string) string {
	now := e.clock.Now()
	return fmt.Sprintf(`{"title": "Guitar", "currency": "EUR", "start_price": 1000, "increment": [{"from": 0, "step": 100}, {"from": 5000, "step": 250}],
		"starts_at": %q, "ends_at": %q%s}`, now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), extra)
}

func (e *env) visitorToken(subject string) string {
	e.t.Helper()
	r := e.do("POST", "/v1/visitors", adminKey, `{"subject": "`+subject+`"}`)
	e.want(r, 201, "")
	return r.str("visitor_token")
}

// bidInTurn has the visitors of toks bid on auction id in turn, n bids, each at the next minimum the
// one before was told: a hot auction's crowd.
func (e *env) bidInTurn(id string, n int, toks ...string) {
	e.t.Helper()
	next := e.do("GET", "/v1/auctions/"+id, "", "").num("min_next_bid")
	for i := range n {
		r := e.do("POST", "/v1/auctions/"+id+"/bids", toks[i%len(toks)], fmt.Sprintf(`{"amount": %d}`, next))
		e.want(r, 201, "")
		next = int64(r.body["auction"].(map[string]any)["min_next_bid"].(float64))
	}
}

func TestAuctionAPI(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot1", "", e.auctionCfg("")), 401, "unauthorized")
	e.want(e.do("PUT", "/v1/auctions/lot1", adminKey, `{"title": "x"}`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/auctions/lot1", adminKey, e.auctionCfg(`, "reserve_price": 4000, "buy_now_price": 9000`)), 200, "")
	e.want(e.do("GET", "/v1/auctions/nope", "", ""), 404, "auction_not_found")
	alice, bob := e.visitorToken("alice"), e.visitorToken("bob")

	e.want(e.do("POST", "/v1/auctions/lot1/bids", alice, `{}`), 400, "invalid_amount")
	e.want(e.do("POST", "/v1/auctions/lot1/bids", alice, `{"amount": 1, "max_amount": 2}`), 400, "invalid_amount")
	r := e.do("POST", "/v1/auctions/lot1/bids", alice, `{"amount": 500}`)
	e.want(r, 409, "bid_too_low")
	if r.body["error"].(map[string]any)["min_next_bid"] != 1000.0 {
		t.Fatalf("bid_too_low without the minimum: %v", r.body)
	}
	r = e.do("POST", "/v1/auctions/lot1/bids", alice, `{"max_amount": 3000}`)
	e.want(r, 201, "")
	if r.body["leading"] != true {
		t.Fatalf("first bid: %v", r.body)
	}
	r = e.do("POST", "/v1/auctions/lot1/bids", bob, `{"max_amount": 2000}`)
	e.want(r, 201, "")
	a := r.body["auction"].(map[string]any)
	if r.body["leading"] != false || a["price"] != 2100.0 || a["reserve_met"] != false || a["buy_now_price"] != 9000.0 {
		t.Fatalf("outbid by the proxy: %v", r.body)
	}
	if _, leaked := a["leader_max"]; leaked {
		t.Fatal("the view leaks the leader's maximum")
	}
	e.want(e.do("POST", "/v1/auctions/lot1/bids", bob, `{"max_amount": 6000}`), 201, "") // meets the reserve
	e.want(e.do("POST", "/v1/auctions/lot1/buy-now", alice, ""), 409, "buy_now_unavailable")
	e.want(e.do("PUT", "/v1/auctions/lot1", adminKey, e.auctionCfg("")), 409, "auction_started")

	bids := e.do("GET", "/v1/auctions/lot1/bids?limit=2", "", "")
	if list := bids.body["bids"].([]any); len(list) != 2 || bids.num("next_after") != 2 {
		t.Fatalf("first page: %v", bids.body)
	}
	rest := e.do("GET", "/v1/auctions/lot1/bids?after=2", "", "")
	if list := rest.body["bids"].([]any); len(list) != 1 || list[0].(map[string]any)["bidder"] == "" {
		t.Fatalf("second page: %v", rest.body)
	}
	e.want(e.do("GET", "/v1/auctions/lot1/bids?after=-1", "", ""), 400, "invalid_request")

	e.clock.Advance(time.Hour)
	e.want(e.do("POST", "/v1/auctions/lot1/bids", alice, `{"max_amount": 99000}`), 409, "auction_closed")
	st := e.do("GET", "/v1/auctions/lot1", "", "")
	if st.str("status") != "closed" || st.str("winner") == "" || st.num("final_price") != 4000 {
		t.Fatalf("closed view: %v", st.body)
	}
}

func TestAuctionBuyNowAndSchedule(t *testing.T) {
	e := setup(t)
	now := e.clock.Now()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10, "buy_now_price": 500,
		"starts_at": %q, "ends_at": %q}`, now.Add(time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, cfg), 200, "")
	x := e.visitorToken("x")
	if st := e.do("GET", "/v1/auctions/lot", "", ""); st.str("status") != "scheduled" || st.num("buy_now_price") != 500 {
		t.Fatalf("status %v; want scheduled, with the buy-now price it will have", st.body)
	}
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"amount": 200}`), 409, "auction_not_started")
	e.clock.Advance(time.Minute)
	r := e.do("POST", "/v1/auctions/lot/buy-now", x, "")
	if r.code != 200 || r.str("status") != "sold" || r.num("final_price") != 500 {
		t.Fatalf("buy now: %d %v", r.code, r.body)
	}
	e.want(e.do("POST", "/v1/auctions/lot/buy-now", e.visitorToken("y"), ""), 409, "auction_closed")
}

func TestAuctionBehindRoom(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1}`)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg(`, "room": "sale"`)), 200, "")
	x := e.visitorToken("x")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 2000}`), 403, "not_admitted")
	e.join("sale", x)
	e.tick("sale")
	adm := e.do("GET", "/v1/rooms/sale/status", x, "").str("admission_token")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("y"), `{"max_amount": 2000, "admission_token": "`+adm+`"}`), 403, "not_admitted")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 2000, "admission_token": "`+adm+`"}`), 201, "")
	e.want(e.do("POST", "/v1/rooms/sale/release", x, ""), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 3000, "admission_token": "`+adm+`"}`), 403, "not_admitted")
}

// liveEvents opens the live feed by SSE and returns its parsed events (snapshot first) as they arrive,
// with their event names as "_event" and ids as "_id"; the channel closes when the feed ends. header
// is pairs of names and values to send with the request.
func (e *env) liveEvents(path string, header ...string) (<-chan map[string]any, context.CancelFunc) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil || res.StatusCode != 200 {
		e.t.Fatalf("live: %v %v", res, err)
	}
	ch := make(chan map[string]any, 64)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		kind, id := "", ""
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			}
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				_ = json.Unmarshal([]byte(d), &m)
				m["_event"], m["_id"] = kind, id
				ch <- m
				id = ""
			}
		}
	}()
	e.t.Cleanup(cancel)
	return ch, cancel
}

func next(t *testing.T, ch <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("feed ended")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}

func TestAuctionLiveFeedResume(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	x, y := e.visitorToken("x"), e.visitorToken("y")
	feed, stop := e.liveEvents("/v1/auctions/lot/live")
	if snap := next(t, feed); snap["_event"] != "snapshot" || snap["seq"] != 0.0 {
		t.Fatalf("snapshot %v", snap)
	}
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 3000}`), 201, "")
	if ev := next(t, feed); ev["seq"] != 1.0 || ev["kind"] != "bid" {
		t.Fatalf("first event %v", ev)
	}
	stop() // the client drops; bids go on
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 2000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 4000}`), 201, "")
	again, _ := e.liveEvents("/v1/auctions/lot/live?after=1")
	if snap := next(t, again); snap["_event"] != "snapshot" || snap["seq"] != 3.0 {
		t.Fatalf("snapshot on reconnect %v", snap)
	}
	for _, want := range []float64{2, 3} { // exactly the missed events: no gap, no duplicate
		if ev := next(t, again); ev["seq"] != want {
			t.Fatalf("resumed event %v, want seq %v", ev, want)
		}
	}
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 9000}`), 201, "")
	if ev := next(t, again); ev["seq"] != 4.0 {
		t.Fatalf("live after resume %v", ev)
	}
}

// TestAuctionLiveResumesFromLastEventID: an EventSource made with ?after=0 that reconnects sends the
// id of the last event it got as Last-Event-ID and keeps its URL; the feed resumes after the header's
// sequence. It went by the URL's, sending again every event the client already had.
func TestAuctionLiveResumesFromLastEventID(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	x, y := e.visitorToken("x"), e.visitorToken("y")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 3000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 2000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 4000}`), 201, "")
	feed, _ := e.liveEvents("/v1/auctions/lot/live?after=0", "Last-Event-ID", "2")
	if snap := next(t, feed); snap["_event"] != "snapshot" || snap["seq"] != 3.0 {
		t.Fatalf("snapshot %v", snap)
	}
	if ev := next(t, feed); ev["seq"] != 3.0 {
		t.Fatalf("resumed with %v, want seq 3: the events up to Last-Event-ID were sent again", ev)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/auctions/lot/live", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "x")
	e.want(e.send(req), 400, "invalid_request")
}

func TestAuctionLiveWebSocket(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	x, y := e.visitorToken("x"), e.visitorToken("y")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 3000}`), 201, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/v1/auctions/lot/live?after=0"
	c, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() map[string]any {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return m
	}
	if m := read(); m["type"] != "snapshot" || m["seq"] != 1.0 || m["price"] != 1000.0 {
		t.Fatalf("snapshot %v", m)
	}
	if m := read(); m["seq"] != 1.0 || m["kind"] != "bid" { // after=0: the one event before connecting
		t.Fatalf("replayed event %v", m)
	}
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 2000}`), 201, "")
	if m := read(); m["seq"] != 2.0 || m["proxy"] != true || m["price"] != 2100.0 {
		t.Fatalf("live event %v", m)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")

	// Disconnected, the client misses two events; reconnecting with after=2 it gets exactly those.
	e.want(e.do("POST", "/v1/auctions/lot/bids", y, `{"max_amount": 5000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 4000}`), 201, "")
	c, _, err = websocket.Dial(ctx, strings.Replace(ws, "after=0", "after=2", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if m := read(); m["type"] != "snapshot" || m["seq"] != 4.0 {
		t.Fatalf("snapshot on reconnect %v", m)
	}
	for _, want := range []float64{3, 4} {
		if m := read(); m["seq"] != want {
			t.Fatalf("resumed %v, want seq %v", m, want)
		}
	}
	e.want(e.do("POST", "/v1/auctions/lot/bids", x, `{"max_amount": 9000}`), 201, "")
	if m := read(); m["seq"] != 5.0 { // no duplicate of 3 or 4, nothing skipped
		t.Fatalf("after resuming %v", m)
	}
}

// TestAuctionLiveEndsWhenOver: once an auction is closed or sold, its feeds end after the last event,
// by SSE and by WebSocket (a normal closure), and a feed opened afterwards ends after its snapshot. An
// EventSource that reconnects with the last id is answered 204, which stops it. Feeds stayed open
// after the end, each holding a connection and one of its address's slots until the visitor left.
// TestAuctionLiveHearsTheEnd: a feed open when the auction's end passes gets the close and ends, also
// when a read closed the auction (a page asking for it, the sampler every second) before the closer
// did. Before, on the embedded backend, such a close went unheard: the feed sent keep-alives, never the
// close, and the pages held their connections after the end.
func TestAuctionLiveHearsTheEnd(t *testing.T) {
	e := setup(t)
	e.auctions.Start(context.Background()) // as serve starts it: the closer, the sampler, the feeds' watches
	t.Cleanup(e.auctions.Stop)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("x"), `{"amount": 1500}`), 201, "")
	sse, _ := e.liveEvents("/v1/auctions/lot/live")
	if snap := next(t, sse); snap["_event"] != "snapshot" || snap["seq"] != 1.0 {
		t.Fatalf("snapshot %v", snap)
	}
	e.clock.Advance(time.Hour)
	if st := e.do("GET", "/v1/auctions/lot", "", ""); st.str("status") != "closed" || st.num("final_price") != 1500 {
		t.Fatalf("read after the end: %v", st.body)
	}
	if ev := next(t, sse); ev["kind"] != "closed" || ev["_id"] != "2" || ev["price"] != 1500.0 {
		t.Fatalf("the feed's next event %v; want the close", ev)
	}
	ends(t, sse)
}

func TestAuctionLiveEndsWhenOver(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg(`, "buy_now_price": 9000`)), 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/v1/auctions/lot/live"
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	// read returns the types or kinds of a socket's messages up to its closure, and the closure's status.
	read := func(c *websocket.Conn) ([]string, websocket.StatusCode) {
		var got []string
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return got, websocket.CloseStatus(err)
			}
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			got = append(got, fmt.Sprint(m["type"], m["kind"]))
		}
	}
	sse, _ := e.liveEvents("/v1/auctions/lot/live")
	c := dial()
	if snap := next(t, sse); snap["_event"] != "snapshot" || snap["_id"] != "" {
		t.Fatalf("snapshot of an open auction %v: it has no id, since older events may follow it", snap)
	}
	e.want(e.do("POST", "/v1/auctions/lot/buy-now", e.visitorToken("x"), ""), 200, "")
	if ev := next(t, sse); ev["kind"] != "sold" || ev["_id"] != "1" {
		t.Fatalf("sale %v", ev)
	}
	ends(t, sse)
	if got, status := read(c); fmt.Sprint(got) != "[snapshot<nil> <nil>sold]" || status != websocket.StatusNormalClosure {
		t.Fatalf("socket got %v, closed with %v; want the snapshot, the sale and a normal closure", got, status)
	}

	// Opened after the sale: the snapshot, with the last event's id, and the end.
	again, _ := e.liveEvents("/v1/auctions/lot/live")
	if snap := next(t, again); snap["status"] != "sold" || snap["_id"] != "1" {
		t.Fatalf("snapshot of a sold auction %v", snap)
	}
	ends(t, again)
	if got, status := read(dial()); fmt.Sprint(got) != "[snapshot<nil>]" || status != websocket.StatusNormalClosure {
		t.Fatalf("socket on a sold auction got %v, closed with %v", got, status)
	}
	for _, h := range [][2]string{{"Last-Event-ID", "1"}, {"Last-Event-ID", "7"}} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/auctions/lot/live", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(h[0], h[1])
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("an EventSource reconnecting after the end (%s: %s): %d, want 204", h[0], h[1], res.StatusCode)
		}
	}
	// A reconnection that missed the sale gets it, then the end.
	missed, _ := e.liveEvents("/v1/auctions/lot/live?after=0")
	if snap, ev := next(t, missed), next(t, missed); snap["_id"] != "" || ev["kind"] != "sold" {
		t.Fatalf("resumed after 0: %v then %v", snap, ev)
	}
	ends(t, missed)

	// An operator's end: a bid, then the close, ends the feed as well.
	e.want(e.do("PUT", "/v1/auctions/two", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/two/bids", e.visitorToken("y"), `{"amount": 1000}`), 201, "")
	two, _ := e.liveEvents("/v1/auctions/two/live")
	next(t, two)
	e.want(e.do("POST", "/v1/auctions/two/end", adminKey, ""), 200, "")
	if ev := next(t, two); ev["kind"] != "extended" { // the end moved to now
		t.Fatalf("end %v", ev)
	}
	if ev := next(t, two); ev["kind"] != "closed" || ev["_id"] != "3" {
		t.Fatalf("close %v", ev)
	}
	ends(t, two)
}

// ends fails unless a feed ends within 5 s without another event.
func ends(t *testing.T, ch <-chan map[string]any) {
	t.Helper()
	select {
	case m, ok := <-ch:
		if ok {
			t.Fatalf("an event after the last: %v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the feed still runs 5 s after the auction's end")
	}
}

// TestAuctionRaceOverHTTP has 300 bidders bid through the API at once, then 300 callers race buy-now
// on a second auction: accepted prices strictly increase, the winner holds the highest, one buyer.
func TestAuctionRaceOverHTTP(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/hot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/auctions/buy", adminKey, e.auctionCfg(`, "buy_now_price": 5000`)), 200, "")
	tokens := make([]string, 300)
	for i := range tokens {
		tokens[i] = e.visitorToken(fmt.Sprintf("bidder-%d", i))
	}
	var wg sync.WaitGroup
	var sold atomic.Int64
	for i, tok := range tokens {
		wg.Go(func() {
			for j := range 3 {
				body := fmt.Sprintf(`{"max_amount": %d}`, 1000+(i*7919+j*104729)%90000)
				req, _ := http.NewRequest("POST", e.srv.URL+"/v1/auctions/hot/bids", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				if res, err := e.srv.Client().Do(req); err == nil {
					if res.StatusCode != 201 && res.StatusCode != 409 {
						t.Errorf("bid answered %d", res.StatusCode)
					}
					res.Body.Close()
				}
			}
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/auctions/buy/buy-now", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if res, err := e.srv.Client().Do(req); err == nil {
				if res.StatusCode == 200 {
					sold.Add(1)
				}
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	if sold.Load() != 1 {
		t.Fatalf("%d buy-now successes, want 1", sold.Load())
	}
	page := e.do("GET", "/v1/auctions/hot/bids?limit=1000", "", "")
	last, leader := 0.0, ""
	for _, b := range page.body["bids"].([]any) {
		m := b.(map[string]any)
		if p := m["price"].(float64); p <= last {
			t.Fatalf("price went from %v to %v", last, p)
		}
		last, leader = m["price"].(float64), m["bidder"].(string)
	}
	e.clock.Advance(time.Hour)
	st := e.do("GET", "/v1/auctions/hot", "", "")
	if st.str("winner") != leader || st.body["final_price"] != last {
		t.Fatalf("winner %v at %v, highest accepted bid %v by %s", st.str("winner"), st.body["final_price"], last, leader)
	}
}

// TestBodiesAreOneObject: a bid or a claim whose body is not exactly one JSON object is refused and
// changes nothing. Request bodies were decoded more loosely than configs: a trailing "}" passed, and of
// an amount named twice the last one was bid, where a proxy or a client reading the first would have
// shown another.
func TestBodiesAreOneObject(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot1", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 200, "")
	alice := e.visitorToken("alice")
	for _, body := range []string{`{"amount": V}}`, `{"amount": V}]`, `{"amount": 1000, "amount": V}`, `{"amount": 1000, "Amount": V}`,
		`null`, `[{"amount": V}]`, `"x"`, `{"amount": V} {}`} {
		r := e.do("POST", "/v1/auctions/lot1/bids", alice, strings.ReplaceAll(body, "V", "3000"))
		e.want(r, 400, "invalid_json")
		if msg := r.body["error"].(map[string]any)["message"].(string); strings.Contains(msg, `field ""`) || strings.Contains(msg, "field  ") {
			t.Errorf("%s: the message names no field: %q", body, msg)
		}
		if field, _ := r.body["error"].(map[string]any)["field"].(string); strings.Contains(body, `"amount": 1000,`) != strings.EqualFold(field, "amount") {
			t.Errorf("%s: field %v", body, field)
		}
		claim := strings.NewReplacer("amount", "admission_token", "1000", `"a"`, "V", `"b"`).Replace(body)
		e.want(e.do("POST", "/v1/drops/coupon/claims", alice, claim), 400, "invalid_json")
	}
	if a := e.do("GET", "/v1/auctions/lot1", "", ""); a.num("bid_count") != 0 {
		t.Fatalf("a refused body bid: %v", a.body)
	}
	if d := e.do("GET", "/v1/drops/coupon", "", ""); d.num("claimed") != 0 {
		t.Fatalf("a refused body claimed: %v", d.body)
	}
	e.want(e.do("POST", "/v1/auctions/lot1/bids", alice, ` {"amount": 1000} `), 201, "")
	e.want(e.do("POST", "/v1/drops/coupon/claims", alice, ""), 201, "")
}

// TestAuctionAmend: an auction with bids takes a new title and message by PATCH (or PUT), refuses any
// other change as auction_started naming the field, before its end and after; its bids and its result
// stand, and the audit log says what changed.
func TestAuctionAmend(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("w"), `{"amount": 1500}`), 201, "")
	changed := e.do("PATCH", "/v1/auctions/lot", adminKey, `{"title": "Guitar, 1962", "message": "Shipping within Korea only"}`)
	e.want(changed, 200, "")
	v := e.do("GET", "/v1/auctions/lot", "", "")
	if v.str("title") != "Guitar, 1962" || v.str("message") != "Shipping within Korea only" || v.num("bid_count") != 1 || v.num("price") != 1500 {
		t.Fatalf("after the amend: %v", v.body)
	}
	e.want(e.do("PATCH", "/v1/auctions/lot", adminKey, `{}`), 200, "") // as it was: no event
	if again := e.do("GET", "/v1/auctions/lot", "", ""); again.num("seq") != v.num("seq") {
		t.Fatalf("an unchanged config put again moved the feed from %d to %d", v.num("seq"), again.num("seq"))
	}
	refused := e.do("PATCH", "/v1/auctions/lot", adminKey, `{"start_price": 500}`)
	e.want(refused, 409, "auction_started")
	if refused.body["error"].(map[string]any)["field"] != "start_price" {
		t.Fatalf("the refusal names no field: %v", refused.body)
	}
	e.want(e.do("PATCH", "/v1/auctions/lot", adminKey, `{"message": "`+strings.Repeat("x", 2001)+`"}`), 400, "invalid_config")
	e.want(e.do("PATCH", "/v1/auctions/lot", adminKey, `[]`), 400, "invalid_config")
	e.want(e.do("PATCH", "/v1/auctions/nope", adminKey, `{"title": "x"}`), 404, "auction_not_found")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("x"), `{"amount": 2000}`), 201, "") // the bids go on
	e.want(e.do("POST", "/v1/auctions/lot/end", adminKey, ""), 200, "")
	ended := e.do("GET", "/v1/auctions/lot", "", "")
	e.want(e.do("PATCH", "/v1/auctions/lot", adminKey, `{"message": "The winner has been contacted"}`), 200, "")
	after := e.do("GET", "/v1/auctions/lot", "", "")
	if after.str("message") != "The winner has been contacted" || after.str("status") != ended.str("status") ||
		after.str("winner") != ended.str("winner") || after.num("final_price") != 2000 || after.num("seq") != ended.num("seq") {
		t.Fatalf("an ended auction's message: %v (at its end %v)", after.body, ended.body)
	}
	e.want(e.do("PATCH", "/v1/auctions/lot", adminKey, `{"start_price": 1}`), 409, "auction_started")
	audit := list(e.do("GET", "/v1/audit?kind=auction&id=lot", adminKey, ""), "entries")
	var fields []string
	for _, en := range audit {
		if en["action"] == "update" {
			for _, c := range en["changes"].([]any) {
				fields = append(fields, c.(map[string]any)["field"].(string))
			}
		}
	}
	if !slices.Equal(fields, []string{"message", "message", "title"}) {
		t.Fatalf("the audit log's update: %q", fields)
	}
}

// TestAuctionBehindARoomThroughACrowd makes a crowd join the line of a room an auction sits behind,
// be let in and out, bid exactly and by proxy, and try to buy it now, as the clock runs past the end,
// in random steps, and checks after each what must always hold: a bid or a purchase is taken only from
// a visitor the room holds admitted, and only while the auction is open; the price and the count of
// bids never go down; it is bought at most once; and once over, it stays over.
func TestAuctionBehindARoomThroughACrowd(t *testing.T) {
	e := setup(t)
	e.putRoom("hall", `{"capacity": 3, "grace": "1h", "idle_timeout": "1h", "session_ttl": "20m"}`)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg(`, "room": "hall", "buy_now_price": 9000,
		"soft_close": {"window": "2m", "extend": "1m"}`)), 200, "")
	r := rand.New(rand.NewPCG(11, 2026))
	var line []string // visitor tokens, in the order they joined
	var price, bids int64
	bought, over := 0, false
	counts := map[string]int{}
	for step := range 2500 {
		var got resp
		what := ""
		admitted := false
		switch n := r.IntN(20); {
		case n < 3:
			tok := e.visitorToken(fmt.Sprintf("s%d", step))
			what, got = "join", e.do("POST", "/v1/rooms/hall/join", tok, "")
			if got.code == 200 {
				line = append(line, tok)
			}
		case n < 7:
			if r.IntN(6) == 0 {
				e.clock.Advance(time.Duration(1+r.IntN(4)) * time.Minute)
			}
			e.tick("hall")
			continue
		case n < 17:
			if len(line) == 0 {
				continue
			}
			i := r.IntN(min(5, len(line)))
			st := e.do("GET", "/v1/rooms/hall/status", line[i], "")
			admitted = st.str("state") == "admitted"
			body := ""
			lot := e.do("GET", "/v1/auctions/lot", "", "")
			switch k := r.IntN(10); {
			case k < 5:
				what, body = "bid", fmt.Sprintf(`"amount": %d`, lot.num("min_next_bid")+int64(r.IntN(3))*100)
			case k < 9:
				what, body = "proxy", fmt.Sprintf(`"max_amount": %d`, lot.num("min_next_bid")+int64(r.IntN(20))*100)
			default:
				what = "buy-now"
			}
			path := "/v1/auctions/lot/bids"
			if what == "buy-now" {
				path = "/v1/auctions/lot/buy-now"
			}
			sep := ""
			if body != "" {
				sep = ", "
			}
			got = e.do("POST", path, line[i], `{`+body+sep+`"admission_token": "`+st.str("admission_token")+`"}`)
			if got.code < 300 {
				if !admitted || over {
					t.Fatalf("step %d: %s taken from a visitor %s, the auction over %v: %d %v", step, what, st.str("state"), over, got.code, got.body)
				}
				if what == "buy-now" {
					bought++
				}
			}
		default:
			if len(line) == 0 {
				continue
			}
			i := r.IntN(min(5, len(line)))
			what, got = "release", e.do("POST", "/v1/rooms/hall/release", line[i], "")
			if got.code != 200 { // still waiting: it gives up its place instead
				what, got = "leave", e.do("POST", "/v1/rooms/hall/leave", line[i], "")
			}
			line = slices.Delete(line, i, i+1)
		}
		if got.code >= 500 {
			t.Fatalf("step %d, %s: %d %v", step, what, got.code, got.body)
		}
		counts[fmt.Sprintf("%s %d %s", what, got.code, got.errCode())]++
		lot := e.do("GET", "/v1/auctions/lot", "", "")
		status := lot.str("status")
		if lot.num("price") < price || lot.num("bid_count") < bids || bought > 1 || (over && status != "closed" && status != "sold") {
			t.Fatalf("step %d, %s: the auction went back, or was bought %d times: %v (price %d, bids %d, over %v)", step, what, bought, lot.body, price, bids, over)
		}
		price, bids, over = lot.num("price"), lot.num("bid_count"), status == "closed" || status == "sold"
	}
	if counts["bid 201 "]+counts["proxy 201 "] < 20 || !over {
		t.Fatalf("the crowd did too little to tell: %v (over %v)", counts, over)
	}
	t.Log(counts)
}
