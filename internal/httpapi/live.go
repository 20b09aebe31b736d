package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/rushgate/rushgate/internal/auction"
)

// live streams an auction: a snapshot, then every event from after (the snapshot's sequence by
// default), each once, in order, so that a client that reconnects with ?after=SEQ gets exactly what it
// missed. WebSocket (coder/websocket) by default; Server-Sent Events with Accept: text/event-stream.
// The feed ends once the auction is over and the client has its last event: a crowd that stays on
// the page of an ended auction holds no connection. An EventSource that reconnects after that end is
// answered 204, which stops it for good.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	var after int64
	if err == nil {
		after, err = resumeAfter(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.auctions.Get(r.Context(), id) // the snapshot too: one read per feed opened
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if sse && after >= 0 && over(st, after) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	done, ok := s.holdFeed(w, r)
	if !ok {
		return
	}
	defer done()
	if sse {
		s.liveSSE(w, r, id, st, after)
		return
	}
	s.liveWebSocket(w, r, id, st, after)
}

// over reports whether a client that has an auction's events up to after has had them all for good:
// the auction is over and nothing follows its last event.
func over(st auction.State, after int64) bool { return st.Over() && after >= st.Seq }

// resumeAfter is the sequence a feed resumes after, -1 for none (from the snapshot on): an EventSource
// that reconnects sends the id of the last event it got as Last-Event-ID, which is newer than the
// ?after= its URL was made with, so the header wins; without it, ?after=.
func resumeAfter(r *http.Request) (int64, error) {
	name, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		name, v = "after", r.URL.Query().Get("after")
	}
	if v == "" {
		return -1, nil
	}
	after, err := strconv.ParseInt(v, 10, 64)
	if err != nil || after < 0 {
		return 0, apiError(http.StatusBadRequest, codeInvalidRequest, name+" must be a sequence number")
	}
	return after, nil
}

// holdFeed takes one of the client address's slots for a public live feed (an auction's, a drop's) and
// counts the feed for the drain; it answers 429 too_many_streams when the address holds too many.
// Call done when the feed ends.
func (s *Server) holdFeed(w http.ResponseWriter, r *http.Request) (done func(), ok bool) {
	slot, ok := s.limits.acquire(s.clientAddr(r), "")
	if !ok {
		s.writeError(w, r, apiError(http.StatusTooManyRequests, codeTooManyStreams, "too many live feeds from this address; close some and retry"))
		return nil, false
	}
	s.streams.Add(1) // a feed outlives net/http's bookkeeping of its request: Wait waits for it
	return func() {
		s.streams.Done()
		s.limits.release(slot)
	}, true
}

func (s *Server) liveSSE(w http.ResponseWriter, r *http.Request, id string, st auction.State, after int64) {
	out, ok := openStream(w)
	if !ok {
		return
	}
	defer out.close()
	if !out.send(retryHint()) {
		return
	}
	// Events carry their sequence as the id an EventSource resumes after. A snapshot does only when no
	// event can follow it (the auction is over): events older than it may follow otherwise.
	final := after < 0 && over(st, st.Seq)
	s.feed(r.Context(), id, st, after, func(kind string, seq int64, data []byte) bool {
		head := "event: " + kind + "\n"
		if (kind != "snapshot" || final) && kind != "" {
			head = "id: " + strconv.FormatInt(seq, 10) + "\n" + head
		}
		if kind == "" {
			return out.send([]byte(": keep-alive\n\n"))
		}
		return out.send([]byte(head + "data: " + string(data) + "\n\n"))
	})
}

func (s *Server) liveWebSocket(w http.ResponseWriter, r *http.Request, id string, st auction.State, after int64) {
	// The feed is public and read-only, and a socket carries no cookie-authorised action, so any
	// origin may watch.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the client
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // ends when the client closes
	ended := s.feed(ctx, id, st, after, func(kind string, _ int64, data []byte) bool {
		if kind == "" {
			return c.Ping(ctx) == nil
		}
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, data) == nil
	})
	if ended { // a normal closure: the client has everything and need not come back
		_ = c.Close(websocket.StatusNormalClosure, "auction over")
		return
	}
	_ = c.Close(websocket.StatusGoingAway, "stream ended")
}

// feed sends the snapshot st ("snapshot"), then each event under its kind, and a keep-alive (kind "")
// when quiet, until send fails, ctx ends, the server drains or the auction is over (ended reports
// that: the client has had the last event). Events after the snapshot that came before the feed
// followed the auction are read first, so none is missed.
func (s *Server) feed(ctx context.Context, id string, st auction.State, after int64, send func(kind string, seq int64, data []byte) bool) (ended bool) {
	f := s.auctions.Follow(id)
	defer f.Close()
	changed := f.Changed()
	snap, _ := json.Marshal(struct {
		Type string `json:"type"`
		auctionView
	}{"snapshot", viewOf(id, st, s.now())})
	if !send("snapshot", st.Seq, snap) {
		return false
	}
	if after < 0 {
		after = st.Seq
	}
	if over(st, after) {
		return true
	}
	for {
		evs, err := f.Events(ctx, after, 500)
		if err != nil {
			return false
		}
		for _, ev := range evs {
			data, _ := json.Marshal(ev)
			if !send(ev.Kind, ev.Seq, data) {
				return false
			}
			if after = ev.Seq; ev.Ends() {
				return true
			}
		}
		if len(evs) == 500 {
			continue
		}
		select {
		case <-ctx.Done():
			return false
		case <-s.streamCtx.Done():
			return false
		case <-changed:
			changed = f.Changed()
		case <-time.After(keepAlive):
			if !send("", 0, nil) {
				return false
			}
		}
	}
}
