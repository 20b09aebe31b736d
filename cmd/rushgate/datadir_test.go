package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mountTmpfs mounts a fresh tmpfs with the given options (e.g. "ro" or "size=512k") on a new directory
// and unmounts it when the test ends. It needs root, as CI has; elsewhere the test skips.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount tmpfs (CI runs as root): %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (run as root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestReadOnlyDataDir: serve on a read-only --data says which directory and why, instead of a bare
// SQLite error code.
func TestReadOnlyDataDir(t *testing.T) {
	dir := mountTmpfs(t, "ro,size=64k")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", dir, "--addr", freeAddr(t)}, &out, &errb)
	if err == nil {
		t.Fatal("serve started on a read-only data directory")
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "read-only file system") {
		t.Fatalf("error %q: want it to name %s and the cause", msg, dir)
	}
}

// TestDiskFull: while the embedded record cannot be written (its disk is full), a claim is refused
// with 503 and leaves nothing behind, and /healthz says why; when space returns, both recover by
// themselves. The private --metrics-addr listener serves metrics without the admin key meanwhile.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "size=4m")
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--data", dir, "--addr", addr, "--admin-key", testAdminKey,
			"--metrics-addr", metricsAddr, "--log-level", "error"}, &logs, &logs)
	}()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + addr
	waitHealthy(t, base)
	opens := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	if code, b, _ := do(t, "PUT", base+"/v1/drops/d", testAdminKey, `{"stock": 10, "opens_at": "`+opens+`"}`); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, b)
	}
	_, v, _ := do(t, "POST", base+"/v1/visitors", testAdminKey, `{"subject": "alice"}`)
	alice := v["visitor_token"].(string)

	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break // ENOSPC: the disk is full
		}
	}
	filler.Close()
	if code, b, _ := do(t, "POST", base+"/v1/drops/d/claims", alice, ""); code != 503 || errorCode(b) != "store_unavailable" {
		t.Fatalf("claim on a full disk: %d %v, want 503 store_unavailable", code, b)
	}
	code, h, _ := do(t, "GET", base+"/healthz", testAdminKey, "")
	if code != 503 || h["record"] != "failing writes" || !strings.Contains(fmt.Sprint(h["reason"]), "full") {
		t.Fatalf("/healthz on a full disk: %d %v", code, h)
	}
	if _, d, _ := do(t, "GET", base+"/v1/drops/d", "", ""); d["claimed"] != 0.0 {
		t.Fatalf("a refused claim left a trace: %v", d)
	}
	res, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "rushgate_http_request_duration_seconds") {
		t.Fatalf("--metrics-addr: %d %.200s", res.StatusCode, body)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, h, _ := do(t, "GET", base+"/healthz", "", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz after space returned: %d %v", code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, b, _ := do(t, "POST", base+"/v1/drops/d/claims", alice, ""); code != 201 {
		t.Fatalf("claim after space returned: %d %v", code, b)
	}
}
