package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/visitor"
)

type dropView struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// Message is the operator's word to the crowd, shown on the drop's page.
	Message    string     `json:"message,omitempty"`
	Status     string     `json:"status"`
	Stock      int        `json:"stock"`
	Remaining  int        `json:"remaining"`
	Claimed    int        `json:"claimed"`
	PerVisitor int        `json:"per_visitor"`
	OpensAt    time.Time  `json:"opens_at"`
	ClosesAt   *time.Time `json:"closes_at,omitempty"`
	Room       string     `json:"room,omitempty"`
	// Identity is whose identity per_visitor counts; always shown, so a client knows what it needs.
	Identity visitor.Identity `json:"identity"`
}

func dropViewOf(id string, info drop.Info, now time.Time) dropView {
	c := info.Config
	return dropView{ID: id, Title: c.Title, Message: c.Message, Stock: c.Stock, Remaining: c.Stock - info.Claimed, Claimed: info.Claimed,
		PerVisitor: c.PerVisitor, OpensAt: c.OpensAt, ClosesAt: c.ClosesAt, Room: c.Room,
		Status: string(info.Status(now)), Identity: identityOf(c.Identity)}
}

func dropID(r *http.Request) (string, error) {
	return pathID(r, "drop")
}

// deleteDrop removes a drop that nobody has claimed from; 409 drop_started otherwise.
func (s *Server) deleteDrop(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	if err == nil {
		err = s.drops.Delete(r.Context(), id)
	}
	s.deleted(w, r, "drop", id, err)
}

// putDrop creates or replaces a drop (once it has claims, changes what may change: see drop.Service.Put).
func (s *Server) putDrop(w http.ResponseWriter, r *http.Request) {
	s.saveDrop(w, r, func(ctx context.Context, id string, body []byte) (drop.Info, error) {
		cfg, err := drop.DecodeConfig(body)
		if err != nil {
			return drop.Info{}, err
		}
		return s.drops.Put(ctx, id, cfg)
	})
}

// patchDrop changes the fields of a drop its body names (a JSON merge patch), as a PUT of the result:
// restocking a drop that lists its codes needs no copy of them.
func (s *Server) patchDrop(w http.ResponseWriter, r *http.Request) {
	s.saveDrop(w, r, s.drops.Patch)
}

// saveDrop reads a drop's body, up to a drop's limit, has save apply it, and answers the drop as it
// now stands.
func (s *Server) saveDrop(w http.ResponseWriter, r *http.Request, save func(ctx context.Context, id string, body []byte) (drop.Info, error)) {
	id, err := dropID(r)
	var body []byte
	if err == nil {
		body, err = readBodyUpTo(r, maxDropBody)
	}
	var info drop.Info
	if err == nil {
		info, err = save(r.Context(), id, body)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "drop saved", "drop", id, "stock", info.Config.Stock, "method", r.Method)
	writeJSON(w, http.StatusOK, dropViewOf(id, info, s.now()))
}

// dropLive streams a drop's public view as Server-Sent Events ("drop"): at once, then whenever it
// changes, at most once per drop.FeedEvery, until it is sold out or gone. A crowd on the drop's page
// holds these rather than polling: whatever its size, each instance reads the drop once per interval.
// The sold-out view, the last, carries an id, so that an EventSource reconnecting after it sends
// Last-Event-ID and is answered 204, which stops it rather than have it read the end every 2 s.
func (s *Server) dropLive(w http.ResponseWriter, r *http.Request) {
	id, info, ok := s.readDrop(w, r)
	if !ok {
		return
	}
	if r.Header.Get("Last-Event-ID") != "" && dropViewOf(id, info, s.now()).Status == string(drop.StatusSoldOut) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	done, ok := s.holdFeed(w, r)
	if !ok {
		return
	}
	defer done()
	out, ok := openStream(w)
	if !ok {
		return
	}
	defer out.close()
	f := s.drops.Follow(id, info)
	defer f.Close()
	changed := f.Changed()
	if latest, err := f.Latest(); err == nil && latest.Claimed > info.Claimed { // the feed read after this request did
		info = latest
	}
	if !out.send(retryHint()) {
		return
	}
	keep := time.NewTicker(keepAlive / 2)
	defer keep.Stop()
	var err error
	for {
		v := dropViewOf(id, info, s.now())
		data, _ := json.Marshal(v)
		if v.Status == string(drop.StatusSoldOut) { // final: the last view
			out.send([]byte("id: sold_out\nevent: drop\ndata: " + string(data) + "\n\n"))
			return
		}
		if !out.send([]byte("event: drop\ndata: " + string(data) + "\n\n")) {
			return
		}
		for fresh := false; !fresh; {
			select {
			case <-r.Context().Done():
				return
			case <-s.streamCtx.Done():
				return
			case <-keep.C:
				if !out.send([]byte(": keep-alive\n\n")) {
					return
				}
			case <-changed:
				changed, fresh = f.Changed(), true
				if info, err = f.Latest(); err != nil {
					return // the drop is gone
				}
			}
		}
	}
}

