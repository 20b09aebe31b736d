package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"time"

	"github.com/rushgate/rushgate"
)

// Append implements [rushgate.Audit]: the embedded backend keeps its audit log with its records. The
// next sequence is taken in the insert itself; two racing appends on PostgreSQL collide on the key and
// the loser tries again.
func (r *DB) Append(ctx context.Context, e rushgate.Entry) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	changes, err := json.Marshal(e.Changes)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		_, err = r.db.ExecContext(ctx, r.q(`INSERT INTO audit (seq, at, kind, entity, action, changes, actor)
			SELECT COALESCE(MAX(seq), 0) + 1, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT) FROM audit`),
			ts(e.At), e.Kind, e.ID, e.Action, string(changes), e.By)
		if err == nil || try == 20 || ctx.Err() != nil {
			return err
		}
	}
}

// Entries implements [rushgate.Audit]; a cursor is the entry's sequence.
func (r *DB) Entries(ctx context.Context, f rushgate.AuditFilter, limit int) ([]rushgate.Entry, error) {
	q := `SELECT seq, at, kind, entity, action, changes, actor FROM audit WHERE seq < ?`
	top := int64(1) << 62
	if f.Before != "" {
		n, err := strconv.ParseInt(f.Before, 10, 64)
		if err != nil {
			return []rushgate.Entry{}, nil // no entry has such a cursor
		}
		top = n
	}
	args := []any{top}
	for _, c := range []struct{ column, value string }{{"kind", f.Kind}, {"entity", f.ID}, {"actor", f.By}} {
		if c.value != "" {
			q += ` AND ` + c.column + ` = ?`
			args = append(args, c.value)
		}
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	out, err := queryAll(ctx, r, q, func(rows *sql.Rows) (rushgate.Entry, error) {
		var e rushgate.Entry
		var seq int64
		var at, changes string
		err := rows.Scan(&seq, &at, &e.Kind, &e.ID, &e.Action, &changes, &e.By)
		e.Cursor = strconv.FormatInt(seq, 10)
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		_ = json.Unmarshal([]byte(changes), &e.Changes)
		if e.Changes == nil {
			e.Changes = []rushgate.Change{}
		}
		return e, err
	}, args...)
	if out == nil && err == nil {
		out = []rushgate.Entry{} // an empty page is a list, in JSON too
	}
	return out, err
}

// AddInvites records a room's invite codes, each once; it reports how many were new.
func (r *DB) AddInvites(ctx context.Context, room string, codes []string) (int, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, r.wrote(ctx, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	added := 0
	for _, c := range codes {
		res, err := tx.ExecContext(ctx, r.q(`INSERT INTO invites (room, code, used) VALUES (?, ?, 0) ON CONFLICT (room, code) DO NOTHING`), room, c)
		if err != nil {
			return 0, r.wrote(ctx, err)
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	return added, r.wrote(ctx, tx.Commit())
}

// TakeInvite marks a listed, unused code as used and reports whether it was.
func (r *DB) TakeInvite(ctx context.Context, room, code string) (bool, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	res, err := r.db.ExecContext(ctx, r.q(`UPDATE invites SET used = 1 WHERE room = ? AND code = ? AND used = 0`), room, code)
	if err != nil {
		return false, r.wrote(ctx, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, r.wrote(ctx, nil)
}

// ReturnInvite marks a code unused again.
func (r *DB) ReturnInvite(ctx context.Context, room, code string) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	_, err := r.db.ExecContext(ctx, r.q(`UPDATE invites SET used = 0 WHERE room = ? AND code = ?`), room, code)
	return r.wrote(ctx, err)
}

// ForgetInvites removes a deleted room's codes.
func (r *DB) ForgetInvites(ctx context.Context, room string) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	_, err := r.db.ExecContext(ctx, r.q(`DELETE FROM invites WHERE room = ?`), room)
	return r.wrote(ctx, err)
}
