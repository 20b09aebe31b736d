package auction

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Domain outcomes of bidding, buying and closing.
var (
	ErrNotFound      = errors.New("auction: not found")
	ErrNotStarted    = errors.New("auction: not started")
	ErrClosed        = errors.New("auction: closed")
	ErrTooLow        = errors.New("auction: bid too low")
	ErrBuyNowGone    = errors.New("auction: buy now not available")
	ErrInvalidAmount = errors.New("auction: invalid amount")
	ErrStarted       = errors.New("auction: already has bids")
)

// FixedError refuses a change, to an auction that has bids or was sold, of a field its bids were made
// under (all but the title and the message). It is an ErrStarted.
type FixedError struct{ Field string }

func (e *FixedError) Error() string {
	return "auction: " + e.Field + " cannot change once the auction has bids (its title and message can)"
}

// Unwrap makes errors.Is(err, ErrStarted) true.
func (e *FixedError) Unwrap() error { return ErrStarted }

// TooLowError is a refused bid with the least amount that would be accepted.
type TooLowError struct{ Min int64 }

func (e *TooLowError) Error() string {
	return "auction: bid too low, minimum next bid " + strconv.FormatInt(e.Min, 10)
}

// Unwrap makes errors.Is(err, ErrTooLow) true.
func (e *TooLowError) Unwrap() error { return ErrTooLow }

// Status is where an auction is in its life.
type Status string

// The statuses.
const (
	StatusScheduled Status = "scheduled"
	StatusOpen      Status = "open"
	StatusClosed    Status = "closed"
	StatusSold      Status = "sold"
)

// Event kinds on the live feed.
const (
	EventBid      = "bid"
	EventExtended = "extended"
	EventClosed   = "closed"
	EventSold     = "sold"
	// EventUpdated tells the feed that the operator changed the title or the message, which the
	// auction's view then carries.
	EventUpdated = "updated"
)

// Event is one change of an auction, numbered by a per-auction sequence so that a client that
// reconnects can ask for exactly what it missed.
type Event struct {
	Seq  int64     `json:"seq"`
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Bidder holds the price after a bid (for a proxy answer, the leader), the buyer, or the winner.
	Bidder string `json:"bidder,omitempty"`
	// Price is the current price after the event, or the final price.
	Price int64 `json:"price"`
	// Proxy marks a bid placed by a bidder's maximum in answer to another bid.
	Proxy  bool      `json:"proxy,omitempty"`
	EndsAt time.Time `json:"ends_at"`
}

// Bid is one bidder's offer: Max is the most the bidder will pay. Exact bids at Max itself; otherwise
// the bidder's proxy bids only as much as needed, one increment at a time.
type Bid struct {
	Bidder string
	Max    int64
	Exact  bool
}

// State is an auction's full state, including the leader's secret maximum; views for the public drop
// that. Every backend stores it and runs these methods inside one atomic step.
type State struct {
	Config Config `json:"config"`
	// Price is the current price: the start price until the first bid.
	Price     int64     `json:"price"`
	Leader    string    `json:"leader,omitempty"`
	LeaderMax int64     `json:"leader_max,omitempty"`
	Bids      int64     `json:"bids"`
	EndsAt    time.Time `json:"ends_at"`
	Closed    bool      `json:"closed,omitempty"`
	Sold      bool      `json:"sold,omitempty"`
	Winner    string    `json:"winner,omitempty"`
	Final     int64     `json:"final,omitempty"`
	Seq       int64     `json:"seq"`
	// Rev is the revision of Config, new at each Put: what a bid checked against a cached config
	// names, so that the store refuses it if the config has changed since.
	Rev string `json:"-"`
}

// Rising reports an error unless evs are numbered in rising order and none past seq, as an auction's
// recorded events are (the record may miss some, of an auction deleted before they were recorded):
// what [Store.Restore] takes.
func Rising(evs []Event, seq int64) error {
	var last int64
	for _, e := range evs {
		if e.Seq <= last || e.Seq > seq {
			return fmt.Errorf("auction: event %d to restore follows %d, or passes the state's %d", e.Seq, last, seq)
		}
		last = e.Seq
	}
	return nil
}

