package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// schema makes the record's tables on a new database; migrate brings one made by an earlier version
// up to it.
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
	changes TEXT NOT NULL,
	actor   TEXT NOT NULL DEFAULT ''
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
CREATE TABLE IF NOT EXISTS auction_bidders (
	auction_id TEXT NOT NULL,
	bidder     TEXT NOT NULL,
	PRIMARY KEY (auction_id, bidder)
);
CREATE TABLE IF NOT EXISTS webhooks (
	id         TEXT    PRIMARY KEY,
	type       TEXT    NOT NULL,
	payload    TEXT    NOT NULL,
	created_at TEXT    NOT NULL,
	due_ms     BIGINT  NOT NULL,
	attempts   INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	last_error TEXT    NOT NULL,
	sent_at    TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS webhooks_due ON webhooks (state, due_ms);
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
		{"audit", "actor", "TEXT NOT NULL DEFAULT ''"},
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
