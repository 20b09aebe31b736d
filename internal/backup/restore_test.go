package backup_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
)

// backedUp returns the archive of a data directory that holds a room with one visitor admitted and
// one in line, a drop with three claims and a secret.
func backedUp(t testing.TB) []byte {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, b := open(t, dir)
	cfg := room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	if err := b.Rooms().PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"first", "second"} {
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Rooms().Admit(ctx, "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Drops().Put(ctx, "d", drop.Config{Stock: 10, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := b.Drops().Claim(ctx, "d", "", fmt.Sprint("v", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Vault().Save(ctx, "visitor.secret", []byte("the visitors' secret")); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := backup.Take(ctx, &archive, backup.Source{Dir: dir, Record: db, Lines: b.Rooms().Save, Secrets: true}); err != nil {
		t.Fatal(err)
	}
	return archive.Bytes()
}

// entries returns the names in dir, sorted.
func entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRestore: a backup restored into a missing directory, or an empty one, is a data directory that
// opens with the lines, claims and secrets of the one backed up, and the restore says what it holds.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	archive := backedUp(t)
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprint("existing=", existing), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "restored")
			// with the working directory of a restore cut short by a crash
			crashed := filepath.Join(parent, ".restored.restore-123")
			if existing {
				crashed = filepath.Join(dir, ".restore-123")
			}
			if err := os.MkdirAll(crashed, 0o700); err != nil {
				t.Fatal(err)
			}
			got, err := backup.Restore(ctx, bytes.NewReader(archive), dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range got.Files {
				names = append(names, f.Name)
				st, err := os.Stat(filepath.Join(dir, f.Name))
				if err != nil || st.Size() != f.Size || st.Mode().Perm() != 0o600 {
					t.Errorf("%s restored as %v (%v), said %d bytes", f.Name, st, err, f.Size)
				}
			}
			slices.Sort(names)
			if want := []string{"lines.snapshot", "records.db", "visitor.secret"}; !slices.Equal(names, want) || !slices.Equal(entries(t, dir), want) {
				t.Errorf("restored %v, the directory holds %v", names, entries(t, dir))
			}
			if got.Record == nil || got.Record.Rooms != 1 || got.Record.Drops != 1 || got.Record.Claims != 3 || got.Record.ID == "" {
				t.Errorf("the record holds %+v", got.Record)
			}
			if got.Lines == nil || *got.Lines != (memstore.Lines{Rooms: 1, Waiting: 1, Admitted: 1}) {
				t.Errorf("the lines hold %+v", got.Lines)
			}
			if e := entries(t, parent); !slices.Equal(e, []string{"restored"}) {
				t.Errorf("the restore left %v beside it", e)
			}
			_, b := open(t, dir)
			if info, err := b.Drops().Get(ctx, "d"); err != nil || info.Claimed != 3 {
				t.Errorf("restored drop %+v %v", info, err)
			}
			if st, err := b.Rooms().Status(ctx, "r", "second"); err != nil || st.Position != 1 {
				t.Errorf("second restored at %+v %v", st, err)
			}
			if s, _ := os.ReadFile(filepath.Join(dir, "visitor.secret")); string(s) != "the visitors' secret" {
				t.Errorf("secret restored as %q", s)
			}
		})
	}
}

// tarFile is one member of a hand-made archive.
type tarFile struct {
	name string
	typ  byte
	body string
}

