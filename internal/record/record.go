// Package record keeps the durable record in SQL: every accepted bid and auction result, every drop
// claim, and, for the embedded backend, the config of every room, drop and auction.
// SQLite (modernc.org/sqlite, a file under the data directory) is the default, PostgreSQL (pgx) the
// production choice. Writes are idempotent, one row per event keyed by (auction, seq), so that a
// record replayed after a crash is neither lost nor doubled; the winner is settled by a conditional
// update that succeeds once.
//
// The files say what each part keeps: schema.go the tables and their migrations, batch.go the group
// commits of claims and auction steps, drops.go, auctions.go, rooms.go, redemptions.go and audit.go
// what each domain reads and writes, webhooks.go the queue of what a site's webhook is told, copy.go the copy a backup takes.
package record

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"               // registers the "sqlite" driver; its errors name the cause
)

// DB is the durable record: one SQL database, SQLite or PostgreSQL, that every backend writes to.
type DB struct {
	db       *sql.DB
	postgres bool
	ready    atomic.Pointer[opened] // nil until the database is migrated (see OpenPostgresLater)
	stop     context.CancelFunc     // ends the opening in the background, if any
	opening  sync.WaitGroup

	mu     sync.Mutex
	failed error     // the last write's failure, nil once a write succeeds
	probed time.Time // when Check last tried a write

	log *slog.Logger // hears of conflicting claims (see keepConflicts)

	webhooks atomic.Bool               // queue the events a site's webhook is told of (see QueueWebhooks)
	enabled  atomic.Int64              // when this instance turned webhooks on, Unix ms
	since    atomic.Pointer[time.Time] // when the first instance did (see webhooksSince), once read
}

// opened is what a record holds once its database is migrated: the group commit's statements (see
// exec) and the record's id (see ID).
type opened struct {
	stmts map[string]*sql.Stmt
	id    string
}

// LogTo sends what the record has to report (claims that conflict with recorded ones) to log instead
// of slog.Default().
func (r *DB) LogTo(log *slog.Logger) { r.log = log }

// Fsync says when writes to the SQLite record reach the disk (rushgate serve --fsync).
type Fsync int

const (
	// FsyncAlways commits each batch with an fsync before its claims and bids are answered.
	FsyncAlways Fsync = iota
	// FsyncEverySec answers once a batch is with the operating system and makes it durable at the
	// next checkpoint, which the embedded backend runs every second (Checkpoint): a power loss may
	// lose the last second; a crash of the process alone loses nothing answered.
	FsyncEverySec
	// FsyncNo leaves it to the operating system: a power loss may lose more than a second.
	FsyncNo
)

// ParseFsync reads always, everysec or no.
func ParseFsync(s string) (Fsync, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverySec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("record: fsync %q: want always, everysec or no", s)
}

// synchronous is SQLite's synchronous setting for each Fsync, in WAL mode.
var synchronous = [...]string{FsyncAlways: "FULL", FsyncEverySec: "NORMAL", FsyncNo: "OFF"}

// Checkpoint copies the WAL into the database file, syncing both: with FsyncEverySec, what makes the
// last second's commits durable.
func (r *DB) Checkpoint(ctx context.Context) error {
	if r.postgres {
		return nil // PostgreSQL keeps its own durability
	}
	_, err := r.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	return err
}

// OpenSQLite opens (creating) the SQLite database at path and migrates it; fsync says when its writes
// reach the disk.
func OpenSQLite(ctx context.Context, path string, fsync Fsync) (*DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=locking_mode(EXCLUSIVE)&_pragma=journal_mode(WAL)&_pragma=synchronous("+synchronous[fsync]+")&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	db.SetMaxOpenConns(1) // SQLite has one writer; one connection serialises without busy errors
	r, err := open(ctx, db, false)
	var busy *sqlite.Error
	if errors.As(err, &busy) && busy.Code()&0xff == sqliteBusy {
		return nil, fmt.Errorf("record: %s is in use by another process, most likely another rushgate with the same --data: "+
			"give each instance its own --data, and instances that share a Redis one --postgres to record into", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (database %s)", err, path)
	}
	return r, nil
}

// sqliteBusy is SQLite's primary result code for a database another connection holds locked.
const sqliteBusy = 5

// OpenPostgres connects to PostgreSQL (a postgres:// URL or key=value DSN) and migrates it.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return open(ctx, db, true)
}