// New returns the state of a fresh auction.
func New(cfg Config) State {
	return State{Config: cfg, Price: cfg.StartPrice, EndsAt: cfg.EndsAt}
}

// Status reports the status at now. An auction past its end counts as closed even before the close
// step has recorded its winner.
func (s *State) Status(now time.Time) Status {
	switch {
	case s.Sold:
		return StatusSold
	case s.Closed || !now.Before(s.EndsAt):
		return StatusClosed
	case now.Before(s.Config.StartsAt):
		return StatusScheduled
	default:
		return StatusOpen
	}
}

// Over reports whether the auction has ended as recorded, closed or sold: no bid, extension or sale
// can follow. (Only an operator's replacement of one that closed without bids goes on from it.)
func (s *State) Over() bool { return s.Closed || s.Sold }

// Ends reports whether the event ends the auction: its close or its sale, after which it is [State.Over].
func (e Event) Ends() bool { return e.Kind == EventClosed || e.Kind == EventSold }

// ReserveMet reports whether the current price reaches the reserve (always, without one).
func (s *State) ReserveMet() bool {
	return s.Config.ReservePrice == nil || (s.Leader != "" && s.Price >= *s.Config.ReservePrice)
}

// MinNext is the least amount a new bidder may offer.
func (s *State) MinNext() int64 {
	if s.Leader == "" {
		return s.Config.StartPrice
	}
	return s.Price + s.Config.Increment.Step(s.Price)
}

// BuyNowAvailable reports whether buy-now may be used at now.
func (s *State) BuyNowAvailable(now time.Time) bool {
	return s.Config.BuyNowPrice != nil && s.Status(now) == StatusOpen &&
		(s.Bids == 0 || (s.Config.ReservePrice != nil && !s.ReserveMet()))
}

func (s *State) event(kind string, now time.Time, bidder string, price int64, proxy bool) Event {
	s.Seq++
	return Event{Seq: s.Seq, Kind: kind, At: now.UTC(), Bidder: bidder, Price: price, Proxy: proxy, EndsAt: s.EndsAt}
}

// Amend takes an operator's new title and message, whatever the bids, closing the auction first if it
// is due. While it is open, an EventUpdated tells the live feeds. Once it is over they have ended, and
// the change is the config's alone: a word to the winner and the bidders after the end ("the winner
// has been contacted"), which the ended pages look for.
func (s *State) Amend(title, message string, now time.Time) []Event {
	evs := s.CloseIfDue(now)
	s.Config.Title, s.Config.Message = title, message
	if s.Over() {
		return evs
	}
	return []Event{s.event(EventUpdated, now, "", s.Price, false)}
}

// CloseIfDue records the end of an auction whose end time has passed: the leader wins if the reserve
// is met. It is idempotent: a second call, or one before the end, changes nothing and returns no event.
func (s *State) CloseIfDue(now time.Time) []Event {
	if s.Over() || now.Before(s.EndsAt) {
		return nil
	}
	s.Closed = true
	if s.Leader != "" && s.ReserveMet() {
		s.Winner, s.Final = s.Leader, s.Price
	}
	return []Event{s.event(EventClosed, now, s.Winner, s.Final, false)}
}

// open refuses any action outside the auction's open time, closing it first if it is due, so that a
// bid whose step runs after the end is refused whatever the closer is doing.
func (s *State) open(now time.Time) ([]Event, error) {
	evs := s.CloseIfDue(now)
	switch s.Status(now) {
	case StatusScheduled:
		return evs, ErrNotStarted
	case StatusClosed, StatusSold:
		return evs, ErrClosed
	}
	return evs, nil
}

