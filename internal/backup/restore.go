package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
)

// restorePrefix names the working directories of restores; a restore removes what a crash left of
// one in the directory it restores into.
const restorePrefix = ".restore-"

var (
	// ErrNotEmpty says that the directory to restore into holds files already: a restore never mixes
	// a backup with another data directory (an old journal of lines would be replayed onto the
	// backup's).
	ErrNotEmpty = errors.New("backup: the directory to restore into is not empty")
	// ErrArchive says that what was given is not a whole archive written by a backup.
	ErrArchive = errors.New("backup: not a whole rushgate backup")
)

// Restored is what a restore put in place.
type Restored struct {
	Files []File
	// Record counts what the restored SQL record holds; nil when the archive has none (the record
	// was in PostgreSQL).
	Record *record.Contents
	// Lines counts the restored places in line; nil when the archive has none (the instance ran on
	// Redis, which keeps its lines).
	Lines *memstore.Lines
}

// File is one restored file.
type File struct {
	Name string
	Size int64
}

// Restore unpacks an archive written by [Take] into dir, which must be missing or empty, so that
// rushgate serve --data dir starts from it. Every file is written and synced, the record goes through
// SQLite's integrity check and the lines are read through, all before anything appears in dir: a
// restore that fails, for a damaged or cut archive or a full disk, leaves dir as it found it. A sealed
// archive opens with one of ids; without one that does, it is refused with ErrEncrypted.
func Restore(ctx context.Context, r io.Reader, dir string, ids ...age.Identity) (Restored, error) {
	existed, err := emptyDir(dir)
	if err != nil {
		return Restored{}, err
	}
	if r, err = opened(r, ids); err != nil {
		return Restored{}, err
	}
	var work string
	if existed {
		work, err = os.MkdirTemp(dir, restorePrefix+"*")
	} else {
		beside := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+restorePrefix)
		stale, _ := filepath.Glob(beside + "*")
		for _, p := range stale {
			os.RemoveAll(p) // what a crash left of an earlier restore into dir
		}
		work, err = os.MkdirTemp(filepath.Dir(dir), filepath.Base(beside)+"*")
	}
	if err != nil {
		return Restored{}, fmt.Errorf("backup: restore: %w", err)
	}
	defer os.RemoveAll(work) // renamed away when the restore succeeds into a missing dir
	got, err := unpack(ctx, r, work, true)
	if err == nil {
		err = check(ctx, work, &got)
	}
	if err == nil {
		err = place(work, dir, existed, got.Files)
	}
	if err != nil {
		return Restored{}, err
	}
	return got, nil
}

// Check reads an archive as Restore would, into a directory of its own under the system's temporary
// one, which it removes, and says what the archive holds: a backup not yet restored is not known to
// restore, so a nightly job checks the night's. A sealed archive opens with one of ids.
func Check(ctx context.Context, r io.Reader, ids ...age.Identity) (Restored, error) {
	return checkIn(ctx, r, "", "rushgate-check-*", ids...)
}

// checkIn is Check unpacking into a new directory in parent ("": the system's temporary one), named
// by pattern as os.MkdirTemp names them: a schedule checks beside its archives, on their disk, since
// the temporary directory may be a small one in memory. What it unpacks is read, not kept: unsynced.
func checkIn(ctx context.Context, r io.Reader, parent, pattern string, ids ...age.Identity) (Restored, error) {
	r, err := opened(r, ids)
	if err != nil {
		return Restored{}, err
	}
	tmp, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return Restored{}, fmt.Errorf("backup: check: %w", err)
	}
	defer os.RemoveAll(tmp)
	got, err := unpack(ctx, r, tmp, false)
	if err == nil {
		err = check(ctx, tmp, &got)
	}
	if err != nil {
		return Restored{}, err
	}
	return got, nil
}

// emptyDir reports whether dir exists, refusing one that is not an empty directory; the working
// directory of an earlier restore cut short does not count, and is removed.
func emptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("backup: restore: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), restorePrefix) {
			return true, fmt.Errorf("%w: %s holds %s; restore into a new directory and start rushgate from that", ErrNotEmpty, dir, e.Name())
		}
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	return true, nil
}

