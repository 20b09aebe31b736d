package loadtest

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// auctionLine is the waiting room in front of an auction's rehearsal. An auction with a room takes
// bids only from the room's admitted visitors, so each bidder first joins the room's line with its
// visitor and waits on the room's event stream as the room's page does (the room's rehearsal's
// machinery, whose calls and errors it keeps), then bids with its admission. A bidder whose session
// ends while it bids joins the line again; one that stops bidding releases its slot for the next.
type auctionLine struct {
	*rehearsal
	// ctx ends with the auction: nobody waits in line for an auction that is over.
	ctx context.Context
	// Admissions the bidders were given, sessions that ended while a bidder bid, and bidders still in
	// line when the auction ended.
	entered, reentered, unserved atomic.Int64
}

// newAuctionLine is the line of room for the run's bidders, until ctx ends.
func newAuctionLine(ctx context.Context, base, room string) *auctionLine {
	return &auctionLine{ctx: ctx, rehearsal: &rehearsal{base: base, room: room, sse: true,
		calls: map[string][]time.Duration{}, errors: map[string]int{}}}
}

// enter puts the bidder through the line and keeps its admission; it reports whether the bidder got
// one (not when the auction ended first).
func (l *auctionLine) enter(k *contender) bool {
	v := &visitor{l.rehearsal, k.c}
	joined := time.Now()
	var st status
	for {
		if _, _, err := v.call(l.ctx, "join", "POST", "/v1/rooms/"+l.room+"/join", k.token, nil, &st); err != nil {
			return false
		}
		// A token's expiry is in whole seconds, so a session may outlast the token that ended a bid by
		// up to one: the join then answers that admission again, and the bidder waits for its end.
		if st.State != "admitted" || st.ExpiresAt.After(k.until) {
			break
		}
		if !sleepUntil(l.ctx, time.Now().Add(100*time.Millisecond)) {
			return false
		}
	}
	if st.State == "waiting" {
		var err error
		if st, err = v.stream(l.ctx, k.token); err != nil {
			if l.ctx.Err() != nil {
				l.unserved.Add(1)
			}
			return false
		}
	}
	if st.State != "admitted" {
		l.fail("not_admitted")
		return false
	}
	l.entered.Add(1)
	l.observe("wait", time.Since(joined))
	k.admission, k.until = st.AdmissionToken, st.ExpiresAt
	return true
}

// admit adds the bidder's admission to a request of it.
func (k *contender) admit(req *http.Request) {
	if k.admission != "" {
		req.Header.Set("Rushgate-Admission", k.admission)
	}
}

// ended notes that the bidder's session ended while it bid: it joins the line again to go on.
func (l *auctionLine) ended(k *contender) {
	l.reentered.Add(1)
	k.admission = ""
}

// leave releases the bidder's slot, if it holds one, as the page does when a bidder leaves, even past
// the run's end.
func (l *auctionLine) leave(k *contender) {
	if l == nil || k.admission == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 5*time.Second)
	defer cancel()
	v := &visitor{l.rehearsal, k.c}
	_, _, _ = v.call(ctx, "release", "POST", "/v1/rooms/"+l.room+"/release", k.token, nil, nil, "not_admitted")
	k.admission = ""
}

// sum adds the line's counts and errors to the auction's report.
func (l *auctionLine) sum(rep *AuctionReport) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rep.Entered, rep.Reentered, rep.Unserved = l.entered.Load(), l.reentered.Load(), l.unserved.Load()
	for name, ds := range l.calls {
		if name == "wait" {
			rep.Wait = latency(ds)
			continue
		}
		if rep.RoomCalls == nil {
			rep.RoomCalls = map[string]Latency{}
		}
		rep.RoomCalls[name] = latency(ds)
	}
	if rep.Errors == nil {
		rep.Errors = map[string]int{}
	}
	for code, n := range l.errors {
		rep.Errors[code] += n
	}
}
