package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Replicated is a PostgreSQL primary and a standby that streams from it, for a test of the record
// through a failover of its database. Its servers stop when the test ends.
type Replicated struct {
	// DSN names both servers, the primary first, with target_session_attrs=read-write: a client
	// connects to whichever takes writes.
	DSN              string
	primary, standby *node
	bins, dir        string
}

// StartReplicated starts a primary with a database "rushgate" and a standby of it, in sync.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	r := &Replicated{bins: binDir(t)}
	var err error
	if r.dir, err = ownedDir(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []*node{r.primary, r.standby} {
			if n != nil {
				n.stop()
			}
		}
		os.RemoveAll(r.dir)
	})
	data := filepath.Join(r.dir, "primary")
	if out, err := command(filepath.Join(r.bins, "initdb"), "-D", data, "-U", "rushgate", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if r.primary, err = serve(r.bins, r.dir, data); err != nil {
		t.Fatal(err)
	}
	execSQL(t, r.primary.dsn("postgres"), "CREATE DATABASE rushgate")
	standby := filepath.Join(r.dir, "standby")
	// -R writes the standby's connection to the primary and its standby.signal.
	if out, err := command(filepath.Join(r.bins, "pg_basebackup"), "-h", "127.0.0.1", "-p", fmt.Sprint(r.primary.port), "-U", "rushgate",
		"-D", standby, "-R", "-X", "stream", "-c", "fast").CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	if r.standby, err = serve(r.bins, r.dir, standby); err != nil {
		t.Fatal(err)
	}
	r.DSN = fmt.Sprintf("postgres://rushgate@127.0.0.1:%d,127.0.0.1:%d/rushgate?sslmode=disable&target_session_attrs=read-write",
		r.primary.port, r.standby.port)
	r.waitStreaming(t)
	return r
}

// waitStreaming waits until the primary says its standby streams and has replayed all it wrote.
func (r *Replicated) waitStreaming(t testing.TB) {
	t.Helper()
	for range 300 {
		var lag *int64
		err := query(r.primary.dsn("postgres"), `SELECT (pg_current_wal_lsn() - replay_lsn)::bigint FROM pg_stat_replication`, &lag)
		if err == nil && lag != nil && *lag == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the standby did not catch up with the primary within 15s")
}

// Failover kills the primary (SIGKILL) once the standby has replayed all it wrote, and promotes the
// standby, returning once it takes writes: the standby is the primary from then on.
func (r *Replicated) Failover(t testing.TB) {
	t.Helper()
	r.waitStreaming(t)
	r.primary.kill()
	if out, err := command(filepath.Join(r.bins, "pg_ctl"), "promote", "-w", "-D", filepath.Join(r.dir, "standby")).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl promote: %v\n%s", err, out)
	}
	for range 300 {
		var recovering bool
		if err := query(r.standby.dsn("rushgate"), `SELECT pg_is_in_recovery()`, &recovering); err == nil && !recovering {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the promoted standby did not take writes within 15s")
}

// Query reads one value from the server that takes writes now.
func (r *Replicated) Query(t testing.TB, q string, into any) {
	t.Helper()
	if err := query(r.DSN, q, into); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func query(dsn, q string, into any) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.QueryRowContext(ctx, q).Scan(into)
}

func execSQL(t testing.TB, dsn, q string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
