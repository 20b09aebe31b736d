package backup_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens the embedded backend over dir as serve does, closed when the test ends.
func open(t testing.TB, dir string) (*record.DB, *memstore.Backend) {
	t.Helper()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(dir, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	b, err := memstore.Open(context.Background(), db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); db.Close() })
	return db, b
}

// unpack writes the files of an archive into dir, refusing anything but plain files named without a
// directory, and returns their names, sorted.
func unpack(t *testing.T, archive []byte, dir string) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || filepath.Base(h.Name) != h.Name || h.Mode != 0o600 {
			t.Fatalf("backup holds %q (type %c, mode %o)", h.Name, h.Typeflag, h.Mode)
		}
		if h.ModTime.Nanosecond() != 0 || h.ModTime.After(time.Now()) { // tar would warn of a time to come
			t.Errorf("%s is dated %s", h.Name, h.ModTime)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return names
}

// TestBackupStartsAnother: a backup of the embedded backend taken while claims go on, unpacked into an
// empty directory, starts a backend with the same lines, every claim answered before the backup began
// (and whole commits only), and the same secrets. It leaves nothing behind in the data directory, and
// removes what a crash left of an earlier one.
func TestBackupStartsAnother(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, b := open(t, dir)
	rooms := b.Rooms()
	cfg := room.Config{Capacity: 2, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	if err := rooms.PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	var visitors []string
	for i := range 8 {
		v := fmt.Sprintf("v%02d", i)
		visitors = append(visitors, v)
		if _, err := rooms.Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rooms.Admit(ctx, "r", 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Vault().Save(ctx, "visitor.secret", []byte("the visitors' secret")); err != nil {
		t.Fatal(err)
	}
	d := b.Drops()
	if err := d.Put(ctx, "d", drop.Config{Stock: 100000, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	claim := func(v string) {
		if _, _, err := d.Claim(ctx, "d", "", v, ""); err != nil {
			t.Error(err)
		}
	}
	for i := range 20 {
		claim(fmt.Sprint("before", i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
					claim(fmt.Sprintf("during%d.%d", w, i))
				}
			}
		})
	}
	status := func(rooms *memstore.Rooms) []room.Status {
		out := make([]room.Status, len(visitors))
		for i, v := range visitors {
			var err error
			if out[i], err = rooms.Status(ctx, "r", v); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	want := status(rooms)
	crashed := filepath.Join(dir, ".backup-123")
	if err := os.MkdirAll(crashed, 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // claims under way
	var archive bytes.Buffer
	err := backup.Take(ctx, &archive, backup.Source{Dir: dir, Record: db, Lines: rooms.Save, Secrets: true})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".backup-*")); len(left) > 0 {
		t.Errorf("the data directory holds %v after the backup", left)
	}

	to := t.TempDir()
	if names := unpack(t, archive.Bytes(), to); !slices.Equal(names, []string{"lines.snapshot", "records.db", "visitor.secret"}) {
		t.Errorf("backup holds %v", names)
	}
	_, b2 := open(t, to)
	got := status(b2.Rooms())
	for i := range want {
		if got[i].State != want[i].State || got[i].Position != want[i].Position || got[i].Admission.ID != want[i].Admission.ID {
			t.Errorf("%s restored: %+v, before: %+v", visitors[i], got[i], want[i])
		}
	}
	claims, err := b2.Drops().Claims(ctx, "d", 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for k, c := range claims {
		if c.Seq != int64(k+1) {
			t.Fatalf("claim %d restored with seq %d", k, c.Seq)
		}
		held[c.Visitor] = true
	}
	for i := range 20 {
		if !held[fmt.Sprint("before", i)] {
			t.Errorf("claim of before%d, answered before the backup, is not in it", i)
		}
	}
	if info, err := b2.Drops().Get(ctx, "d"); err != nil || info.Claimed != len(claims) {
		t.Errorf("restored drop %+v (%v) with %d claims", info, err, len(claims))
	}
	t.Logf("%d claims in the backup, %d bytes", len(claims), archive.Len())
	if secret, _ := os.ReadFile(filepath.Join(to, "visitor.secret")); string(secret) != "the visitors' secret" {
		t.Errorf("secret restored as %q", secret)
	}
}

// TestBackupOfTheRecordAlone: on Redis, whose lines and secrets Redis keeps, a backup is the SQLite
// record alone, though the data directory holds other files.
func TestBackupOfTheRecordAlone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := record.OpenSQLite(ctx, filepath.Join(dir, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.RecordClaims(ctx, "d", []drop.Claim{{ID: "d.1", Seq: 1, Code: "C1", Visitor: "v", ClaimedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin.key"), []byte("not on Redis"), 0o600); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := backup.Take(ctx, &archive, backup.Source{Dir: dir, Record: db}); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if names := unpack(t, archive.Bytes(), to); !slices.Equal(names, []string{"records.db"}) {
		t.Fatalf("backup holds %v", names)
	}
	c, err := record.OpenSQLite(ctx, filepath.Join(to, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Claims(ctx, "d"); err != nil || len(got) != 1 || got[0].Code != "C1" {
		t.Errorf("the copy's claims: %v %v", got, err)
	}
}
