package memstore

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
	"time"

	"github.com/rushgate/rushgate/internal/record"
)

// backupPrefix names the working directories of backups under the data directory; Open removes what a
// crash left of one.
const backupPrefix = ".backup-"

// Backup writes a copy of the data directory to w, while the backend serves, as a gzip-compressed tar
// archive whose files, unpacked into an empty directory, are a data directory to start from: the SQL
// record and the lines each as of one instant, and every other file (the vault's secrets) as it is. The
// record is copied before the lines, so that a room created in between has no line in the copy rather
// than a line without its room. Everything that may fail but the writing to w is done before w's first
// byte. A record kept in PostgreSQL is not in the copy: PostgreSQL's own tools back it up.
func (b *Backend) Backup(ctx context.Context, w io.Writer) error {
	dir := string(b.vault)
	work, err := os.MkdirTemp(dir, backupPrefix+"*")
	if err != nil {
		return fmt.Errorf("memstore: backup: %w", err)
	}
	defer os.RemoveAll(work)
	type file struct{ name, path string }
	var files []file
	copied := filepath.Join(work, record.File)
	switch err := b.audit.CopyTo(ctx, copied); {
	case errors.Is(err, record.ErrNotSQLite):
	case err != nil:
		return fmt.Errorf("memstore: backup: %w", err)
	default:
		files = append(files, file{record.File, copied})
	}
	lines := filepath.Join(work, filepath.Base(b.lines))
	if err := writeFile(lines, b.rooms.Save); err != nil {
		return fmt.Errorf("memstore: backup: %w", err)
	}
	files = append(files, file{filepath.Base(b.lines), lines})
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("memstore: backup: %w", err)
	}
	for _, e := range entries {
		if name := e.Name(); e.Type().IsRegular() && !copiedApart(name) {
			files = append(files, file{name, filepath.Join(dir, name)})
		}
	}
	// Opened before anything is written: a secret replaced meanwhile is read whole, old or new, as
	// the vault renames a new one into place.
	var parts []part
	defer func() {
		for _, p := range parts {
			p.f.Close()
		}
	}()
	for _, f := range files {
		h, err := os.Open(f.path)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(f.path) == dir {
			continue // a temporary file of the vault's, renamed since it was listed
		}
		if err != nil {
			return fmt.Errorf("memstore: backup: %w", err)
		}
		st, err := h.Stat()
		if err != nil {
			h.Close()
			return fmt.Errorf("memstore: backup: %w", err)
		}
		parts = append(parts, part{h, &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o600, Size: st.Size(), ModTime: time.Now()}})
	}
	return writeArchive(w, parts)
}

// part is one file of a backup's archive, opened, and its header.
type part struct {
	f   *os.File
	hdr *tar.Header
}

// copiedApart reports whether name, in the data directory, is one of the files Backup copies as of one
// instant instead (the record's, the lines') or a temporary one.
func copiedApart(name string) bool {
	return strings.HasPrefix(name, record.File) || strings.HasPrefix(name, "lines.") ||
		strings.HasPrefix(name, backupPrefix) || strings.HasSuffix(name, ".tmp")
}

// writeArchive writes the parts into one gzip-compressed tar archive.
func writeArchive(w io.Writer, parts []part) error {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a copy taken during an on-sale spares the CPU
	tw := tar.NewWriter(gz)
	for _, p := range parts {
		if err := tw.WriteHeader(p.hdr); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, p.f, p.hdr.Size); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close())
}

// removeBackups removes the working directories that backups cut short by a crash left in dir.
func removeBackups(dir string) {
	stale, _ := filepath.Glob(filepath.Join(dir, backupPrefix+"*"))
	for _, p := range stale {
		os.RemoveAll(p)
	}
}
