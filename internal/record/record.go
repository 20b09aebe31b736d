// Package record keeps the durable record in SQL: every accepted bid and auction result, every drop
// claim, and, for the embedded backend, the config of every room, drop and auction.
// SQLite (modernc.org/sqlite, a file under the data directory) is the default, PostgreSQL (pgx) the
// production choice. Writes are idempotent, one row per event keyed by (auction, seq), so that a
// record replayed after a crash is neither lost nor doubled; the winner is settled by a conditional
// update that succeeds once.
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
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"               // registers the "sqlite" driver; its errors name the cause

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
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
	queries := []string{upsertAuction, upsertResult}
	queries = append(queries, claimRows.queries[:]...)
	queries = append(queries, eventRows.queries[:]...)
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

// identity reads the record's id, making it on first use (two instances racing to make it keep the
// first one written).
func (r *DB) identity(ctx context.Context) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if _, err := r.db.ExecContext(ctx, r.q(`INSERT INTO record_meta (name, value) VALUES ('id', ?) ON CONFLICT (name) DO NOTHING`),
		hex.EncodeToString(b[:])); err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	var id string
	if err := r.db.QueryRowContext(ctx, `SELECT value FROM record_meta WHERE name = 'id'`).Scan(&id); err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	return id, nil
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

const schema = `
CREATE TABLE IF NOT EXISTS auctions (
	id         TEXT PRIMARY KEY,
	state      TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS auction_events (` + eventColumns + `
	PRIMARY KEY (auction_id, seq)
);
CREATE TABLE IF NOT EXISTS drops (
	id         TEXT PRIMARY KEY,
	config     TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
` + claimsTable + `
CREATE TABLE IF NOT EXISTS rooms (
	id         TEXT PRIMARY KEY,
	config     TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS record_health (
	id         INTEGER PRIMARY KEY,
	checked_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS record_meta (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS invites (
	room TEXT     NOT NULL,
	code TEXT     NOT NULL,
	used SMALLINT NOT NULL,
	PRIMARY KEY (room, code)
);
CREATE TABLE IF NOT EXISTS audit (
	seq     BIGINT PRIMARY KEY,
	at      TEXT NOT NULL,
	kind    TEXT NOT NULL,
	entity  TEXT NOT NULL,
	action  TEXT NOT NULL,
	changes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS drop_redemptions (
	drop_id     TEXT NOT NULL,
	code        TEXT NOT NULL,
	redeemed_at TEXT NOT NULL,
	order_ref   TEXT NOT NULL,
	PRIMARY KEY (drop_id, code)
);
CREATE TABLE IF NOT EXISTS drop_claim_conflicts (` + claimColumns + `
	PRIMARY KEY (drop_id, seq, code)
);
CREATE TABLE IF NOT EXISTS auction_event_conflicts (` + eventColumns + `
	PRIMARY KEY (auction_id, seq, kind, bidder, price, at)
);
CREATE TABLE IF NOT EXISTS auction_results (
	auction_id  TEXT PRIMARY KEY,
	status      TEXT   NOT NULL,
	winner      TEXT   NOT NULL,
	final_price BIGINT NOT NULL,
	decided_at  TEXT   NOT NULL,
	seq         BIGINT NOT NULL DEFAULT 0
);`

func (r *DB) migrate(ctx context.Context) error {
	for _, stmt := range strings.Split(schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := r.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("record: migrate: %w", err)
		}
	}
	// DB made by earlier versions lack these columns.
	for _, c := range []struct{ table, column, def string }{
		{"drop_claims", "idem_key", "TEXT NOT NULL DEFAULT ''"},
		{"auction_results", "seq", "BIGINT NOT NULL DEFAULT 0"},
	} {
		var probe any
		err := r.db.QueryRowContext(ctx, `SELECT `+c.column+` FROM `+c.table+` LIMIT 1`).Scan(&probe)
		if err == nil || errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if _, err := r.db.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.def); err != nil {
			return fmt.Errorf("record: migrate: adding %s.%s: %w", c.table, c.column, err)
		}
	}
	if err := r.dropCodeIndex(ctx); err != nil {
		return fmt.Errorf("record: migrate: dropping the index of claim codes: %w", err)
	}
	return nil
}

// claimsTable is the drop_claims table, also as a rebuild makes it (see dropCodeIndex).
const claimsTable = `CREATE TABLE IF NOT EXISTS drop_claims (` + claimColumns + `
	PRIMARY KEY (drop_id, seq)
);`

// claimColumns are the columns of a claim, in drop_claims and drop_claim_conflicts.
const claimColumns = `
	drop_id    TEXT   NOT NULL,
	seq        BIGINT NOT NULL,
	claim_id   TEXT   NOT NULL,
	visitor    TEXT   NOT NULL,
	code       TEXT   NOT NULL,
	claimed_at TEXT   NOT NULL,
	idem_key   TEXT   NOT NULL DEFAULT '',`

// eventColumns are the columns of an auction's event, in auction_events and auction_event_conflicts.
const eventColumns = `
	auction_id TEXT    NOT NULL,
	seq        BIGINT  NOT NULL,
	kind       TEXT    NOT NULL,
	bidder     TEXT    NOT NULL,
	price      BIGINT  NOT NULL,
	proxy      BOOLEAN NOT NULL,
	at         TEXT    NOT NULL,
	ends_at    TEXT    NOT NULL,`

