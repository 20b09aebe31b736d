package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
)

// The statements of writeAuction. The first result recorded settles the auction: only a close without
// a winner, the end of an auction with no bids that was then replaced (its sequence goes on), gives
// way to the result of a later event.
const (
	upsertAuction = `INSERT INTO auctions (id, state, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`
	upsertResult = `INSERT INTO auction_results (auction_id, status, winner, final_price, decided_at, seq)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (auction_id) DO UPDATE SET status = excluded.status, winner = excluded.winner,
		final_price = excluded.final_price, decided_at = excluded.decided_at, seq = excluded.seq
		WHERE auction_results.winner = '' AND auction_results.seq < excluded.seq`
	insertBidder = `INSERT INTO auction_bidders (auction_id, bidder) VALUES (?, ?) ON CONFLICT DO NOTHING`
)

// writeAuction writes an auction's state and events in tx: events already recorded are skipped (one
// that conflicts is kept, see keepConflicts), and the result row is inserted once. Results are written
// after the events, in the events' order, which settles the same result as writing each with its event.
func (r *DB) writeAuction(ctx context.Context, tx *sql.Tx, id string, st auction.State, evs []auction.Event) error {
	js, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := r.exec(ctx, tx, upsertAuction, id, string(js), ts(time.Now())); err != nil {
		return err
	}
	values := func(ev auction.Event, args []any) []any {
		return append(args, id, ev.Seq, ev.Kind, ev.Bidder, ev.Price, ev.Proxy, ts(ev.At), ts(ev.EndsAt))
	}
	err = r.writeRows(ctx, tx, &eventRows, len(evs), func(i int, args []any) []any { return values(evs[i], args) },
		func(from, to int) error {
			return r.keepConflicts(ctx, tx, eventConflicts, id, to-from, func(i int) (int64, string, []any) {
				ev := evs[from+i]
				return ev.Seq, fmt.Sprintf("%s %s %d %s", ev.Kind, ev.Bidder, ev.Price, ts(ev.At)), values(ev, nil)
			})
		})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Ends() {
			status := string(auction.StatusClosed)
			if ev.Kind == auction.EventSold {
				status = string(auction.StatusSold)
			}
			// The first result recorded settles the auction (see upsertResult), and is what a site's
			// webhook is told, once.
			n, err := r.execCount(ctx, tx, upsertResult, id, status, ev.Bidder, ev.Price, ts(ev.At), ev.Seq)
			if err != nil {
				return err
			}
			if n > 0 && r.webhooks.Load() {
				if err := r.queueAuctionEnded(ctx, tx, id, status, st.Config, ev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ForgetAuction removes an auction's state from the record, so that a restart does not bring it back.
// An embedded store calls it when an auction without bids is deleted. Its events (never a bid) and its
// result (a close without a winner, which a later result replaces) stay: an auction created again under
// the id goes on from them, as a replaced one does, and as on Redis.
func (r *DB) ForgetAuction(ctx context.Context, id string) error {
	return r.forget(ctx, id, `DELETE FROM auctions WHERE id = ?`)
}

// Result is an auction's settled outcome.
type Result struct {
	Status     string
	Winner     string
	FinalPrice int64
}

// ErrNoResult means the auction has not been settled.
var ErrNoResult = errors.New("record: no result recorded")

// Result returns the settled outcome of an auction.
func (r *DB) Result(ctx context.Context, id string) (Result, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	var res Result
	err := r.db.QueryRowContext(ctx, r.q(`SELECT status, winner, final_price FROM auction_results WHERE auction_id = ?`), id).
		Scan(&res.Status, &res.Winner, &res.FinalPrice)
	if errors.Is(err, sql.ErrNoRows) {
		return res, ErrNoResult
	}
	return res, err
}

// Events returns the recorded events of an auction, in order.
func (r *DB) Events(ctx context.Context, id string) ([]auction.Event, error) {
	return r.events(ctx, "auction_events", id)
}

// EventConflicts returns the events of an auction kept in auction_event_conflicts (see
// keepConflicts), in order.
func (r *DB) EventConflicts(ctx context.Context, id string) ([]auction.Event, error) {
	return r.events(ctx, "auction_event_conflicts", id)
}

// events reads the events of an auction from table, auction_events or auction_event_conflicts (a
// constant, never input).
func (r *DB) events(ctx context.Context, table, id string) ([]auction.Event, error) {
	return queryAll(ctx, r, `SELECT seq, kind, bidder, price, proxy, at, ends_at FROM `+table+` WHERE auction_id = ? ORDER BY seq`,
		func(rows *sql.Rows) (auction.Event, error) {
			var ev auction.Event
			var at, ends string
			err := rows.Scan(&ev.Seq, &ev.Kind, &ev.Bidder, &ev.Price, &ev.Proxy, &at, &ends)
			ev.At, _ = time.Parse(time.RFC3339Nano, at)
			ev.EndsAt, _ = time.Parse(time.RFC3339Nano, ends)
			return ev, err
		}, id)
}

// Auction returns one recorded auction: its last state and its events; auction.ErrNotFound when the
// record holds none of that id.
func (r *DB) Auction(ctx context.Context, id string) (auction.State, []auction.Event, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	var js string
	err := r.db.QueryRowContext(ctx, r.q(`SELECT state FROM auctions WHERE id = ?`), id).Scan(&js)
	if errors.Is(err, sql.ErrNoRows) {
		return auction.State{}, nil, auction.ErrNotFound
	}
	if err != nil {
		return auction.State{}, nil, fmt.Errorf("record: %w", err)
	}
	var st auction.State
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		return st, nil, fmt.Errorf("record: auction %s: %w", id, err)
	}
	evs, err := r.Events(ctx, id)
	if err != nil {
		return st, nil, fmt.Errorf("record: %w", err)
	}
	return st, evs, nil
}

// Saved is one auction as recorded: its last state, its events, and the bidders no event names.
type Saved struct {
	State   auction.State
	Events  []auction.Event
	Bidders []string
}

// Load returns every recorded auction, for an embedded instance to resume from.
func (r *DB) Load(ctx context.Context) (map[string]Saved, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, state FROM auctions`)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	states := map[string]auction.State{}
	for rows.Next() {
		var id, js string
		if err := rows.Scan(&id, &js); err != nil {
			rows.Close()
			return nil, fmt.Errorf("record: %w", err)
		}
		var st auction.State
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			rows.Close()
			return nil, fmt.Errorf("record: auction %s: %w", id, err)
		}
		states[id] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	out := make(map[string]Saved, len(states))
	for id, st := range states {
		evs, err := r.Events(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		bidders, err := r.bidders(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		out[id] = Saved{State: st, Events: evs, Bidders: bidders}
	}
	return out, nil
}

// bidders reads the bidders of an auction that were recorded on their own (see Batch.AddBidder).
func (r *DB) bidders(ctx context.Context, id string) ([]string, error) {
	return queryAll(ctx, r, `SELECT bidder FROM auction_bidders WHERE auction_id = ?`, func(rows *sql.Rows) (string, error) {
		var b string
		err := rows.Scan(&b)
		return b, err
	}, id)
}
