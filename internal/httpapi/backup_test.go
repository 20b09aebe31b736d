package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// withBackups has GET /v1/backup copy b.
func withBackups(b httpapi.Backups) option {
	return func(c *httpapi.Config, _ *room.Store) { c.Backups = b }
}

// backupFunc is a Backups of a test's making.
type backupFunc func(ctx context.Context, w io.Writer) error

func (f backupFunc) Backup(ctx context.Context, w io.Writer) error { return f(ctx, w) }

func (f backupFunc) Status() backup.Status { return backup.Status{} }

func (f backupFunc) Sealed() bool { return false }

// TestBackupDownload: an admin downloads the embedded backend's data directory as a tar.gz attachment
// that is never cached; others are refused.
func TestBackupDownload(t *testing.T) {
	dir := t.TempDir()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(dir, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := memstore.Open(context.Background(), db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := setup(t, withBackups(backup.New(backup.Source{Dir: dir, Record: db, Lines: b.Rooms().Save, Secrets: true}, nil)))
	e.want(e.do("GET", "/v1/backup", "", ""), http.StatusUnauthorized, "unauthorized")

	res, err := e.backup()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	h := res.Header
	if res.StatusCode != http.StatusOK || h.Get("Content-Type") != "application/gzip" || h.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(h.Get("Content-Disposition"), `attachment; filename="rushgate-backup-`) {
		t.Fatalf("backup answered %d %v", res.StatusCode, h)
	}
	got, err := backup.Check(context.Background(), res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "records.db lines.snapshot" {
		t.Errorf("backup holds %s", got)
	}
}

// TestBackupRefused: without a data directory of its own, or while another backup is taken, the call
// is refused with its code; a HEAD takes no copy; a backup that fails before its first byte is a JSON 503, and one that fails
// after it cuts the download short, so that it cannot pass for a whole one.
func TestBackupRefused(t *testing.T) {
	e := setup(t)
	e.want(e.do("GET", "/v1/backup", adminKey, ""), http.StatusConflict, "backup_unavailable")

	copies := 0
	e = setup(t, withBackups(backupFunc(func(context.Context, io.Writer) error { copies++; return nil })))
	req, _ := http.NewRequest("HEAD", e.srv.URL+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK || copies != 0 {
		t.Fatalf("HEAD: %v %v, %d copies taken", res, err, copies)
	}

	held, release := make(chan struct{}), make(chan struct{})
	b := backup.New(backup.Source{Dir: t.TempDir(), Lines: func(w io.Writer) error {
		close(held)
		<-release
		_, err := w.Write([]byte("the lines"))
		return err
	}}, nil)
	b.Wait = 100 * time.Millisecond // the second waits this long for the first, then is refused
	e = setup(t, withBackups(b))
	done := make(chan string)
	go func() {
		res, err := e.backup()
		if err != nil {
			done <- err.Error()
			return
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- fmt.Sprint(res.StatusCode, " ", err)
	}()
	<-held
	e.want(e.do("GET", "/v1/backup", adminKey, ""), http.StatusConflict, "backup_running")
	close(release)
	if got := <-done; got != "200 <nil>" {
		t.Fatalf("the first backup got %q", got)
	}

	var fail error
	var partial bool
	e = setup(t, withBackups(backupFunc(func(ctx context.Context, w io.Writer) error {
		if partial {
			_, _ = w.Write([]byte("part of an archive"))
		}
		return fail
	})))
	fail = errors.New("disk full")
	e.want(e.do("GET", "/v1/backup", adminKey, ""), http.StatusServiceUnavailable, "store_unavailable")
	partial = true
	res, err := e.backup()
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Error("a backup cut short was downloaded as if whole")
	}
}

// backup asks for a backup with the admin key.
func (e *env) backup() (*http.Response, error) {
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	return http.DefaultClient.Do(req)
}

// TestBackupsListed: GET /v1/backups says when the last backup was taken and what the schedule keeps,
// once one is kept; without a schedule it says so, and where nothing is the instance's own it is
// refused as GET /v1/backup is.
func TestBackupsListed(t *testing.T) {
	e := setup(t)
	e.want(e.do("GET", "/v1/backups", adminKey, ""), http.StatusConflict, "backup_unavailable")

	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "admin.key"), []byte("an admin key of the site"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := backup.New(backup.Source{Dir: data, Secrets: true}, nil)
	e = setup(t, withBackups(b))
	e.want(e.do("GET", "/v1/backups", "", ""), http.StatusUnauthorized, "unauthorized")
	r := e.do("GET", "/v1/backups", adminKey, "")
	e.want(r, http.StatusOK, "")
	if r.body["schedule"] != nil || r.body["last_taken_at"] != nil {
		t.Errorf("before any backup, without a schedule: %v", r.body)
	}

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Keep(ctx, backup.Schedule{Dir: dir, Every: time.Hour, Keep: 3, Log: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	var kept []any
	until(t, "a backup kept", func() bool {
		r = e.do("GET", "/v1/backups", adminKey, "")
		sched, _ := r.body["schedule"].(map[string]any)
		kept, _ = sched["kept"].([]any)
		return len(kept) == 1 && r.body["last_taken_at"] != nil // told a moment after its file is in place
	})
	sched := r.body["schedule"].(map[string]any)
	k := kept[0].(map[string]any)
	if sched["dir"] != dir || sched["every_seconds"] != 3600.0 || r.body["last_taken_at"] == nil || r.body["last_failed_at"] != nil ||
		!strings.HasPrefix(k["name"].(string), "rushgate-backup-") || k["bytes"].(float64) < 20 || k["taken_at"] == nil {
		t.Errorf("once one is kept: %v", r.body)
	}
}

// TestBackupSealedDownload: with recipients, the download is an age file, named and typed as one,
// that restores with the identity, and GET /v1/backups says backups are encrypted.
func TestBackupSealedDownload(t *testing.T) {
	id, rec, err := backup.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	to, _ := backup.ParseRecipients(rec)
	ids, _ := backup.ParseIdentities(strings.NewReader(id))
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "admin.key"), []byte("an admin key of the site"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, withBackups(backup.New(backup.Source{Dir: data, Secrets: true}, nil, to...)))
	res, err := e.backup()
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasSuffix(res.Header.Get("Content-Disposition"), `.tar.gz.age"`) || !strings.HasPrefix(string(body), "age-encryption.org/v1\n") {
		t.Fatalf("a sealed backup answered %d %v (%v), %q...", res.StatusCode, res.Header, err, body[:min(len(body), 30)])
	}
	if got, err := backup.Check(context.Background(), bytes.NewReader(body), ids...); err != nil || len(got.Files) != 1 || got.Files[0].Name != "admin.key" {
		t.Errorf("the sealed download holds %+v (%v)", got, err)
	}
	r := e.do("GET", "/v1/backups", adminKey, "")
	e.want(r, http.StatusOK, "")
	if r.body["encrypted"] != true {
		t.Errorf("GET /v1/backups: %v", r.body)
	}
}