func open(ctx context.Context, db *sql.DB, postgres bool) (*DB, error) {
	r := &DB{db: db, postgres: postgres, log: slog.Default()}
	o, err := r.setUp(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	r.ready.Store(o)
	return r, nil
}

// retryOpen is how often a record opened later tries its database again.
var retryOpen = 2 * time.Second

// OpenPostgresLater is OpenPostgres for the Redis backend, which serves while its record is down:
// claims and bids wait in Redis's outbox. A database that does not open (it is down, refuses
// connections) does not stop it: the record is returned unopened, fails its writes and Check, and
// opens in the background, tried again every retryOpen until it opens or Close. The log hears when it
// fails first and when it opens. A DSN that does not parse is refused at once.
func OpenPostgresLater(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r := &DB{db: db, postgres: true, log: slog.Default()}
	o, err := r.setUp(ctx)
	if err == nil {
		r.ready.Store(o)
		return r, nil
	}
	log.Warn("the SQL record does not open; claims and bids wait in Redis while it is tried again", "every", retryOpen, "err", err)
	r.failed = err
	octx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	r.opening.Go(func() {
		tick := time.NewTicker(retryOpen)
		defer tick.Stop()
		for {
			select {
			case <-octx.Done():
				return
			case <-tick.C:
			}
			o, err := r.setUp(octx)
			if err == nil {
				r.ready.Store(o) // before failed clears: Check reads failed only while ready is nil
			}
			r.mu.Lock()
			r.failed = err
			r.mu.Unlock()
			if err == nil {
				log.Info("the SQL record is open")
				return
			}
		}
	})
	return r, nil
}

// setUp migrates the database, prepares the group commit's statements and reads the record's id.
func (r *DB) setUp(ctx context.Context) (*opened, error) {
	if err := r.migrate(ctx); err != nil {
		return nil, err
	}
	stmts, err := r.prepare(ctx)
	if err != nil {
		return nil, err
	}
	id, err := r.identity(ctx)
	if err != nil {
		closeAll(stmts)
		return nil, err
	}
	return &opened{stmts: stmts, id: id}, nil
}

// errNotOpen is the failure of a write to a record that has not opened yet (see OpenPostgresLater).
var errNotOpen = errors.New("record: the database has not opened yet")

// Close stops opening the record, if it is still trying, and closes the database.
func (r *DB) Close() error {
	if r.stop != nil {
		r.stop()
		r.opening.Wait()
	}
	if o := r.ready.Load(); o != nil {
		closeAll(o.stmts)
	}
	return r.db.Close()
}

func closeAll(stmts map[string]*sql.Stmt) {
	for _, st := range stmts {
		st.Close()
	}
}

// prepare prepares the group commit's statements once: it runs the same few hundreds of times a
// second, and preparing them at each commit cost a fifth of its CPU on SQLite. It runs at open, before
// any transaction holds SQLite's one connection.
func (r *DB) prepare(ctx context.Context) (map[string]*sql.Stmt, error) {
	queries := []string{upsertAuction, upsertResult, insertWebhook}
	if r.postgres {
		queries = append(queries, claimRows.arrays, eventRows.arrays)
	} else {
		queries = append(queries, claimRows.queries[:]...)
		queries = append(queries, eventRows.queries[:]...)
	}
	stmts := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		st, err := r.db.PrepareContext(ctx, r.q(q))
		if err != nil {
			closeAll(stmts)
			return nil, fmt.Errorf("record: %w", err)
		}
		stmts[q] = st
	}
	return stmts, nil
}

// exec runs one of the statements prepare prepared in tx.
func (r *DB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := r.execCount(ctx, tx, query, args...)
	return err
}

// execCount is exec that returns how many rows the statement wrote.
func (r *DB) execCount(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	o := r.ready.Load()
	if o == nil {
		return 0, errNotOpen
	}
	st, ok := o.stmts[query]
	if !ok {
		return 0, fmt.Errorf("record: statement not prepared: %.40s", query) // a programming error, caught by every test that writes
	}
	res, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("record: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("record: %w", err)
	}
	return n, nil
}

// ErrWrites reports that the record store fails writes; claims and bids on the embedded backend are
// refused meanwhile, so /healthz says so.
var ErrWrites = errors.New("record: the record store fails writes")

// opTimeout bounds each operation on the record (see bound), and probeTimeout a health probe's write.
// A database that stalls (a network partition, a stopped server) then fails them rather than holding
// requests and recorders for as long as TCP takes to give up, and /healthz says so. The probe's bound
// is short because a health check waits for it, and balancers give up on one after a second or so.
var (
	opTimeout    = 10 * time.Second
	probeTimeout = 500 * time.Millisecond
)

