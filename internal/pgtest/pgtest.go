// Package pgtest starts a throwaway PostgreSQL server for tests, on a free loopback port, stopped and
// removed when the test ends, and a primary with a streaming standby to fail over (StartReplicated).
// Without PostgreSQL installed the tests skip with a hint locally, and fail when CI is set. PostgreSQL
// refuses to run as root, so as root it runs as the postgres user.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// shared is the server that Database hands out databases of, started on first use.
var shared struct {
	once sync.Once
	dsn  string
	stop func()
	err  error
	n    atomic.Int64
}

// Database returns the DSN of a fresh, empty database on a server that the test binary's tests share,
// started on first use: a server costs a second or two to start, a database a few milliseconds. The
// package's TestMain calls Stop once its tests have run.
func Database(t testing.TB) string {
	t.Helper()
	bins := binDir(t)
	shared.once.Do(func() { shared.dsn, shared.stop, shared.err = start(bins) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	name := fmt.Sprintf("test_%d", shared.n.Add(1))
	db, err := sql.Open("pgx", shared.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return strings.Replace(shared.dsn, "/postgres?", "/"+name+"?", 1)
}

// Refuse makes the database of dsn, one Database handed out, refuse connections and drop the ones it
// has (refuse true), or take them again: an outage of one database, for a test of what meets it,
// while the server the other tests share stays up.
func Refuse(t testing.TB, dsn string, refuse bool) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", shared.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	stmts := []string{fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %v`, name, !refuse)}
	if refuse {
		stmts = append(stmts, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '`+name+`'`)
	}
	for _, q := range stmts {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Stop stops the shared server of Database, if a test started it; TestMain calls it after the tests.
func Stop() {
	if shared.stop != nil {
		shared.stop()
	}
}

// start runs a PostgreSQL server on a free loopback port and returns a DSN for its "postgres" database
// and the function that stops it and removes its files.
func start(bins string) (dsn string, stop func(), err error) {
	dir, err := ownedDir()
	if err != nil {
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := command(filepath.Join(bins, "initdb"), "-D", data, "-U", "rushgate", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	n, err := serve(bins, dir, data)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return n.dsn("postgres"), func() { n.stop(); os.RemoveAll(dir) }, nil
}

// ownedDir makes a temporary directory that the server may write: the postgres user's when this
// process is root.
func ownedDir() (string, error) {
	dir, err := os.MkdirTemp("", "rushgate-pg-")
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("postgres"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			_ = os.Chown(dir, uid, gid)
		}
	}
	return dir, nil
}

// node is one running PostgreSQL server.
type node struct {
	port    int
	cmd     *exec.Cmd
	logf    *os.File
	logPath string
}

// serve runs postgres on the data directory under dir on a free loopback port, its socket and log in
// dir, and waits until it takes connections.
func serve(bins, dir, data string) (*node, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n := &node{port: ln.Addr().(*net.TCPAddr).Port, logPath: filepath.Join(dir, "postgres-"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)+".log")}
	ln.Close()
	n.cmd = command(filepath.Join(bins, "postgres"), "-D", data, "-p", strconv.Itoa(n.port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	// The log goes to a file, not a buffer: a buffer takes a goroutine to fill for as long as the server
	// runs, which would outlive the shared server's tests.
	if n.logf, err = os.Create(n.logPath); err != nil {
		return nil, err
	}
	n.cmd.Stdout, n.cmd.Stderr = n.logf, n.logf
	if err := n.cmd.Start(); err != nil {
		n.logf.Close()
		return nil, err
	}
	db, _ := sql.Open("pgx", n.dsn("postgres"))
	defer db.Close()
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := os.ReadFile(n.logPath)
	n.stop()
	return nil, fmt.Errorf("postgres did not start: %s", out)
}

func (n *node) dsn(database string) string {
	return fmt.Sprintf("postgres://rushgate@127.0.0.1:%d/%s?sslmode=disable", n.port, database)
}

// stop shuts the server down fast (SIGINT) and waits for it.
func (n *node) stop() {
	if n.cmd != nil {
		_ = n.cmd.Process.Signal(syscall.SIGINT)
		_ = n.cmd.Wait()
		n.cmd = nil
		n.logf.Close()
	}
}

// kill stops the server at once (SIGKILL), as a crash would.
func (n *node) kill() {
	if n.cmd != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
		n.cmd = nil
		n.logf.Close()
	}
}
