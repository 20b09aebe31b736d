package record

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
)

// ForgetDrop removes a drop's record, its config and claims; an embedded store calls it when a drop
// without claims is deleted.
func (r *DB) ForgetDrop(ctx context.Context, id string) error {
	return r.forget(ctx, id, `DELETE FROM drop_claims WHERE drop_id = ?`, `DELETE FROM drop_claim_conflicts WHERE drop_id = ?`,
		`DELETE FROM drop_redemptions WHERE drop_id = ?`, `DELETE FROM drops WHERE id = ?`)
}

// RecordClaims writes claims of a drop in one transaction; a claim already recorded is skipped.
func (r *DB) RecordClaims(ctx context.Context, id string, claims []drop.Claim) error {
	var b Batch
	b.AddClaims(id, claims...)
	return r.Commit(ctx, &b)
}

// writeClaims writes claims of a drop in tx, many rows per statement (see writeRows).
func (r *DB) writeClaims(ctx context.Context, tx *sql.Tx, id string, claims []drop.Claim) error {
	values := func(c drop.Claim, args []any) []any {
		return append(args, id, c.Seq, c.ID, c.Visitor, c.Code, ts(c.ClaimedAt), c.Key)
	}
	return r.writeRows(ctx, tx, &claimRows, len(claims), func(i int, args []any) []any { return values(claims[i], args) },
		func(from, to int) error {
			return r.keepConflicts(ctx, tx, claimConflicts, id, to-from, func(i int) (int64, string, []any) {
				c := claims[from+i]
				return c.Seq, c.Code, values(c, nil)
			})
		})
}

// conflicts is how keepConflicts treats one kind of row: recorded selects the sequence numbers and
// fingerprints of an entity's rows numbered between two bounds, keep inserts one row into the table of
// conflicts (doing nothing if it is there), and what names the rows in the log.
type conflicts struct {
	recorded, keep, table, what, entity string
}

var (
	claimConflicts = conflicts{
		recorded: `SELECT seq, code FROM drop_claims WHERE drop_id = ? AND seq BETWEEN ? AND ?`,
		keep: `INSERT INTO drop_claim_conflicts (drop_id, seq, claim_id, visitor, code, claimed_at, idem_key)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (drop_id, seq, code) DO NOTHING`,
		table: "drop_claim_conflicts", what: "a claim", entity: "drop",
	}
	// An event's fingerprint, built alike in SQL and in writeAuction, is what happened, by whom, at which
	// price and when (to the millisecond): two events that agree on all of it are one event.
	eventConflicts = conflicts{
		recorded: `SELECT seq, kind || ' ' || bidder || ' ' || price || ' ' || at FROM auction_events
			WHERE auction_id = ? AND seq BETWEEN ? AND ?`,
		keep: `INSERT INTO auction_event_conflicts (auction_id, seq, kind, bidder, price, proxy, at, ends_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (auction_id, seq, kind, bidder, price, at) DO NOTHING`,
		table: "auction_event_conflicts", what: "an auction event", entity: "auction",
	}
)

// keepConflicts looks at the n rows of a statement that skipped some because their numbers were
// recorded already; row returns row i's number, fingerprint and values. The same row again is a
// redelivery (the outbox delivers at least once). Another row under a recorded number is a conflict:
// Redis came back behind the record (AOF everysec lost its last second) and numbered a claim or an
// event again. It was answered all the same (a claim 201, a bid accepted), so it is kept in the
// table of conflicts, and logged, for the operator to settle.
func (r *DB) keepConflicts(ctx context.Context, tx *sql.Tx, c conflicts, id string, n int, row func(i int) (int64, string, []any)) error {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range n {
		seq, _, _ := row(i)
		lo, hi = min(lo, seq), max(hi, seq)
	}
	rows, err := tx.QueryContext(ctx, r.q(c.recorded), id, lo, hi)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	recorded := map[int64]string{}
	for rows.Next() {
		var seq int64
		var fp string
		if err := rows.Scan(&seq, &fp); err != nil {
			rows.Close()
			return fmt.Errorf("record: %w", err)
		}
		recorded[seq] = fp
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	for i := range n {
		seq, fp, args := row(i)
		if was, ok := recorded[seq]; !ok || was == fp {
			continue
		}
		res, err := tx.ExecContext(ctx, r.q(c.keep), args...)
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			r.log.Error(c.what+" conflicts with a recorded one of the same number: the state store came back behind the record; kept in "+c.table,
				c.entity, id, "seq", seq)
		}
	}
	return nil
}

// ClaimConflicts returns the claims of a drop kept in drop_claim_conflicts (see keepConflicts), in
// order.
func (r *DB) ClaimConflicts(ctx context.Context, id string) ([]drop.Claim, error) {
	return r.claims(ctx, "drop_claim_conflicts", id)
}

// Claims returns the recorded claims of a drop, in order, with their idempotency keys.
func (r *DB) Claims(ctx context.Context, id string) ([]drop.Claim, error) {
	return r.claims(ctx, "drop_claims", id)
}

// claims reads the claims of a drop from table, drop_claims or drop_claim_conflicts (a constant,
// never input).
func (r *DB) claims(ctx context.Context, table, id string) ([]drop.Claim, error) {
	return queryAll(ctx, r, `SELECT seq, claim_id, visitor, code, claimed_at, idem_key FROM `+table+` WHERE drop_id = ? ORDER BY seq`,
		func(rows *sql.Rows) (drop.Claim, error) {
			var c drop.Claim
			var at string
			err := rows.Scan(&c.Seq, &c.ID, &c.Visitor, &c.Code, &at, &c.Key)
			c.ClaimedAt, _ = time.Parse(time.RFC3339Nano, at)
			return c, err
		}, id)
}

// RecordDrop writes a drop's config, so that an embedded instance resumes the drop after a restart.
func (r *DB) RecordDrop(ctx context.Context, id string, cfg drop.Config) error {
	return r.putConfig(ctx, "drops", id, cfg)
}

// SavedDrop is one drop as recorded: its config and claims.
type SavedDrop struct {
	Config drop.Config
	Claims []drop.Claim
}

// LoadDrops returns every recorded drop, for an embedded instance to resume from.
func (r *DB) LoadDrops(ctx context.Context) (map[string]SavedDrop, error) {
	cfgs, err := loadConfigs[drop.Config](ctx, r, "drops")
	if err != nil {
		return nil, err
	}
	out := make(map[string]SavedDrop, len(cfgs))
	for id, cfg := range cfgs {
		claims, err := r.Claims(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		out[id] = SavedDrop{Config: cfg, Claims: claims}
	}
	return out, nil
}
