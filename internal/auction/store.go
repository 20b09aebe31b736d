package auction

import (
	"context"
	"time"
)

// Outcome is the state after an atomic step and the events it appended.
type Outcome struct {
	State  State
	Events []Event
}

// Store holds auctions. Each method is one atomic step (a critical section in memory, one script in
// Redis) that applies the rules of [State] with the backend's clock and appends the resulting events to
// the auction's feed. When a step finds the auction overdue it closes it first and keeps that close
// even if the requested action is then refused, so that the close is never lost to a failed bid.
type Store interface {
	// Put creates an auction, or replaces it while it has no bids and was not sold (also once it closed
	// without bids, so that a wrong end can be corrected); ErrStarted afterwards.
	Put(ctx context.Context, id string, cfg Config) error
	// Restore is Put for an auction the store lost while the durable record kept it (Redis restarted
	// without its data): the auction is created in state st with events evs (the record's, in rising
	// order up to st.Seq, see [Rising]), and goes on from there, so that no event number is used twice.
	// The state and events are the record's already and are not recorded again. ErrStarted when the
	// auction has bids or was sold.
	Restore(ctx context.Context, id string, st State, evs []Event) error
	// Delete removes an auction that has no bids and was not sold; ErrStarted otherwise, ErrNotFound
	// when there is none.
	Delete(ctx context.Context, id string) error
	// Get returns the state, closing the auction first if it is overdue.
	Get(ctx context.Context, id string) (State, error)
	// Bid applies a bid. Refusals: ErrNotStarted, ErrClosed, *TooLowError, ErrInvalidAmount, and
	// rushgate.ErrStale when rev is not empty and no longer the revision of the auction's config (see
	// [State.Rev]): the bidder was checked against a config since replaced.
	Bid(ctx context.Context, id, rev string, b Bid) (Outcome, error)
	// BuyNow sells to bidder at the buy-now price; ErrBuyNowGone or ErrClosed when it cannot, and
	// rushgate.ErrStale as Bid.
	BuyNow(ctx context.Context, id, rev, bidder string) (Outcome, error)
	// Bidders counts the bidders whose bid or buy-now was taken, for the operator's history; 0 for an
	// auction there is not, as HasBidder.
	Bidders(ctx context.Context, id string) (int64, error)
	// HasBidder reports whether bidder is one of them; false for an auction there is not.
	HasBidder(ctx context.Context, id, bidder string) (bool, error)
	// Reschedule moves the end of an auction that is not over to end, or to now when end has passed,
	// closing it then: an operator's "extend" and "end now". The feed shows it as an extension.
	// ErrClosed when the auction is over.
	Reschedule(ctx context.Context, id string, end time.Time) (Outcome, error)
	// Amend changes the auction's title and message to cfg's, whatever its bids, if its config is still
	// of revision rev (rushgate.ErrStale otherwise), as one step that closes it first if it is due and,
	// while it is open, appends an EventUpdated for its live feeds (see [State.Amend]); its config
	// takes a new revision. Nothing else of cfg is used. On Redis the SQL record keeps the config an
	// ended auction had at its last event, which is what Redis put back after losing its data shows.
	Amend(ctx context.Context, id, rev string, cfg Config) (Outcome, error)
	// Close closes the auction if its end has passed; calling it again is harmless.
	Close(ctx context.Context, id string) (Outcome, error)
	// Due returns up to limit auctions whose end has passed but that are not closed yet, and the next
	// deadline after them (already past when more are due; zero when none), from a deadline index:
	// the closers' timer.
	Due(ctx context.Context, limit int) (ids []string, next time.Time, err error)
	// List returns up to limit auction ids after the id after, in id order: the admin's list.
	List(ctx context.Context, after string, limit int) ([]string, error)
	// Events returns up to limit events with a sequence number above after, in order.
	Events(ctx context.Context, id string, after int64, limit int) ([]Event, error)
}
