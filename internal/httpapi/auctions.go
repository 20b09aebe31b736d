package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/visitor"
)

// auctionView is an auction as the public sees it: never the leader's maximum nor the reserve itself.
type auctionView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Message is the operator's word to the bidders, shown on the auction's page.
	Message     string           `json:"message,omitempty"`
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
		ID: id, Title: s.Config.Title, Message: s.Config.Message, Currency: s.Config.Currency, Status: s.Status(now), Price: s.Price,
		Leader: s.Leader, Bids: s.Bids, StartsAt: s.Config.StartsAt, EndsAt: s.EndsAt,
		ReserveMet: s.ReserveMet(), Room: s.Config.Room, Identity: identityOf(s.Config.Identity), Seq: s.Seq,
	}
	if v.Status == auction.StatusOpen || v.Status == auction.StatusScheduled {
		v.MinNextBid = s.MinNext()
	}
	// Before the start too: a page that shows the auction then offers buy-now at the start without a
	// read, since the feed brings no event at the start.
	if s.BuyNowAvailable(now) || v.Status == auction.StatusScheduled {
		v.BuyNowPrice = s.Config.BuyNowPrice
	}
	if s.Over() {
		v.Winner = s.Winner
		if s.Winner != "" {
			v.FinalPrice = &s.Final
		}
	}
	return v
}

func auctionID(r *http.Request) (string, error) { return pathID(r, "auction") }

// deleteAuction removes an auction that has no bids; 409 auction_started otherwise.
func (s *Server) deleteAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err == nil {
		err = s.auctions.Delete(r.Context(), id)
	}
	s.deleted(w, r, "auction", id, err)
}

// putAuction creates or replaces an auction (once it has bids, changes its title and message: see
// auction.Service.Put).
func (s *Server) putAuction(w http.ResponseWriter, r *http.Request) {
	s.saveAuction(w, r, func(ctx context.Context, id string, body []byte) error {
		cfg, err := auction.DecodeConfig(body)
		if err != nil {
			return err
		}
		return s.auctions.Put(ctx, id, cfg)
	})
}

// patchAuction changes the fields of an auction its body names (a JSON merge patch), as a PUT of the
// result.
func (s *Server) patchAuction(w http.ResponseWriter, r *http.Request) {
	s.saveAuction(w, r, s.auctions.Patch)
}

// saveAuction reads an auction's body, has save apply it, and answers the auction as it now stands,
// with its config.
func (s *Server) saveAuction(w http.ResponseWriter, r *http.Request, save func(ctx context.Context, id string, body []byte) error) {
	id, err := auctionID(r)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = save(r.Context(), id, body)
	}
	var st auction.State
	if err == nil {
		st, err = s.auctions.Get(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "auction saved", "auction", id, "ends_at", st.Config.EndsAt, "method", r.Method)
	writeJSON(w, http.StatusOK, struct {
		auctionView
		Config auction.Config `json:"config"`
	}{viewOf(id, st, s.now()), st.Config})
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

// auctionMe answers which visitor the request carries (as GET /v1/visitors/me) and whether its bid or
// buy-now on the auction was taken: a page opened anew tells a bidder how it stands however many bids
// came since. A request without a visitor gets none made.
func (s *Server) auctionMe(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	var visitor string
	if err == nil {
		visitor, err = s.visitorIfAny(r)
	}
	var bid bool
	if err == nil {
		bid, err = s.auctions.Bidded(r.Context(), id, visitor)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Visitor string `json:"visitor_id"`
		Bid     bool   `json:"bid"`
	}{visitor, bid})
}

type bidRequest struct {
	Amount         *int64 `json:"amount"`
	MaxAmount      *int64 `json:"max_amount"`
	AdmissionToken string `json:"admission_token"`
}

// decodeBid reads a bid's body as decode does, the body most bids are by a short cut (see quickBid).
func decodeBid(r *http.Request) (bidRequest, error) {
	body, err := readBody(r)
	if err != nil {
		return bidRequest{}, err
	}
	if req, ok := quickBid(body); ok {
		return req, nil
	}
	var req bidRequest
	return req, decodeBody(body, &req, false)
}

// quickBid reads the body that nearly every bid of a crowd is, {"amount": N} or {"max_amount": N} with
// N digits (no sign, fraction or exponent), without encoding/json, whose decoder cost a fifteenth of a
// bid's CPU on a hot auction. Any other body, ok false, goes to the strict decoder, which reads a body
// that quickBid takes the same way (FuzzQuickBid).
func quickBid(b []byte) (req bidRequest, ok bool) {
	i := 0
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
			i++
		}
	}
	token := func(s string) bool {
		space()
		if len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	if !token("{") {
		return req, false
	}
	var into **int64
	switch {
	case token(`"amount"`):
		into = &req.Amount
	case token(`"max_amount"`):
		into = &req.MaxAmount
	default:
		return req, false
	}
	if !token(":") {
		return req, false
	}
	space()
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	digits := b[start:i]
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) || !token("}") {
		return bidRequest{}, false
	}
	if space(); i != len(b) {
		return bidRequest{}, false
	}
	var n int64
	for _, d := range digits {
		n = n*10 + int64(d-'0')
	}
	*into = &n
	return req, true
}

func (s *Server) postBid(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := decodeBid(r)
	if err != nil {
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
	if b.Bidder, err = s.actor(w, r, "auction", id); err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := s.auctions.Bid(r.Context(), id, b, s.admissionOf(r, req.AdmissionToken))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, bidView{Accepted: true, Leading: o.State.Leader == b.Bidder, Auction: viewOf(id, o.State, s.now())})
}

// bidView answers an accepted bid; a struct, not a map, since a crowd's every bid encodes one.
type bidView struct {
	Accepted bool        `json:"accepted"`
	Leading  bool        `json:"leading"`
	Auction  auctionView `json:"auction"`
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
	vid, err := s.actor(w, r, "auction", id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := s.auctions.BuyNow(r.Context(), id, vid, s.admissionOf(r, req.AdmissionToken))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(id, o.State, s.now()))
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
