package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while serve writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serveInProcess runs rushgate serve in this process on a free address, with a fresh data directory,
// the test admin key and any extra flags, and waits until it is healthy. It returns the base URL and
// the address; the test's cleanup stops it and reports the error it ended with, if any.
func serveInProcess(t testing.TB, extra ...string) (base, addr string) {
	t.Helper()
	addr = freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	args := append([]string{"serve", "--addr", addr, "--data", t.TempDir(), "--admin-key", testAdminKey, "--log-level", "warn"}, extra...)
	go func() { done <- run(ctx, args, &out, &errb) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base = "http://" + addr
	health := base // under --path-prefix, rushgate's /healthz is there (with --protect the root's is the site's)
	if i := slices.Index(extra, "--path-prefix"); i >= 0 && i+1 < len(extra) {
		health += extra[i+1]
	}
	waitHealthy(t, health)
	return base, addr
}

func waitHealthy(t testing.TB, base string) {
	for range 100 {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("server did not become healthy")
}

func TestCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "rushgate ") {
		t.Fatalf("version: %q %v", out.String(), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"help"}, &out, &errb); err != nil || !strings.Contains(out.String(), "rushgate serve") {
		t.Fatalf("help: %q %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, &out, &errb); err == nil {
		t.Fatal("unknown command accepted")
	}
	if err := run(context.Background(), nil, &out, &errb); err == nil {
		t.Fatal("no command accepted")
	}
	if err := run(context.Background(), []string{"serve", "--log-format", "xml"}, &out, &errb); err == nil {
		t.Fatal("bad --log-format accepted")
	}
	for _, bad := range [][]string{{"--rotate-keys-every", "1m"}, {"--rotate-keys-every", "-1h"}, {"--key-retention", "0s"},
		{"--admin-key", "a"}, {"--admin-key", " "}, {"--admin-key", "fifteen-chars-x"}, {"--fsync", "sometimes"},
		{"--path-prefix", "/rushgate/"}, {"--path-prefix", "rushgate"}, {"--path-prefix", "/a/../b"},
		{"--path-prefix", "/a b", "--protect", "http://127.0.0.1:1", "--room", "sale"},
		{"--backup-dir", t.TempDir(), "--backup-every", "10s"}, {"--backup-dir", t.TempDir(), "--backup-keep", "0"},
		{"--backup-dir", t.TempDir(), "--redis", "redis://127.0.0.1:1/0", "--postgres", "postgres://127.0.0.1:1/x"},
		{"--backup-recipient", "AGE-SECRET-KEY-1QQQQ"}, {"--redis-replicas", "-1", "--redis", "redis://127.0.0.1:1/0"},
		{"--redis-replica-wait", "0s", "--redis", "redis://127.0.0.1:1/0"}, {"--redis-replica-wait", "1m", "--redis", "redis://127.0.0.1:1/0"},
		{"--redis-replicas", "1"}, {"--open-paths", "/static/, favicon.ico", "--protect", "http://127.0.0.1:1", "--room", "sale"}} {
		err := run(context.Background(), append([]string{"serve", "--data", t.TempDir()}, bad...), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Fatalf("serve %v: %v, want an error naming the flag", bad, err)
		}
	}
	data := t.TempDir()
	if err := run(context.Background(), []string{"serve", "--data", data, "--backup-dir", data}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--backup-dir") {
		t.Fatalf("backups kept in the data directory: %v", err)
	}
}

// TestBlankAdminKeyFromEnvRefused: a blank RUSHGATE_ADMIN_KEY would lock the admin API out, so serve
// refuses to start with a message naming the variable.
func TestBlankAdminKeyFromEnvRefused(t *testing.T) {
	t.Setenv("RUSHGATE_ADMIN_KEY", " ")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", freeAddr(t)}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "RUSHGATE_ADMIN_KEY") || !strings.Contains(err.Error(), "blank") {
		t.Fatalf("serve with a blank RUSHGATE_ADMIN_KEY: %v, want a refusal naming it", err)
	}
}

// TestServeGeneratesAdminKeyOnce starts serve twice on one data directory: the first start prints the
// key it generated, the second reuses it silently, and the key works.
func TestServeGeneratesAdminKeyOnce(t *testing.T) {
	data := t.TempDir()
	for round := range 2 {
		addr := freeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb syncBuffer
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"serve", "--addr", addr, "--data", data}, &out, &errb) }()
		waitHealthy(t, "http://"+addr)
		key, _ := os.ReadFile(filepath.Join(data, "admin.key"))
		printed := strings.Contains(out.String(), strings.TrimSpace(string(key)))
		if printed != (round == 0) {
			t.Fatalf("round %d: key printed = %v; output %q", round, printed, out.String())
		}
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/rooms/sale", strings.NewReader(`{"capacity": 1}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("round %d: admin call with the stored key: %v %v", round, res, err)
		}
		res.Body.Close()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeDrainsStreams checks what SIGTERM does (main turns it into this context's cancellation):
// open event streams end cleanly, in-flight work finishes, and serve returns without error.
func TestServeDrainsStreams(t *testing.T) {
	addr := freeAddr(t)
	base := "http://" + addr
	t.Setenv("RUSHGATE_ADMIN_KEY", "env-admin-key-0123") // every flag reads RUSHGATE_*
	t.Setenv("RUSHGATE_ADDR", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--data", t.TempDir()}, &out, &errb) }()
	waitHealthy(t, base)
	req, _ := http.NewRequest("PUT", base+"/v1/rooms/sale", strings.NewReader(`{"capacity": 1, "paused": true}`))
	req.Header.Set("Authorization", "Bearer env-admin-key-0123")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("PUT with the key from the environment: %v %v", res, err)
	}
	res, err := http.Post(base+"/v1/rooms/sale/join", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var joined struct {
		VisitorToken string `json:"visitor_token"`
	}
	_ = json.NewDecoder(res.Body).Decode(&joined)
	res.Body.Close()
	sreq, _ := http.NewRequest("GET", base+"/v1/rooms/sale/events", nil)
	sreq.Header.Set("Authorization", "Bearer "+joined.VisitorToken)
	stream, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	cancel() // SIGTERM
	ended := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("event stream still open after drain")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after drain")
	}
	if !strings.Contains(errb.String(), `"msg":"stopped"`) {
		t.Fatalf("no clean stop logged: %s", errb.String())
	}
	if _, err := http.Get(base + "/healthz"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatal("server still answering after drain")
	}
}
