package auction

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rushgate/rushgate"
)

// Summary is an auction as the operator's list shows it.
type Summary struct {
	ID     string    `json:"id"`
	Config Config    `json:"config"`
	Status Status    `json:"status"`
	Price  int64     `json:"price"`
	Bids   int64     `json:"bids"`
	EndsAt time.Time `json:"ends_at"`
	Winner string    `json:"winner,omitempty"`
	// Leader and ReserveMet tell the operator who would win now, and whether that would be a sale.
	Leader     string `json:"leader,omitempty"`
	ReserveMet bool   `json:"reserve_met"`
}

// List returns up to limit auctions after the id after, in id order, and those it could not read;
// fewer only at the end of the list (see [rushgate.Page]).
func (s *Service) List(ctx context.Context, after string, limit int) (rushgate.Listed[Summary], error) {
	return rushgate.Page(ctx, after, limit, s.store.List, func(ctx context.Context, id string) (Summary, error) {
		st, err := s.store.Get(ctx, id)
		return summarize(id, st, s.clock()), err
	}, ErrNotFound)
}

// Summary returns one auction as the operator's list shows it, with its whole config.
func (s *Service) Summary(ctx context.Context, id string) (Summary, error) {
	st, err := s.store.Get(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	return summarize(id, st, s.clock()), nil
}

func summarize(id string, st State, now time.Time) Summary {
	return Summary{ID: id, Config: st.Config, Status: st.Status(now), Price: st.Price, Bids: st.Bids, EndsAt: st.EndsAt, Winner: st.Winner,
		Leader: st.Leader, ReserveMet: st.ReserveMet()}
}

// EndNow ends the auction at once: the leader wins if the reserve is met, as at a normal end.
func (s *Service) EndNow(ctx context.Context, id string) (State, error) {
	return s.reschedule(ctx, id, rushgate.ActionEnd, func(State) time.Time { return s.clock() })
}

// Extend moves the end of an auction that is not over by d.
func (s *Service) Extend(ctx context.Context, id string, d time.Duration) (State, error) {
	return s.reschedule(ctx, id, rushgate.ActionExtend, func(st State) time.Time { return st.EndsAt.Add(d) })
}

func (s *Service) reschedule(ctx context.Context, id, action string, end func(State) time.Time) (State, error) {
	before, err := s.store.Get(ctx, id)
	if err != nil {
		return State{}, err
	}
	o, err := s.store.Reschedule(ctx, id, end(before))
	if len(o.Events) > 0 {
		s.wake()
		s.publish(id)
	}
	if err != nil {
		return State{}, err
	}
	old, _ := json.Marshal(before.EndsAt)
	now, _ := json.Marshal(o.State.EndsAt)
	rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "auction", ID: id, Action: action,
		Changes: []rushgate.Change{{Field: "ends_at", Old: old, New: now}}})
	return o.State, nil
}

// Point is one second of an auction's history.
type Point struct {
	At      time.Time `json:"t"`
	Bids    float64   `json:"bids"` // per second
	Price   int64     `json:"price"`
	Bidders int64     `json:"bidders"`
}

const (
	figBids = iota
	figPrice
	figBidders
)

func entity(id string) string { return "auction:" + id }

// Sample offers every auction's figures to the history: two reads per auction, once a minute for one
// that is closed or sold (see [rushgate.Seen]). Start runs it every second; tests call it to take a
// sample when they choose.
func (s *Service) Sample(ctx context.Context) {
	now := s.clock()
	rushgate.EachID(ctx, s.store.List, func(id string) {
		if !s.seen.Due(id, now) {
			return
		}
		st, err := s.store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			s.seen.Forget(id) // deleted on another instance
		}
		if err != nil {
			return
		}
		// Closed as recorded, not by the clock: a bid in the last moment may still move the end.
		s.seen.Saw(id, summarize(id, st, now), st.Over(), now)
		if s.history == nil {
			return
		}
		n, err := s.store.Bidders(ctx, id)
		if err != nil {
			return
		}
		if err := s.history.Sample(ctx, entity(id), []int64{st.Bids, st.Price, n}); err != nil && ctx.Err() == nil {
			s.log.Warn("auction: history sample", "auction", id, "err", err)
		}
	})
}

// Latest calls fn with each auction as the sampler last read it, a second ago for one that is not
// over and up to a minute for one closed or sold, leaving out auctions over for longer than
// [rushgate.SeenKeep]: what the metrics report, at no cost to the store however many auctions there
// are.
func (s *Service) Latest(fn func(Summary)) {
	s.seen.Each(s.clock(), func(_ string, a Summary) { fn(a) })
}

// History returns the auction's points after since; ErrNotFound for an unknown auction.
func (s *Service) History(ctx context.Context, id string, since time.Time) ([]Point, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return nil, err
	}
	return rushgate.Points(ctx, s.history, entity(id), since, figBidders+1, func(prev, cur rushgate.Sample) Point {
		return Point{At: cur.At, Bids: rushgate.PerSecond(prev, cur, figBids), Price: cur.Figures[figPrice], Bidders: cur.Figures[figBidders]}
	})
}
