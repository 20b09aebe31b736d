package httpapi_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/room"
)

// ended reports whether a stream ends (its channel closes) within a few seconds.
func (s *stream) ended(t *testing.T) bool {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestStreamsPerVisitor: one visitor token once held 2,000 streams, each re-reading and re-signing on
// every change. A visitor keeps at most four: a fifth ends the oldest. All of a visitor's streams in a
// room share one feed, so a change is read from the store once, not once per stream.
func TestStreamsPerVisitor(t *testing.T) {
	counter := &statusCounter{reads: map[string]int{}}
	e := setup(t, func(_ *httpapi.Config, s *room.Store) { counter.Store = *s; *s = counter })
	e.putRoom("sale", `{"capacity": 1}`)
	e.join("sale", "")
	tok := e.join("sale", "").str("visitor_token")
	vid := strings.Split(tok, ".")[1]
	var streams []*stream
	for i := range 6 {
		s := e.stream("sale", tok)
		if m := s.next(t); m["state"] != "waiting" {
			t.Fatalf("stream %d: %v", i, m)
		}
		streams = append(streams, s)
	}
	for i, s := range streams[:2] {
		if !s.ended(t) {
			t.Fatalf("stream %d of 6 still open: a visitor keeps four", i)
		}
	}
	before := counter.count(vid)
	e.tick("sale") // admits the first visitor: the room moves, our visitor is now first
	e.svc.Broadcast("sale")
	for i, s := range streams[2:] {
		if m := s.next(t); m["position"] != 1.0 {
			t.Fatalf("stream %d after the room moved: %v", i+2, m)
		}
	}
	if n := counter.count(vid) - before; n != 1 {
		t.Fatalf("%d status reads for one change seen by 4 streams of one visitor, want 1", n)
	}
	// Another visitor's streams are its own.
	other := e.join("sale", "").str("visitor_token")
	if m := e.stream("sale", other).next(t); m["position"] != 2.0 {
		t.Fatalf("another visitor: %v", m)
	}
}

// TestStreamsPerAddress: one address holds at most StreamsPerAddress streams and live feeds; past it
// a new one is refused with 429 too_many_streams, and a closed one frees its place.
func TestStreamsPerAddress(t *testing.T) {
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.StreamsPerAddress = 3 })
	e.putRoom("sale", `{"capacity": 1}`)
	var streams []*stream
	var toks []string
	for range 3 {
		toks = append(toks, e.join("sale", "").str("visitor_token"))
		s := e.stream("sale", toks[len(toks)-1])
		s.next(t)
		streams = append(streams, s)
	}
	fourth := e.join("sale", "").str("visitor_token")
	r := e.do("GET", "/v1/rooms/sale/events", fourth, "")
	e.want(r, http.StatusTooManyRequests, "too_many_streams")
	e.want(e.do("GET", "/v1/auctions/none/live", "", ""), http.StatusNotFound, "auction_not_found")
	// A hijacked stream notices that its client has gone when a write fails, which is the second after
	// the close at the latest (or a keep-alive): here the last visitor moving up twice as the two ahead
	// of it leave.
	streams[2].cancel()
	opened := func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/rooms/sale/events", nil)
		req.Header.Set("Authorization", "Bearer "+fourth)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
	for _, tok := range toks[:2] {
		time.Sleep(50 * time.Millisecond) // the client's close reaches the server
		e.want(e.do("POST", "/v1/rooms/sale/leave", tok, ""), http.StatusOK, "")
		e.svc.Broadcast("sale")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !opened() {
		if time.Now().After(deadline) {
			t.Fatal("a closed stream's place was not freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamAnnouncesTheMessage: a waiting visitor's stream starts with the room's message, as its
// own event before the status, hears each change of it once, and not again with every status; a
// second stream of the same visitor starts with the message as it stands.
func TestStreamAnnouncesTheMessage(t *testing.T) {
	e := setup(t)
	e.putRoom("told", `{"capacity": 1, "page": {"message": "Doors at seven."}}`)
	e.join("told", "")
	_, _ = e.svc.Tick(context.Background(), "told")
	tok := e.join("told", "").str("visitor_token")
	s := e.stream("told", tok)
	if m := s.next(t); m["message"] != "Doors at seven." || len(m) != 1 {
		t.Fatalf("first event %v", m)
	}
	if m := s.next(t); m["state"] != "waiting" || m["message"] != nil {
		t.Fatalf("second event %v", m)
	}
	e.want(e.do("PATCH", "/v1/rooms/told", adminKey, `{"page": {"message": "Doors at eight."}}`), 200, "")
	if m := s.next(t); m["message"] != "Doors at eight." {
		t.Fatalf("after the change %v", m)
	}
	again := e.stream("told", tok)
	if m := again.next(t); m["message"] != "Doors at eight." {
		t.Fatalf("a second stream starts with %v", m)
	}
	e.want(e.do("PATCH", "/v1/rooms/told", adminKey, `{"page": {"message": null}}`), 200, "")
	if m := s.next(t); m["message"] != "" {
		t.Fatalf("after the message went %v", m)
	}
	e.want(e.do("PATCH", "/v1/rooms/told", adminKey, `{"capacity": 1}`), 200, "")
	select {
	case m := <-s.events:
		if _, ok := m["message"]; ok {
			t.Fatalf("the message again, unchanged: %v", m)
		}
	case <-time.After(300 * time.Millisecond):
	}
}

// TestStreamsSpreadTheirReconnections: every event stream (a room's, a drop's, an auction's) starts
// with its own reconnection wait, between one and four seconds, so that the pages of an instance that
// stops do not all come back to the others in one instant.
func TestStreamsSpreadTheirReconnections(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1, "paused": true}`)
	e.want(e.do("PUT", "/v1/drops/coupons", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	// firstRetry opens a stream and returns the wait its first line gives.
	firstRetry := func(path, tok string) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := e.srv.Client().Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, res, err)
		}
		defer res.Body.Close()
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		ms, ok := strings.CutPrefix(strings.TrimSpace(line), "retry: ")
		n, nerr := strconv.Atoi(ms)
		if err != nil || !ok || nerr != nil {
			t.Fatalf("%s starts with %q (%v)", path, line, err)
		}
		return time.Duration(n) * time.Millisecond
	}
	for _, path := range []string{"/v1/rooms/sale/events", "/v1/drops/coupons/live", "/v1/auctions/lot/live"} {
		seen := map[time.Duration]bool{}
		for range 12 {
			tok := ""
			if strings.HasPrefix(path, "/v1/rooms/") {
				tok = e.join("sale", "").str("visitor_token")
			}
			wait := firstRetry(path, tok)
			if wait < time.Second || wait >= 4*time.Second {
				t.Fatalf("%s: a reconnection after %v, want 1-4 s", path, wait)
			}
			seen[wait] = true
		}
		if len(seen) < 6 {
			t.Fatalf("%s: 12 streams were given only %d different waits: %v", path, len(seen), seen)
		}
	}
}
