package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
)

// Redeem implements [drop.Redemptions]: the insert that finds the code's row taken is what makes a
// redemption exactly-once, on one SQLite file or on a PostgreSQL that every instance shares.
func (r *DB) Redeem(ctx context.Context, id, code string, red drop.Redemption) (drop.Redemption, bool, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	res, err := r.db.ExecContext(ctx, r.q(`INSERT INTO drop_redemptions (drop_id, code, redeemed_at, order_ref) VALUES (?, ?, ?, ?)
		ON CONFLICT (drop_id, code) DO NOTHING`), id, code, ts(red.At), red.Order)
	if err != nil {
		return drop.Redemption{}, false, fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, r.wrote(ctx, err))
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return red, true, r.wrote(ctx, nil)
	}
	was, ok, err := r.Redeemed(ctx, id, code)
	if err == nil && !ok {
		err = fmt.Errorf("record: the redemption of a code of %s vanished", id) // a drop deleted meanwhile
	}
	return was, false, err
}

// Redeemed implements [drop.Redemptions].
func (r *DB) Redeemed(ctx context.Context, id, code string) (drop.Redemption, bool, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	var at, order string
	err := r.db.QueryRowContext(ctx, r.q(`SELECT redeemed_at, order_ref FROM drop_redemptions WHERE drop_id = ? AND code = ?`), id, code).Scan(&at, &order)
	if errors.Is(err, sql.ErrNoRows) {
		return drop.Redemption{}, false, nil
	}
	if err != nil {
		return drop.Redemption{}, false, fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return drop.Redemption{}, false, fmt.Errorf("record: a redemption of a code of %s: %w", id, err)
	}
	return drop.Redemption{At: t, Order: order}, true, nil
}

// RedeemedAmong implements [drop.Redemptions], in one query per thousand codes (the databases bound a
// statement's parameters).
func (r *DB) RedeemedAmong(ctx context.Context, id string, codes []string) (map[string]drop.Redemption, error) {
	out := make(map[string]drop.Redemption)
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	for len(codes) > 0 {
		n := min(len(codes), 1000)
		if err := r.redeemedAmong(ctx, id, codes[:n], out); err != nil {
			return nil, err
		}
		codes = codes[n:]
	}
	return out, nil
}

func (r *DB) redeemedAmong(ctx context.Context, id string, codes []string, out map[string]drop.Redemption) error {
	args := make([]any, 0, len(codes)+1)
	args = append(args, id)
	for _, c := range codes {
		args = append(args, c)
	}
	rows, err := r.db.QueryContext(ctx, r.q(`SELECT code, redeemed_at, order_ref FROM drop_redemptions WHERE drop_id = ? AND code IN (?`+
		strings.Repeat(", ?", len(codes)-1)+`)`), args...)
	if err != nil {
		return fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var code, at, order string
		if err := rows.Scan(&code, &at, &order); err != nil {
			return fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return fmt.Errorf("record: a redemption of a code of %s: %w", id, err)
		}
		out[code] = drop.Redemption{At: t, Order: order}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	return nil
}

// Unredeem implements [drop.Redemptions].
func (r *DB) Unredeem(ctx context.Context, id, code, order string) (bool, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	res, err := r.db.ExecContext(ctx, r.q(`DELETE FROM drop_redemptions WHERE drop_id = ? AND code = ? AND order_ref = ?`), id, code, order)
	if err = r.wrote(ctx, err); err != nil {
		return false, fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	return n > 0, nil
}

// CountRedeemed implements [drop.Redemptions].
func (r *DB) CountRedeemed(ctx context.Context, id string) (int, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	var n int
	if err := r.db.QueryRowContext(ctx, r.q(`SELECT COUNT(*) FROM drop_redemptions WHERE drop_id = ?`), id).Scan(&n); err != nil {
		return 0, fmt.Errorf("%w: %w", rushgate.ErrRecordUnavailable, err)
	}
	return n, nil
}