// unpack writes the archive's files into work, each synced when sync says, refusing anything a backup
// does not write: links, directories, names with a path in them, hidden names, a name twice.
func unpack(ctx context.Context, r io.Reader, work string, sync bool) (Restored, error) {
	var got Restored
	gz, err := gzip.NewReader(r)
	if err != nil {
		return got, fmt.Errorf("%w: %w", ErrArchive, err)
	}
	tr := tar.NewReader(gz)
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return got, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return got, fmt.Errorf("%w: %w", ErrArchive, err)
		}
		name := h.Name
		switch {
		case h.Typeflag != tar.TypeReg || sparse(h):
			return got, fmt.Errorf("%w: %q is not a plain file", ErrArchive, name)
		case !plainName(name):
			return got, fmt.Errorf("%w: %q is not a file name of a data directory", ErrArchive, name)
		case seen[name]:
			return got, fmt.Errorf("%w: %q is in it twice", ErrArchive, name)
		}
		seen[name] = true
		if err := writeFile(filepath.Join(work, name), func(w io.Writer) error {
			_, err := io.Copy(w, archived{tr, name})
			return err
		}, sync); err != nil {
			if !errors.Is(err, ErrArchive) {
				err = fmt.Errorf("backup: restore: %w", err)
			}
			return got, err
		}
		got.Files = append(got.Files, File{name, h.Size})
	}
	// The tar ends before the gzip stream does: read it to its end, where the checksum of the
	// whole is checked.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return got, fmt.Errorf("%w: %w", ErrArchive, err)
	}
	if len(got.Files) == 0 {
		return got, fmt.Errorf("%w: it holds no files", ErrArchive)
	}
	return got, nil
}

// archived reads a file of the archive, telling its failures (a cut or damaged archive) from those of
// writing the file out (a full disk).
type archived struct {
	r    io.Reader
	name string
}

func (a archived) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %q: %w", ErrArchive, a.name, err)
	}
	return n, err
}

// sparse reports whether h is a file with holes, whose few bytes in the archive could stand for
// terabytes of zeros on the disk; a backup writes none.
func sparse(h *tar.Header) bool {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// plainName reports whether name is one a data directory's file may have: no directory, no way out,
// not hidden (the working files of backups and restores are).
func plainName(name string) bool {
	return name != "" && fs.ValidPath(name) && !strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".")
}

// check reads the record and the lines through, as serve would read them at its start, and counts
// what they hold into got.
func check(ctx context.Context, work string, got *Restored) error {
	for _, f := range got.Files {
		switch f.Name {
		case record.File:
			c, err := record.Verify(ctx, filepath.Join(work, f.Name))
			if err != nil {
				return fmt.Errorf("%w: %w", ErrArchive, err)
			}
			got.Record = &c
		case memstore.LinesFile:
			fl, err := os.Open(filepath.Join(work, f.Name))
			if err != nil {
				return fmt.Errorf("backup: restore: %w", err)
			}
			n, err := memstore.CheckLines(fl)
			fl.Close()
			if err != nil {
				return fmt.Errorf("%w: %w", ErrArchive, err)
			}
			got.Lines = &n
		}
	}
	return nil
}

// place puts the checked files of work into dir: a missing dir is work renamed, in one step; into an
// existing one the files move one by one, and move back out if one fails.
func place(work, dir string, existed bool, files []File) error {
	if !existed {
		if err := os.Rename(work, dir); err != nil {
			return fmt.Errorf("backup: restore: %w", err)
		}
		return syncDir(filepath.Dir(dir))
	}
	for i, f := range files {
		if err := os.Rename(filepath.Join(work, f.Name), filepath.Join(dir, f.Name)); err != nil {
			for _, moved := range files[:i] {
				os.Remove(filepath.Join(dir, moved.Name))
			}
			return fmt.Errorf("backup: restore: %w", err)
		}
	}
	return syncDir(dir)
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}