// dropConfig is the operator's view of one drop with its whole config; ?codes=0 leaves the listed codes
// out (listed says how many), for a page that refreshes it every second.
func (s *Server) dropConfig(w http.ResponseWriter, r *http.Request) {
	codes := r.URL.Query().Get("codes") != "0"
	summary(s, "drop", func(ctx context.Context, id string) (drop.Summary, error) { return s.drops.Summary(ctx, id, codes) })(w, r)
}

// readDrop reads the drop a request names, answering the error itself when there is none.
func (s *Server) readDrop(w http.ResponseWriter, r *http.Request) (string, drop.Info, bool) {
	id, err := dropID(r)
	var info drop.Info
	if err == nil {
		info, err = s.drops.Get(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return "", drop.Info{}, false
	}
	return id, info, true
}

func (s *Server) getDrop(w http.ResponseWriter, r *http.Request) {
	id, info, ok := s.readDrop(w, r)
	if !ok {
		return
	}
	w.Header()["Cache-Control"] = sharedBriefly // every visitor of the drop's page polls this
	writeJSON(w, http.StatusOK, dropViewOf(id, info, s.now()))
}

// postClaim takes one unit for the caller. A repeat with the same Idempotency-Key answers as the first
// time did. Behind a room, the visitor needs a live admission; with release_on_claim the claim ends
// it, so that the next visitor in line is admitted.
func (s *Server) postClaim(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	var req struct {
		AdmissionToken string `json:"admission_token"`
	}
	if err == nil {
		err = decode(r, &req, true)
	}
	var key string
	if err == nil {
		key, err = idempotencyKey(r)
	}
	var vid string
	if err == nil { // after every check of the request: a new visitor's cookie is set here
		vid, err = s.actor(w, r, "drop", id)
	}
	var c drop.Claim
	if err == nil {
		c, _, err = s.drops.Claim(r.Context(), drop.ClaimRequest{Drop: id, Visitor: vid, Key: key,
			Admission: s.admissionOf(r, req.AdmissionToken)})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := claimView{ID: c.ID, Code: c.Code, ClaimedAt: c.ClaimedAt, Seq: c.Seq}
	if y := v.ClaimedAt.Year(); y < 0 || y > 9999 { // outside what RFC 3339 writes: encoding/json's error
		writeJSON(w, http.StatusCreated, v)
		return
	}
	bp := statusBufs.Get().(*[]byte)
	*bp = v.appendJSON((*bp)[:0])
	writeEncoded(w, http.StatusCreated, bp)
}

// idempotencyKey returns the claim's Idempotency-Key, "" for none. Two of them are refused rather than
// one picked: a proxy may join them into one, or keep the other, and the claim would not be the one the
// client retries.
func idempotencyKey(r *http.Request) (string, error) {
	keys := r.Header.Values("Idempotency-Key")
	switch {
	case len(keys) > 1:
		return "", apiError(http.StatusBadRequest, codeInvalidRequest, "give one Idempotency-Key")
	case len(keys) == 1 && len(keys[0]) > 200:
		return "", apiError(http.StatusBadRequest, codeInvalidRequest, "Idempotency-Key is at most 200 bytes")
	case len(keys) == 1:
		return keys[0], nil
	}
	return "", nil
}

// claimView answers a claim; a struct, not a map, since a crowd's every claim encodes one.
type claimView struct {
	ID        string    `json:"claim_id"`
	Code      string    `json:"code"`
	ClaimedAt time.Time `json:"claimed_at"`
	// Seq is the claim's number in the drop: at least that many units are gone, which a page shows at
	// once rather than after the drop's feed catches up.
	Seq int64 `json:"seq"`
}

func (s *Server) listClaims(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	var after int64
	var limit int
	if err == nil {
		after, limit, err = pageParams(r)
	}
	var claims []drop.Claim
	if err == nil {
		claims, err = s.drops.Claims(r.Context(), id, after, limit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	next := after
	if len(claims) > 0 {
		next = claims[len(claims)-1].Seq
	}
	writeJSON(w, http.StatusOK, map[string]any{"claims": nonNil(claims), "next_after": next})
}

// claimOfCode answers which claim handed out a code: a site's checkout asks it of the code a customer
// presents.
func (s *Server) claimOfCode(w http.ResponseWriter, r *http.Request) {
	id, code, err := dropCode(r)
	var c drop.Code
	if err == nil {
		c, err = s.drops.CodeOf(r.Context(), id, code)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// redeemCode marks a code used at a checkout, once: 200 with the claim and its redemption, again for
// a repeat naming the same order; 409 code_redeemed, with the redemption that stands, otherwise.
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request) {
	s.changeCode(w, r, s.drops.Redeem)
}

// unredeemCode makes a code usable again when its order is cancelled: 200 with the claim, 409
// code_redeemed when another order redeemed it.
func (s *Server) unredeemCode(w http.ResponseWriter, r *http.Request) {
	s.changeCode(w, r, s.drops.Unredeem)
}

// changeCode answers a change of a code's redemption, made by change for the order the body names.
func (s *Server) changeCode(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, id, code, order string) (drop.Code, error)) {
	id, code, order, err := orderOfCode(r)
	var c drop.Code
	if err == nil {
		c, err = change(r.Context(), id, code, order)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// dropCode reads the drop and the code a request names.
func dropCode(r *http.Request) (id, code string, err error) {
	id, err = dropID(r)
	code = r.PathValue("code")
	if err == nil && (code == "" || len(code) > drop.MaxCodeLen) {
		err = apiError(http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("a code is 1-%d bytes", drop.MaxCodeLen))
	}
	return id, code, err
}

// orderOfCode reads the drop and code a request names and the order its body may name.
func orderOfCode(r *http.Request) (id, code, order string, err error) {
	id, code, err = dropCode(r)
	var req struct {
		Order string `json:"order"`
	}
	if err == nil {
		err = decode(r, &req, true)
	}
	if err == nil && len(req.Order) > drop.MaxOrderLen {
		err = &Error{Status: http.StatusBadRequest, Code: codeInvalidRequest, Field: "order",
			Message: fmt.Sprintf("order: at most %d bytes", drop.MaxOrderLen)}
	}
	return id, code, req.Order, err
}

func (s *Server) myClaims(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	var vid string
	if err == nil {
		vid, _, err = s.visitor(r)
	}
	var held []drop.Code
	if err == nil {
		held, err = s.drops.Held(r.Context(), id, vid)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The visitor sees when its code was used, not the site's order it was used for.
	out := make([]heldClaim, len(held))
	for i, c := range held {
		out[i].Claim = c.Claim
		if c.Redemption != nil {
			out[i].RedeemedAt = &c.Redemption.At
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"claims": out})
}

// heldClaim is a claim as its visitor sees it: with the time its code was used, once it is.
type heldClaim struct {
	drop.Claim
	RedeemedAt *time.Time `json:"redeemed_at,omitempty"`
}

func nonNil(c []drop.Claim) []drop.Claim {
	if c == nil {
		return []drop.Claim{}
	}
	return c
}