// archiveOf writes a gzip-compressed tar of files.
func archiveOf(t testing.TB, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Typeflag: f.typ, Mode: 0o600, Size: int64(len(f.body))}
		if f.typ != tar.TypeReg {
			h.Size, h.Linkname = 0, f.body
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, f.body); f.typ == tar.TypeReg && err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// notARecord returns a SQLite database that is not rushgate's record.
func notARecord(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE other (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestoreRefuses: an archive that is cut, damaged, or holds what no backup writes (a way out of
// the directory, a link, a record or lines that do not read) is refused with ErrArchive, and the
// directory to restore into is left as it was, missing or empty, with nothing beside it.
func TestRestoreRefuses(t *testing.T) {
	good := backedUp(t)
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	secret := tarFile{"admin.key", tar.TypeReg, "an admin key of the site"}
	// a record whose file is whole but whose pages are not: every page after the first scribbled on
	records, err := os.ReadFile(filepath.Join(restored(t, good), "records.db"))
	if err != nil {
		t.Fatal(err)
	}
	for p := 4096; p+4096 <= len(records); p += 4096 {
		copy(records[p+8:p+200], bytes.Repeat([]byte{0x5a}, 192))
	}
	// a tar's file of a gigabyte of holes, made by Python's tarfile with GNU's sparse PAX records
	holes, err := os.ReadFile("testdata/sparse.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"a file with holes":     holes,
		"not gzip":              []byte("this is not an archive"),
		"gzip of no tar":        gzipped(t, []byte("this is not a tar")),
		"cut in the middle":     good[:len(good)/2],
		"cut before its end":    good[:len(good)-4],
		"a byte flipped":        flipped,
		"no files":              archiveOf(t),
		"a way out":             archiveOf(t, secret, tarFile{"../escaped", tar.TypeReg, "x"}),
		"a path":                archiveOf(t, tarFile{"sub/file", tar.TypeReg, "x"}),
		"an absolute path":      archiveOf(t, tarFile{"/tmp/file", tar.TypeReg, "x"}),
		"a hidden name":         archiveOf(t, tarFile{".backup-1", tar.TypeReg, "x"}),
		"a link":                archiveOf(t, tarFile{"admin.key", tar.TypeSymlink, "/etc/passwd"}),
		"a directory":           archiveOf(t, tarFile{"sub", tar.TypeDir, ""}),
		"a name twice":          archiveOf(t, secret, secret),
		"a damaged record":      archiveOf(t, secret, tarFile{"records.db", tar.TypeReg, "SQLite format 3\x00 and then nothing"}),
		"a database of another": archiveOf(t, tarFile{"records.db", tar.TypeReg, notARecord(t)}),
		"scribbled pages":       archiveOf(t, tarFile{"records.db", tar.TypeReg, string(records)}),
		"damaged lines":         archiveOf(t, secret, tarFile{"lines.snapshot", tar.TypeReg, "not the lines"}),
	}
	for name, archive := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			missing := filepath.Join(parent, "missing")
			if _, err := backup.Restore(context.Background(), bytes.NewReader(archive), missing); !errors.Is(err, backup.ErrArchive) {
				t.Errorf("restored into a missing directory: %v", err)
			}
			if e := entries(t, parent); len(e) > 0 {
				t.Errorf("a refused restore left %v", e)
			}
			if _, err := backup.Restore(context.Background(), bytes.NewReader(archive), parent); !errors.Is(err, backup.ErrArchive) {
				t.Errorf("restored into an empty directory: %v", err)
			} else {
				t.Log(err)
			}
			if e := entries(t, parent); len(e) > 0 {
				t.Errorf("a refused restore left %v", e)
			}
		})
	}
}

// restored returns the directory archive restores into.
func restored(t *testing.T, archive []byte) string {
	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := backup.Restore(context.Background(), bytes.NewReader(archive), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRestoreIntoData: a restore never mixes a backup with another data directory's files.
func TestRestoreIntoData(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lines.journal"), []byte("an old journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(context.Background(), bytes.NewReader(backedUp(t)), dir); !errors.Is(err, backup.ErrNotEmpty) {
		t.Fatalf("restored into a data directory: %v", err)
	}
	if e := entries(t, dir); !slices.Equal(e, []string{"lines.journal"}) {
		t.Errorf("the directory holds %v after a refused restore", e)
	}
}

// FuzzRestore: whatever tar it is given, a restore does not panic, and either puts in place just the
// files it says, or leaves nothing at all.
func FuzzRestore(f *testing.F) {
	gz, err := gzip.NewReader(bytes.NewReader(backedUp(f)))
	if err != nil {
		f.Fatal(err)
	}
	seed, err := io.ReadAll(gz)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, tarball []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "restored")
		got, err := backup.Restore(context.Background(), bytes.NewReader(gzipped(t, tarball)), dir)
		if err != nil {
			if e := entries(t, parent); len(e) > 0 {
				t.Fatalf("refused (%v), left %v", err, e)
			}
			return
		}
		var names []string
		for _, f := range got.Files {
			names = append(names, f.Name)
		}
		slices.Sort(names)
		if e := entries(t, dir); !slices.Equal(e, names) {
			t.Fatalf("restored %v, the directory holds %v", names, e)
		}
	})
}

// TestCheck: checking a backup says what a restore would, and leaves nothing behind.
func TestCheck(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	archive := backedUp(t)
	got, err := backup.Check(context.Background(), bytes.NewReader(archive))
	if err != nil || len(got.Files) != 3 || got.Record == nil || got.Record.Claims != 3 || got.Lines == nil || got.Lines.Waiting != 1 {
		t.Errorf("checked: %+v %v", got, err)
	}
	if _, err := backup.Check(context.Background(), bytes.NewReader(archive[:len(archive)-10])); !errors.Is(err, backup.ErrArchive) {
		t.Errorf("checked a cut archive: %v", err)
	}
	if e := entries(t, tmp); len(e) > 0 {
		t.Errorf("checks left %v", e)
	}
}