// errStalled is the cause of an operation's end at its bound.
var errStalled = errors.New("record: the database did not answer in time")

// bound limits one operation on the record to d.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errStalled)
}

// wrote notes the outcome of a write for Check and returns err. A write cut short by its caller's end
// (a request that went away) says nothing about the store; one cut short by its bound does.
func (r *DB) wrote(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if !errors.Is(context.Cause(ctx), errStalled) {
			return err
		}
		err = fmt.Errorf("%w: %w", errStalled, err)
	}
	r.mu.Lock()
	r.failed = err
	r.mu.Unlock()
	return err
}

// ID names this record: made at random when the database was created, the same for every instance that
// records into it. Instances on one Redis compare theirs to find a record split between them.
func (r *DB) ID() string {
	if o := r.ready.Load(); o != nil {
		return o.id
	}
	return "" // not open yet
}

// identity reads the record's id, making it on first use.
func (r *DB) identity(ctx context.Context) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id, err := r.meta(ctx, "id", hex.EncodeToString(b[:]))
	if err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	return id, nil
}

// meta returns the record's value called name, storing first if it has none: of several instances
// racing to store theirs, every one reads the first one written.
func (r *DB) meta(ctx context.Context, name, first string) (string, error) {
	if _, err := r.db.ExecContext(ctx, r.q(`INSERT INTO record_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`),
		name, first); err != nil {
		return "", err
	}
	var v string
	err := r.db.QueryRowContext(ctx, r.q(`SELECT value FROM record_meta WHERE name = ?`), name).Scan(&v)
	return v, err
}

// Check reports whether the store takes writes: nil, unless the last write failed and a probe write,
// tried at most once a second, fails too. It wraps ErrWrites and the cause, for health checks, and
// clears once writes succeed again (the disk has room again, the database is back).
func (r *DB) Check(ctx context.Context) error {
	if r.ready.Load() == nil {
		r.mu.Lock()
		failed := r.failed
		r.mu.Unlock()
		if failed == nil {
			return fmt.Errorf("%w: %w", ErrWrites, errNotOpen)
		}
		return fmt.Errorf("%w: %w: %w", ErrWrites, errNotOpen, failed)
	}
	r.mu.Lock()
	failed, recent := r.failed, time.Since(r.probed) < time.Second
	if failed != nil && !recent {
		r.probed = time.Now()
	}
	r.mu.Unlock()
	switch {
	case failed == nil:
		return nil
	case !recent:
		ctx, cancel := bound(ctx, probeTimeout)
		defer cancel()
		_, err := r.db.ExecContext(ctx, r.q(`INSERT INTO record_health (id, checked_at) VALUES (1, ?)
			ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at`), ts(time.Now()))
		if failed = r.wrote(ctx, err); failed == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: %w", ErrWrites, failed)
}

// q rewrites ? placeholders as $1, $2... for PostgreSQL.
func (r *DB) q(query string) string {
	if !r.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// queryAll runs a read of many rows within opTimeout and returns each row as scan makes it, in
// order: the loop every list the record reads shares.
func queryAll[T any](ctx context.Context, r *DB, query string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	rows, err := r.db.QueryContext(ctx, r.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// forget runs deletes, each taking the id, in one transaction.
func (r *DB) forget(ctx context.Context, id string, stmts ...string) (err error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, r.q(q), id); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// putConfig writes cfg as JSON to the (id, config, updated_at) table, replacing what id had. table is
// a constant of this package, never input.
func (r *DB) putConfig(ctx context.Context, table, id string, cfg any) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = r.db.ExecContext(ctx, r.q(`INSERT INTO `+table+` (id, config, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`), id, string(js), ts(time.Now()))
	if err != nil {
		err = fmt.Errorf("record: %w", err)
	}
	return r.wrote(ctx, err)
}

// loadConfigs reads every config of an (id, config, updated_at) table, by id.
func loadConfigs[T any](ctx context.Context, r *DB, table string) (map[string]T, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, config FROM `+table)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer rows.Close()
	out := map[string]T{}
	for rows.Next() {
		var id, js string
		var cfg T
		err := rows.Scan(&id, &js)
		if err == nil {
			err = json.Unmarshal([]byte(js), &cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("record: %s %s: %w", table, id, err)
		}
		out[id] = cfg
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return out, nil
}
