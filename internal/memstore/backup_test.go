package memstore

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

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// unpack writes the files of a backup into dir, refusing anything but plain files named without a
// directory, and returns their names.
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
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return names
}

// TestBackupStartsAnother: a backup taken while claims go on, unpacked into an empty directory, starts
// a backend with the same lines, every claim answered before the backup began (and whole commits
// only), and the same secrets; it leaves nothing behind in the data directory, and a start removes
// what a crash left of one.
func TestBackupStartsAnother(t *testing.T) {
	dir, _, b := journalFixture(t)
	defer b.Close()
	ctx := context.Background()
	rooms := b.Rooms()
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
	want := lineOf(t, rooms, visitors)
	time.Sleep(50 * time.Millisecond) // claims under way
	var archive bytes.Buffer
	err := b.Backup(ctx, &archive)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, backupPrefix+"*")); len(left) > 0 {
		t.Errorf("the backup left %v", left)
	}

	to := t.TempDir()
	names := unpack(t, archive.Bytes(), to)
	slices.Sort(names)
	if !slices.Equal(names, []string{"lines.snapshot", "records.db", "visitor.secret"}) {
		t.Errorf("backup holds %v", names)
	}
	stale := filepath.Join(to, backupPrefix+"123")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := record.OpenSQLite(ctx, filepath.Join(to, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b2, err := Open(ctx, db, to, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	got := lineOf(t, b2.Rooms(), visitors)
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
	info, err := b2.Drops().Get(ctx, "d")
	if err != nil || info.Claimed != len(claims) {
		t.Errorf("restored drop %+v (%v) with %d claims", info, err, len(claims))
	}
	t.Logf("%d claims in the backup, %d bytes", len(claims), archive.Len())
	if secret, _ := os.ReadFile(filepath.Join(to, "visitor.secret")); string(secret) != "the visitors' secret" {
		t.Errorf("secret restored as %q", secret)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a start left a crashed backup's %s: %v", stale, err)
	}
}
