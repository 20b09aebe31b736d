package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/visitor"
)

// auctionView is an auction as the public sees it: never the leader's maximum nor the reserve itself.
type auctionView struct {
	ID          string           `json:"id"`
	Title       string           `json:"title"`
	Currency    string           `json:"currency"`
	Status      auction.Status   `json:"status"`
	Price       int64            `json:"price"`
	Leader      string           `json:"leader,omitempty"`
	Bids        int64            `json:"bid_count"`
	StartsAt    time.Time        `json:"starts_at"`
	EndsAt      time.Time        `json:"ends_at"`
	ReserveMet  bool             `json:"reserve_met"`
	MinNextBid  int64            `json:"min_next_bid,omitempty"`
	BuyNowPrice *int64           `json:"buy_now_price,omitempty"`
	Winner      string           `json:"winner,omitempty"`
	FinalPrice  *int64           `json:"final_price,omitempty"`
	Room        string           `json:"room,omitempty"`
	Identity    visitor.Identity `json:"identity"`
	Seq         int64            `json:"seq"`
}

func viewOf(id string, s auction.State, now time.Time) auctionView {
	v := auctionView{
		ID: id, Title: s.Config.Title, Currency: s.Config.Currency, Status: s.Status(now), Price: s.Price,
		Leader: s.Leader, Bids: s.Bids, StartsAt: s.Config.StartsAt, EndsAt: s.EndsAt,
		ReserveMet: s.ReserveMet(), Room: s.Config.Room, Identity: identityOf(s.Config.Identity), Seq: s.Seq,
	}
	if v.Status == auction.StatusOpen || v.Status == auction.StatusScheduled {
		v.MinNextBid = s.MinNext()
	}
	if s.BuyNowAvailable(now) {
		v.BuyNowPrice = s.Config.BuyNowPrice
	}
	if s.Closed || s.Sold {
		v.Winner = s.Winner
		if s.Winner != "" {
			v.FinalPrice = &s.Final
		}
	}
	return v
}

func auctionID(r *http.Request) (string, error) { return pathID(r, "auction") }

// pathID validates an id in the path: the same alphabet as room ids, safe in URLs and Redis keys.
func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if !rushgate.ValidID(id) {
		return "", apiError(http.StatusBadRequest, codeInvalidRequest, name+" ids are 1-64 characters of A-Z, a-z, 0-9, _ and -")
	}
	return id, nil
}

// deleteAuction removes an auction that has no bids; 409 auction_started otherwise.
func (s *Server) deleteAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err == nil {
		err = s.auctions.Delete(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "auction deleted", "auction", id)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

func (s *Server) putAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cfg, err := auction.DecodeConfig(bytes.NewReader(body))
	if err == nil {
		err = s.auctions.Put(r.Context(), id, cfg)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.auctions.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "auction saved", "auction", id, "ends_at", cfg.EndsAt)
	writeJSON(w, http.StatusOK, struct {
		auctionView
		Config auction.Config `json:"config"`
	}{viewOf(id, st, s.now()), cfg})
}

func (s *Server) getAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.auctions.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(id, st, s.now()))
}

type bidRequest struct {
	Amount         *int64 `json:"amount"`
	MaxAmount      *int64 `json:"max_amount"`
	AdmissionToken string `json:"admission_token"`
}

// bidder resolves the visitor behind an auction call and, for auctions behind a room, checks that it
// holds a live admission for that room.
func (s *Server) bidder(r *http.Request, id, admissionToken string) (auction.State, string, error) {
	vid, _, err := s.visitor(r)
	if err != nil {
		return auction.State{}, "", err
	}
	st, err := s.auctions.Get(r.Context(), id)
	if err == nil {
		err = identified(st.Config.Identity, vid)
	}
	if err != nil || st.Config.Room == "" {
		return st, vid, err
	}
	if _, err := s.admitted(r, st.Config.Room, vid, admissionToken); err != nil {
		return st, "", err
	}
	return st, vid, nil
}

// identityOf spells out the default identity.
func identityOf(id visitor.Identity) visitor.Identity {
	if id == "" {
		return visitor.IdentityAny
	}
	return id
}

// identified checks that a visitor is of the identity a drop or an auction requires. "room" needs no
// check of its own: a drop or auction with a room always asks for an admission of it (admitted).
func identified(required visitor.Identity, vid string) error {
	if required == visitor.IdentitySite && !visitor.Subject(vid) {
		return apiError(http.StatusForbidden, codeIdentityRequired, "this needs a visitor the site minted for a signed-in account (POST /v1/visitors)")
	}
	return nil
}

// admitted checks that visitor holds a live admission for roomID, from the admission token in the
// body or the Rushgate-Admission header, and returns the admission's id.
func (s *Server) admitted(r *http.Request, roomID, visitor, admissionToken string) (string, error) {
	if admissionToken == "" {
		admissionToken = r.Header.Get("Rushgate-Admission")
	}
	refused := apiError(http.StatusForbidden, codeNotAdmitted, "this needs an admission from room "+roomID)
	c, err := s.verifier.Verify(r.Context(), admissionToken, roomID)
	if err != nil || c.Subject != visitor {
		return "", refused
	}
	live, err := s.rooms.Active(r.Context(), roomID, visitor, c.ID)
	if err != nil || !live {
		return "", refused
	}
	return c.ID, nil
}

