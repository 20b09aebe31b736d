package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"modernc.org/sqlite"
)

// File is the name of the SQLite record in a data directory.
const File = "records.db"

// ErrNotSQLite says that a record kept in PostgreSQL is not copied by rushgate: PostgreSQL has its own
// tools for that (pg_dump, base backups).
var ErrNotSQLite = errors.New("record: the record is in PostgreSQL; back it up with PostgreSQL's tools")

// copyStep is how many pages (of 4 KiB) one step of a copy takes before it looks whether the copy
// was given up.
const copyStep = 1024

// CopyTo writes a consistent copy of the SQLite record, as of one instant, to a new file at path
// while the record serves. The record opens its file in exclusive mode, so no other process may read
// it; this is how an operator gets a copy without stopping rushgate. The copy holds the record's one
// connection: claims and bids wait for it meanwhile (docs/benchmarks.md measures how long). A copy
// cut short by ctx or an error leaves no file at path.
func (r *DB) CopyTo(ctx context.Context, path string) (err error) {
	if r.postgres {
		return ErrNotSQLite
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("record: copy: %w", err)
	}
	f.Close() // the copy's own connection writes it; created here so that it is the operator's alone
	defer func() {
		if err != nil {
			os.Remove(path)
			os.Remove(path + "-journal")
		}
	}()
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("record: copy: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		src, ok := dc.(interface {
			NewBackup(dst string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("record: copy: the SQLite driver offers no online backup")
		}
		b, err := src.NewBackup(path)
		if err != nil {
			return fmt.Errorf("record: copy to %s: %w", path, err)
		}
		for more := true; more; {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, b.Finish())
			}
			if more, err = b.Step(copyStep); err != nil {
				return errors.Join(fmt.Errorf("record: copy to %s: %w", path, err), b.Finish())
			}
		}
		if err := b.Finish(); err != nil {
			return fmt.Errorf("record: copy to %s: %w", path, err)
		}
		return nil
	})
}

// ErrDamaged says that a file meant as a SQLite record is not one that rushgate can start from: not a
// SQLite database, one that fails SQLite's integrity check, or one without a record's tables.
var ErrDamaged = errors.New("record: not a whole SQLite record")

// Contents counts what a record holds, so that an operator restoring a copy can see it is the one
// meant before starting from it.
type Contents struct {
	ID                                     string // the record's identity, which its webhooks' ids carry
	Rooms, Drops, Claims, Auctions, Events int64
}

// Verify checks the SQLite record at path, a copy nothing else has open, and counts what it holds. It
// runs SQLite's integrity check, which reads every page: a restore runs it before putting a copy in
// place, since a damaged record would otherwise fail only later, in serve or at its first write. It
// changes nothing in the file.
func Verify(ctx context.Context, path string) (Contents, error) {
	var c Contents
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return c, fmt.Errorf("record: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	var problems []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return c, fmt.Errorf("%w: %w", ErrDamaged, err)
		}
		if p != "ok" && len(problems) < 3 {
			problems = append(problems, p)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return c, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if len(problems) > 0 {
		return c, fmt.Errorf("%w: %s", ErrDamaged, strings.Join(problems, "; "))
	}
	if err := db.QueryRowContext(ctx, `SELECT value FROM record_meta WHERE name = 'id'`).Scan(&c.ID); err != nil {
		return c, fmt.Errorf("%w: no identity: %w", ErrDamaged, err)
	}
	for _, n := range []struct {
		table string
		to    *int64
	}{{"rooms", &c.Rooms}, {"drops", &c.Drops}, {"drop_claims", &c.Claims}, {"auctions", &c.Auctions}, {"auction_events", &c.Events}} {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+n.table).Scan(n.to); err != nil {
			return c, fmt.Errorf("%w: %s: %w", ErrDamaged, n.table, err)
		}
	}
	return c, nil
}