// Bid applies a bid at now and returns the events it caused. A bidder who leads only raises their own
// maximum (never bidding against themself); a challenger above the leader's maximum takes the lead at
// one increment above it; a challenger at or below it is outbid by the leader's proxy, the earlier of
// two equal maximums winning. Every accepted bid raises the price strictly.
func (s *State) Bid(b Bid, now time.Time) ([]Event, error) {
	if b.Max < 1 || b.Max > MaxAmount || b.Bidder == "" {
		return nil, ErrInvalidAmount
	}
	evs, err := s.open(now)
	if err != nil {
		return evs, err
	}
	reserve := s.Config.ReservePrice
	if b.Bidder == s.Leader {
		if b.Max <= s.LeaderMax {
			return nil, &TooLowError{Min: s.LeaderMax + 1}
		}
		s.LeaderMax = b.Max
		if reserve != nil && s.Price < *reserve {
			if p := min(b.Max, *reserve); p > s.Price {
				s.Price = p
				evs = append(evs, s.event(EventBid, now, b.Bidder, p, true))
			}
		}
		return append(evs, s.extend(now)...), nil
	}
	if minNext := s.MinNext(); b.Max < minNext {
		return nil, &TooLowError{Min: minNext}
	}
	s.Bids++
	switch {
	case s.Leader == "":
		price := s.Config.StartPrice
		if b.Exact {
			price = b.Max
		}
		s.Leader, s.LeaderMax, s.Price = b.Bidder, b.Max, raiseToReserve(price, b.Max, reserve)
		evs = append(evs, s.event(EventBid, now, b.Bidder, s.Price, false))
	case b.Max > s.LeaderMax:
		price := min(b.Max, s.LeaderMax+s.Config.Increment.Step(s.LeaderMax))
		if b.Exact {
			price = b.Max
		}
		s.Leader, s.LeaderMax, s.Price = b.Bidder, b.Max, raiseToReserve(price, b.Max, reserve)
		evs = append(evs, s.event(EventBid, now, b.Bidder, s.Price, false))
	default: // the leader's maximum answers
		price := min(s.LeaderMax, b.Max+s.Config.Increment.Step(b.Max))
		s.Price = raiseToReserve(price, s.LeaderMax, reserve)
		evs = append(evs, s.event(EventBid, now, s.Leader, s.Price, true))
	}
	return append(evs, s.extend(now)...), nil
}

// raiseToReserve lifts a price to the reserve when the holder's maximum reaches it, as the marketplaces
// do: a maximum above a hidden reserve meets it at once.
func raiseToReserve(price, max int64, reserve *int64) int64 {
	if reserve != nil && max >= *reserve && price < *reserve {
		return *reserve
	}
	return price
}

// extend applies soft close: a bid within the window before the end moves the end to now + extend.
func (s *State) extend(now time.Time) []Event {
	sc := s.Config.SoftClose
	if sc == nil || s.EndsAt.Sub(now) > time.Duration(sc.Window) {
		return nil
	}
	if end := now.Add(time.Duration(sc.Extend)); end.After(s.EndsAt) {
		s.EndsAt = end.UTC()
		return []Event{s.event(EventExtended, now, "", s.Price, false)}
	}
	return nil
}

// Reschedule moves the end to end, or to now when end has passed, and closes the auction if that end
// is due: an operator's extension or end. ErrClosed once the auction is over.
func (s *State) Reschedule(end, now time.Time) ([]Event, error) {
	evs := s.CloseIfDue(now)
	if s.Over() {
		return evs, ErrClosed
	}
	if end.Before(now) {
		end = now
	}
	s.EndsAt = end.UTC()
	evs = append(evs, s.event(EventExtended, now, "", s.Price, false))
	return append(evs, s.CloseIfDue(now)...), nil
}

// BuyNow sells the auction to bidder at the buy-now price, once. The buyer then holds the price, as
// a leader does, so that no view names a bidder it bought out as leading a sold auction.
func (s *State) BuyNow(bidder string, now time.Time) ([]Event, error) {
	evs, err := s.open(now)
	if err != nil {
		return evs, err
	}
	if !s.BuyNowAvailable(now) {
		return nil, ErrBuyNowGone
	}
	s.Sold, s.Winner, s.Final, s.Price = true, bidder, *s.Config.BuyNowPrice, *s.Config.BuyNowPrice
	s.Leader, s.LeaderMax = bidder, s.Price
	return []Event{s.event(EventSold, now, bidder, s.Final, false)}, nil
}