func (s *Server) postBid(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req bidRequest
	if err := decode(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if (req.Amount == nil) == (req.MaxAmount == nil) {
		s.writeError(w, r, apiError(http.StatusBadRequest, codeInvalidAmount, "give exactly one of amount and max_amount"))
		return
	}
	b := auction.Bid{Exact: req.Amount != nil}
	if b.Exact {
		b.Max = *req.Amount
	} else {
		b.Max = *req.MaxAmount
	}
	if _, b.Bidder, err = s.bidder(r, id, req.AdmissionToken); err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := s.auctions.Bid(r.Context(), id, b)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"accepted": true, "leading": o.State.Leader == b.Bidder, "auction": viewOf(id, o.State, s.now()),
	})
}

func (s *Server) buyNow(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req struct {
		AdmissionToken string `json:"admission_token"`
	}
	if err := decode(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	_, vid, err := s.bidder(r, id, req.AdmissionToken)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := s.auctions.BuyNow(r.Context(), id, vid)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(id, o.State, s.now()))
}

// pageParams reads ?after=SEQ&limit=N.
func pageParams(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	limit = 100
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return 0, 0, apiError(http.StatusBadRequest, codeInvalidRequest, "after must be a sequence number")
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return 0, 0, apiError(http.StatusBadRequest, codeInvalidRequest, "limit must be 1-1000")
		}
	}
	return after, limit, nil
}

// bids pages through the accepted bids by sequence number; next_after continues the listing.
func (s *Server) bids(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	var after int64
	var limit int
	if err == nil {
		after, limit, err = pageParams(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	evs, err := s.auctions.Events(r.Context(), id, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []auction.Event{}
	next := after
	for _, ev := range evs {
		if ev.Kind == auction.EventBid {
			out = append(out, ev)
		}
		next = ev.Seq
	}
	writeJSON(w, http.StatusOK, map[string]any{"bids": out, "next_after": next})
}

// live streams an auction: a snapshot, then every event from after (the snapshot's sequence by
// default), each once, in order, so that a client that reconnects with ?after=SEQ gets exactly what it
// missed. WebSocket (coder/websocket) by default; Server-Sent Events with Accept: text/event-stream.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	after := int64(-1)
	if err == nil && r.URL.Query().Get("after") != "" {
		after, _, err = pageParams(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.auctions.Get(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	slot, ok := s.limits.acquire(s.clientAddr(r), "")
	if !ok {
		s.writeError(w, r, apiError(http.StatusTooManyRequests, codeTooManyStreams, "too many live feeds from this address; close some and retry"))
		return
	}
	defer s.limits.release(slot)
	s.streams.Add(1) // a stream outlives net/http's bookkeeping of its request: Wait waits for it
	defer s.streams.Done()
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.liveSSE(w, r, id, after)
		return
	}
	s.liveWebSocket(w, r, id, after)
}

func (s *Server) liveSSE(w http.ResponseWriter, r *http.Request, id string, after int64) {
	out, ok := openStream(w)
	if !ok {
		return
	}
	defer out.close()
	if !out.send([]byte("retry: 2000\n\n")) {
		return
	}
	s.feed(r.Context(), id, after, func(kind string, seq int64, data []byte) bool {
		head := "event: " + kind + "\n"
		if kind != "snapshot" && kind != "" {
			head = "id: " + strconv.FormatInt(seq, 10) + "\n" + head
		}
		if kind == "" {
			return out.send([]byte(": keep-alive\n\n"))
		}
		return out.send([]byte(head + "data: " + string(data) + "\n\n"))
	})
}

func (s *Server) liveWebSocket(w http.ResponseWriter, r *http.Request, id string, after int64) {
	// The feed is public and read-only, and a socket carries no cookie-authorised action, so any
	// origin may watch.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the client
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // ends when the client closes
	s.feed(ctx, id, after, func(kind string, _ int64, data []byte) bool {
		if kind == "" {
			return c.Ping(ctx) == nil
		}
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, data) == nil
	})
	_ = c.Close(websocket.StatusGoingAway, "stream ended")
}

// feed sends the snapshot ("snapshot"), then each event under its kind, and a keep-alive (kind "")
// when quiet, until send fails, ctx ends or the server drains.
func (s *Server) feed(ctx context.Context, id string, after int64, send func(kind string, seq int64, data []byte) bool) {
	changed := s.auctions.Changed(id)
	st, err := s.auctions.Get(ctx, id)
	if err != nil {
		return
	}
	snap, _ := json.Marshal(struct {
		Type string `json:"type"`
		auctionView
	}{"snapshot", viewOf(id, st, s.now())})
	if !send("snapshot", st.Seq, snap) {
		return
	}
	if after < 0 {
		after = st.Seq
	}
	for {
		evs, err := s.auctions.Events(ctx, id, after, 500)
		if err != nil {
			return
		}
		for _, ev := range evs {
			data, _ := json.Marshal(ev)
			if !send(ev.Kind, ev.Seq, data) {
				return
			}
			after = ev.Seq
		}
		if len(evs) == 500 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.streamCtx.Done():
			return
		case <-changed:
			changed = s.auctions.Changed(id)
		case <-time.After(keepAlive):
			if !send("", 0, nil) {
				return
			}
		}
	}
}
