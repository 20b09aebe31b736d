package record

import (
	"context"
	"errors"
	"fmt"
	"os"

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
