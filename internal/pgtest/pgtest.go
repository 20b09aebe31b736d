// Package pgtest starts a throwaway PostgreSQL server for tests, on a free loopback port, stopped and
// removed when the test ends. Without PostgreSQL installed the tests skip with a hint locally, and fail
// when CI is set. PostgreSQL refuses to run as root, so as root it runs as the postgres user.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

func binDir(t testing.TB) string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL is required in CI: apt-get install -y postgresql")
		}
		t.Skip("PostgreSQL not installed (apt-get install -y postgresql); skipping")
	}
	return filepath.Dir(matches[len(matches)-1])
}

// command runs a PostgreSQL binary, as the postgres user when this process is root.
func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("postgres"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		}
	}
	return cmd
}

// Start runs a PostgreSQL server and returns a DSN for its "postgres" database.
func Start(t testing.TB) string {
	t.Helper()
	bins := binDir(t)
	dir, err := os.MkdirTemp("", "rushgate-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("postgres"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			_ = os.Chown(dir, uid, gid)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := command(filepath.Join(bins, "initdb"), "-D", data, "-U", "rushgate", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := command(filepath.Join(bins, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	var out bytes.Buffer
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		_ = srv.Wait()
	})
	dsn := fmt.Sprintf("postgres://rushgate@127.0.0.1:%d/postgres?sslmode=disable", port)
	db, _ := sql.Open("pgx", dsn)
	defer db.Close()
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return dsn
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("postgres did not start: %s", out.String())
	return ""
}
