package record

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
)

// Record writes an auction's state and new events in one transaction. Events already recorded are
// skipped, and the first result recorded settles the auction (see writeAuction). The state (with the
// leader's secret maximum) lets an embedded instance resume after a restart.
func (r *DB) Record(ctx context.Context, id string, st auction.State, evs []auction.Event) error {
	var b Batch
	b.AddAuction(id, st, evs)
	return r.Commit(ctx, &b)
}

// Batch is writes that commit together, in one transaction with one fsync: the embedded backend's
// group commit answers every claim and bid of a batch after one Commit. The zero value is empty.
type Batch struct {
	claims   []claimWrite
	auctions []auctionWrite
	index    map[string]int // "d"+drop or "a"+auction -> its write's index
}

type claimWrite struct {
	drop   string
	claims []drop.Claim
}

type auctionWrite struct {
	id  string
	st  auction.State
	evs []auction.Event
}

// AddClaims adds claims of a drop; claims of one drop in a batch are written in one statement.
func (b *Batch) AddClaims(id string, claims ...drop.Claim) {
	if i, ok := b.at("d" + id); ok {
		b.claims[i].claims = append(b.claims[i].claims, claims...)
		return
	}
	b.index["d"+id] = len(b.claims)
	b.claims = append(b.claims, claimWrite{drop: id, claims: append([]drop.Claim(nil), claims...)})
}

// AddAuction adds an auction's state after a step and the step's events; the last state added for an
// auction is the one written.
func (b *Batch) AddAuction(id string, st auction.State, evs []auction.Event) {
	if i, ok := b.at("a" + id); ok {
		b.auctions[i].st = st
		b.auctions[i].evs = append(b.auctions[i].evs, evs...)
		return
	}
	b.index["a"+id] = len(b.auctions)
	b.auctions = append(b.auctions, auctionWrite{id: id, st: st, evs: append([]auction.Event(nil), evs...)})
}

func (b *Batch) at(key string) (int, bool) {
	if b.index == nil {
		b.index = make(map[string]int)
	}
	i, ok := b.index[key]
	return i, ok
}

// Commit writes the batch in one transaction: all of it or, on an error, none of it.
func (r *DB) Commit(ctx context.Context, b *Batch) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	return r.wrote(ctx, r.commit(ctx, b))
}

func (r *DB) commit(ctx context.Context, b *Batch) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, w := range b.claims {
		if err := r.writeClaims(ctx, tx, w.drop, w.claims); err != nil {
			return err
		}
	}
	for _, w := range b.auctions {
		if err := r.writeAuction(ctx, tx, w.id, w.st, w.evs); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// writeRows writes n rows of one table in tx, many rows per statement: a crowd's claims and bids arrive
// by the hundred, and one statement per row cost the embedded instance a tenth of its CPU under load.
// The chunks are of the prepared sizes, the largest power of two that fits first (23 rows: 16, 4, 2,
// 1). Between chunks the writer lets other goroutines run: a transaction of hundreds of rows would
// otherwise hold a one-core instance for milliseconds, which its requests' latency would show. row
// appends the values of row i to args; skipped, if set, hears of the rows from to to of a statement
// that wrote fewer than its rows (some were recorded already).
func (r *DB) writeRows(ctx context.Context, tx *sql.Tx, m *multiInsert, n int, row func(i int, args []any) []any,
	skipped func(from, to int) error) error {
	for done := 0; done < n; {
		k, size := rowsPerInsert, len(m.queries)-1
		for k > n-done {
			k, size = k/2, size-1
		}
		args := make([]any, 0, m.cols*k)
		for i := done; i < done+k; i++ {
			args = row(i, args)
		}
		wrote, err := r.execCount(ctx, tx, m.queries[size], args...)
		if err != nil {
			return err
		}
		if wrote < int64(k) && skipped != nil {
			if err := skipped(done, done+k); err != nil {
				return err
			}
		}
		if done += k; done < n {
			runtime.Gosched()
		}
	}
	return nil
}

// rowsPerInsert bounds the rows of one INSERT, a power of two (the largest of insertSizes): at 8
// parameters a row it stays far below the parameter limits of SQLite (32,766) and PostgreSQL (65,535).
const (
	insertSizes   = 8
	rowsPerInsert = 1 << (insertSizes - 1)
)

// multiInsert is an INSERT of many rows of one shape, in each of the sizes writeRows uses: queries[i]
// inserts 1<<i rows.
type multiInsert struct {
	cols    int
	queries [insertSizes]string // 1, 2, 4, ..., rowsPerInsert rows
}

// newMultiInsert builds the statements of head, then rows of cols parameters each, then tail.
func newMultiInsert(head string, cols int, tail string) multiInsert {
	m := multiInsert{cols: cols}
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	for i := range m.queries {
		m.queries[i] = head + row + strings.Repeat(", "+row, 1<<i-1) + tail
	}
	return m
}

// The multi-row statements of writeClaims and writeAuction.
var (
	claimRows = newMultiInsert(`INSERT INTO drop_claims (drop_id, seq, claim_id, visitor, code, claimed_at, idem_key) VALUES `, 7,
		` ON CONFLICT (drop_id, seq) DO NOTHING`)
	eventRows = newMultiInsert(`INSERT INTO auction_events (auction_id, seq, kind, bidder, price, proxy, at, ends_at) VALUES `, 8,
		` ON CONFLICT (auction_id, seq) DO NOTHING`)
)
