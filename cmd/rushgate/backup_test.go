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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestBackupRestoresElsewhere: a backup downloaded while visitors claim, restored into a new directory
// with rushgate restore as the README says, starts a rushgate where every visitor stands where it stood,
// tokens issued before still verify, and the drop holds every claim answered before the backup was
// asked for and none that was never answered.
func TestBackupRestoresElsewhere(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, base := startEmbedded(t, bin, data)
	if code, b, _ := do(t, "PUT", base+"/v1/rooms/sale", restartKey, `{"capacity": 1, "session_ttl": "1h"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, b)
	}
	tokens := joinAll(t, base, "sale", 3)
	adm := waitAdmitted(t, base, "sale", tokens[0])
	if code, b, _ := do(t, "PUT", base+"/v1/drops/d", restartKey, fmt.Sprintf(`{"stock": 100000, "opens_at": %q}`, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, b)
	}

	// Claimers, each a visitor of its own, until the backup is in.
	var answered, sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := client.Post(base+"/v1/drops/d/claims", "application/json", nil)
				sent.Add(1)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusCreated {
					answered.Add(1)
				}
			}
		})
	}
	for answered.Load() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	before := answered.Load()
	req, _ := http.NewRequest("GET", base+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+restartKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, _ := os.Create(archive)
	_, err = io.Copy(f, res.Body)
	res.Body.Close()
	f.Close()
	close(stop)
	wg.Wait()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("backup: %d %v", res.StatusCode, err)
	}
	_, st, _ := do(t, "GET", base+"/v1/rooms/sale/status", tokens[2], "")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	t.Logf("%d claims answered before the backup, %d in all (%d sent)", before, answered.Load(), sent.Load())

	checked, err := exec.Command(bin, "restore", "--check", archive).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(checked), "checked ") {
		t.Fatalf("restore --check: %v %s", err, checked)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(bin, "restore", "--data", restored, archive).CombinedOutput()
	if err != nil {
		t.Fatalf("restore: %v %s", err, out)
	}
	t.Logf("%s", out)
	_, base = startEmbedded(t, bin, restored)
	if _, again, _ := do(t, "GET", base+"/v1/rooms/sale/status", tokens[2], ""); again["state"] != "waiting" || again["position"] != st["position"] {
		t.Errorf("the last visitor after the restore: %v, before: %v", again, st)
	}
	if code, v, _ := do(t, "POST", base+"/v1/verify", "", `{"token": "`+adm+`"}`); code != 200 || v["valid"] != true {
		t.Errorf("an admission token issued before the backup: %d %v", code, v)
	}
	code, d, _ := do(t, "GET", base+"/v1/drops/d", "", "")
	claimed, _ := d["claimed"].(float64)
	if code != 200 {
		t.Fatalf("the drop after the restore: %d %v", code, d)
	}
	if int64(claimed) < before || int64(claimed) > answered.Load() {
		t.Errorf("the restored drop holds %v claims: %d were answered before the backup, %d in all", claimed, before, answered.Load())
	}
	if _, record, _ := strings.Cut(string(checked), "\n"); !strings.Contains(string(out), record) {
		t.Errorf("the check said %q, the restore %q", checked, out)
	}
	if said := fmt.Sprintf("drops 1, claims %d,", int64(claimed)); !strings.Contains(string(out), said) ||
		!strings.Contains(string(out), "the lines: rooms 1, visitors waiting 2, admitted 1") {
		t.Errorf("the restore said %q, not %q and the lines", out, said)
	}
	if out, err := exec.Command(bin, "restore", "--data", restored, archive).CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Errorf("a restore into a data directory in use: %v %s", err, out)
	}
}

// TestScheduledBackups: with --backup-dir an instance keeps a backup there from its start, one that
// rushgate restore --check reads through, and counts it in its metrics.
func TestScheduledBackups(t *testing.T) {
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "backups")
	_, base := startEmbedded(t, bin, t.TempDir(), "--backup-dir", out, "--backup-every", "1h")
	var kept []string
	for start := time.Now(); len(kept) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no backup kept within 10 s of the start")
		}
		kept, _ = filepath.Glob(filepath.Join(out, "rushgate-backup-*.tar.gz"))
	}
	if checked, err := exec.Command(bin, "restore", "--check", kept[0]).CombinedOutput(); err != nil || !strings.Contains(string(checked), "signing-keys.json") {
		t.Fatalf("restore --check %s: %v %s", kept[0], err, checked)
	}
	// Counted once it is in place: a moment after the file appears.
	var m []byte
	for start := time.Now(); !strings.Contains(string(m), `rushgate_backups_total{outcome="taken"} 1`); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the metrics say of backups:\n%s", grepBackups(string(m)))
		}
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+restartKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		m, _ = io.ReadAll(res.Body)
		res.Body.Close()
	}
}

// TestSealedBackups: with a key from rushgate backup-key, an instance seals the backups it keeps to
// its public key, and rushgate restore opens them with the identity file alone.
func TestSealedBackups(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	identity := filepath.Join(dir, "backup.key")
	made, err := exec.Command(bin, "backup-key", "--out", identity).CombinedOutput()
	if err != nil {
		t.Fatalf("backup-key: %v %s", err, made)
	}
	recipient := regexp.MustCompile(`age1[0-9a-z]+`).FindString(string(made))
	if st, err := os.Stat(identity); err != nil || st.Mode().Perm() != 0o600 || recipient == "" {
		t.Fatalf("backup-key wrote %v (%v), said %s", st, err, made)
	}
	out := filepath.Join(dir, "backups")
	startEmbedded(t, bin, t.TempDir(), "--backup-dir", out, "--backup-recipient", recipient)
	var kept []string
	for start := time.Now(); len(kept) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no backup kept within 10 s of the start")
		}
		kept, _ = filepath.Glob(filepath.Join(out, "rushgate-backup-*"))
	}
	if !strings.HasSuffix(kept[0], ".tar.gz.age") {
		t.Fatalf("kept %v", kept)
	}
	if said, err := exec.Command(bin, "restore", "--check", kept[0]).CombinedOutput(); err == nil || !strings.Contains(string(said), "--identity FILE") {
		t.Errorf("a sealed backup checked without its identity: %v %s", err, said)
	}
	if said, err := exec.Command(bin, "restore", "--data", filepath.Join(dir, "restored"), "--identity", identity, kept[0]).CombinedOutput(); err != nil ||
		!strings.Contains(string(said), "signing-keys.json") {
		t.Errorf("a sealed backup restored with its identity: %v %s", err, said)
	}
}

// grepBackups returns the lines of metrics about backups.
func grepBackups(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if strings.Contains(l, "backup") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBackupOnRedis: an instance on Redis with its SQLite record under --data backs up that record alone
// (Redis keeps the lines and secrets); one recording into PostgreSQL has nothing of its own to copy.
func TestBackupOnRedis(t *testing.T) {
	bin := buildBinary(t)
	addr := redistest.Shared(t)
	in := startInstances(t, bin, addr, 1)[0]
	req, _ := http.NewRequest("GET", in.base+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("backup on Redis: %d", res.StatusCode)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := backup.Check(context.Background(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got.Files {
		names = append(names, f.Name)
	}
	if fmt.Sprint(names) != "[records.db]" {
		t.Errorf("a backup on Redis holds %v", names)
	}
	// Restored, it says what it lacks.
	archive := filepath.Join(t.TempDir(), "redis.tar.gz")
	if err := os.WriteFile(archive, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "restore", "--data", filepath.Join(t.TempDir(), "r"), archive).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "no lines in it: it was taken on Redis") {
		t.Errorf("restore of a backup on Redis: %v %s", err, out)
	}

	pg := startInstances(t, bin, addr, 1, "--postgres", pgtest.Database(t))[0]
	code, v, _ := do(t, "GET", pg.base+"/v1/backup", testAdminKey, "")
	if e, _ := v["error"].(map[string]any); code != http.StatusConflict || e["code"] != "backup_unavailable" {
		t.Errorf("a backup on Redis and PostgreSQL: %d %v", code, v)
	}
}
