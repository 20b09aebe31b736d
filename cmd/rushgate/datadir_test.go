package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
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