// dropCodeIndex removes the unique index of claim codes that earlier versions made. Codes are random,
// so each claim wrote a random page of it: in a group commit of 25 claims it tripled the cost of a
// claim (BenchmarkRecordClaims: 52 against 17 µs). A code is unique by construction: listed codes are
// handed out by sequence, generated ones carry 80 random bits. SQLite cannot drop the index of a
// table's UNIQUE clause, so the table is rebuilt without it, in one transaction.
func (r *DB) dropCodeIndex(ctx context.Context) error {
	if r.postgres {
		_, err := r.db.ExecContext(ctx, `ALTER TABLE drop_claims DROP CONSTRAINT IF EXISTS drop_claims_drop_id_code_key`)
		return err
	}
	var table string
	if err := r.db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'drop_claims'`).Scan(&table); err != nil {
		return err
	}
	if !strings.Contains(strings.ToUpper(table), "UNIQUE") {
		return nil
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	const cols = `drop_id, seq, claim_id, visitor, code, claimed_at, idem_key`
	for _, stmt := range []string{
		`ALTER TABLE drop_claims RENAME TO drop_claims_old`,
		claimsTable,
		`INSERT INTO drop_claims (` + cols + `) SELECT ` + cols + ` FROM drop_claims_old`,
		`DROP TABLE drop_claims_old`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
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

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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
			// The first result recorded settles the auction (see upsertResult).
			if err := r.exec(ctx, tx, upsertResult, id, status, ev.Bidder, ev.Price, ts(ev.At), ev.Seq); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForgetAuction removes an auction's record: its state, events and result. An embedded store calls it
// when an auction without bids is deleted or replaced, so that the next one of that id starts afresh.
func (r *DB) ForgetAuction(ctx context.Context, id string) error {
	return r.forget(ctx, id, `DELETE FROM auction_events WHERE auction_id = ?`, `DELETE FROM auction_event_conflicts WHERE auction_id = ?`,
		`DELETE FROM auction_results WHERE auction_id = ?`, `DELETE FROM auctions WHERE id = ?`)
}

// ForgetDrop removes a drop's record, its config and claims; an embedded store calls it when a drop
// without claims is deleted.
func (r *DB) ForgetDrop(ctx context.Context, id string) error {
	return r.forget(ctx, id, `DELETE FROM drop_claims WHERE drop_id = ?`, `DELETE FROM drop_claim_conflicts WHERE drop_id = ?`,
		`DELETE FROM drop_redemptions WHERE drop_id = ?`, `DELETE FROM drops WHERE id = ?`)
}

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
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	rows, err := r.db.QueryContext(ctx, r.q(`SELECT seq, kind, bidder, price, proxy, at, ends_at FROM `+table+` WHERE auction_id = ? ORDER BY seq`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []auction.Event
	for rows.Next() {
		var ev auction.Event
		var at, ends string
		if err := rows.Scan(&ev.Seq, &ev.Kind, &ev.Bidder, &ev.Price, &ev.Proxy, &at, &ends); err != nil {
			return nil, err
		}
		ev.At, _ = time.Parse(time.RFC3339Nano, at)
		ev.EndsAt, _ = time.Parse(time.RFC3339Nano, ends)
		out = append(out, ev)
	}
	return out, rows.Err()
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

// Saved is one auction as recorded: its last state and its events.
type Saved struct {
	State  auction.State
	Events []auction.Event
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
		out[id] = Saved{State: st, Events: evs}
	}
	return out, nil
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

// Claims returns the recorded claims of a drop, in order, with their idempotency keys.
func (r *DB) Claims(ctx context.Context, id string) ([]drop.Claim, error) {
	return r.claims(ctx, "drop_claims", id)
}

// claims reads the claims of a drop from table, drop_claims or drop_claim_conflicts (a constant,
// never input).
func (r *DB) claims(ctx context.Context, table, id string) ([]drop.Claim, error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	rows, err := r.db.QueryContext(ctx, r.q(`SELECT seq, claim_id, visitor, code, claimed_at, idem_key FROM `+table+` WHERE drop_id = ? ORDER BY seq`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []drop.Claim
	for rows.Next() {
		var c drop.Claim
		var at string
		if err := rows.Scan(&c.Seq, &c.ID, &c.Visitor, &c.Code, &at, &c.Key); err != nil {
			return nil, err
		}
		c.ClaimedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// RecordDrop writes a drop's config, so that an embedded instance resumes the drop after a restart.
func (r *DB) RecordDrop(ctx context.Context, id string, cfg drop.Config) error {
	return r.putConfig(ctx, "drops", id, cfg)
}

// putConfig writes cfg as JSON to the (id, config, updated_at) table, replacing what id had. table is
// one of this file's constants, never input.
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

// RecordRoom writes a room's config, so that an embedded instance keeps its rooms across a restart.
func (r *DB) RecordRoom(ctx context.Context, id string, cfg room.Config) error {
	return r.putConfig(ctx, "rooms", id, cfg)
}

// ForgetRoom removes a deleted room's config.
func (r *DB) ForgetRoom(ctx context.Context, id string) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	if _, err := r.db.ExecContext(ctx, r.q(`DELETE FROM rooms WHERE id = ?`), id); err != nil {
		return r.wrote(ctx, fmt.Errorf("record: %w", err))
	}
	return r.wrote(ctx, nil)
}

// LoadRooms returns the config of every recorded room, for an embedded instance to resume from.
func (r *DB) LoadRooms(ctx context.Context) (map[string]room.Config, error) {
	return loadConfigs[room.Config](ctx, r, "rooms")
}
