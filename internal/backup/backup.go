// Package backup writes what GET /v1/backup answers, and what --backup-dir keeps: a gzip-compressed tar
// archive of a data directory, taken while rushgate serves, whose files are a data directory to start
// from. The SQL record and the lines are copied each as of one instant (a plain copy of the record's
// file, open in exclusive mode, cannot be had while rushgate runs); every other file of the directory,
// the vault's secrets, as it is. [Backups] takes them one at a time, sealed to age recipients when
// given (seal.go), and keeps them on a schedule; [Restore] puts one back, checked before anything is
// in place.
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
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
)

// workPrefix names the working directories of backups in a data directory; Take removes what a crash
// left of one.
const workPrefix = ".backup-"

// Source is what a backup copies.
type Source struct {
	// Dir is the data directory: the backup's working files go there, and its files are copied as
	// they are unless Record or Lines copies them as of one instant.
	Dir string
	// Record, when set, is the SQL record, copied as record.File; one kept in PostgreSQL is left out
	// (PostgreSQL's own tools back it up).
	Record *record.DB
	// Lines, when set, writes the lines as of one instant, copied as memstore.LinesFile.
	Lines func(w io.Writer) error
	// Secrets says that Dir holds the vault's secrets, to be copied with the rest; on Redis they are
	// in Redis.
	Secrets bool
}

// Take writes the archive of src to w. The record is copied before the lines, so that a room created
// in between has no line in the copy rather than a line without its room. Everything that may fail but
// the writing to w is done before w's first byte; nothing of the backup is left in src.Dir.
func Take(ctx context.Context, w io.Writer, src Source) error {
	stale, _ := filepath.Glob(filepath.Join(src.Dir, workPrefix+"*"))
	for _, p := range stale {
		os.RemoveAll(p) // a data directory has one rushgate, which takes one backup at a time
	}
	work, err := os.MkdirTemp(src.Dir, workPrefix+"*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(work)
	type file struct{ name, path string } // its name in the archive, where it is read
	var files []file
	add := func(name, path string) { files = append(files, file{name, path}) }
	if src.Record != nil {
		copied := filepath.Join(work, record.File)
		switch err := src.Record.CopyTo(ctx, copied); {
		case errors.Is(err, record.ErrNotSQLite):
		case err != nil:
			return fmt.Errorf("backup: %w", err)
		default:
			add(record.File, copied)
		}
	}
	if src.Lines != nil {
		lines := filepath.Join(work, memstore.LinesFile)
		if err := writeFile(lines, src.Lines, false); err != nil {
			return fmt.Errorf("backup: the lines: %w", err)
		}
		add(memstore.LinesFile, lines)
	}
	if src.Secrets {
		entries, err := os.ReadDir(src.Dir)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		for _, e := range entries {
			if name := e.Name(); e.Type().IsRegular() && !copiedApart(name) {
				add(name, filepath.Join(src.Dir, name))
			}
		}
	}
	// Opened before anything is written: a secret replaced meanwhile is read whole, old or new, as the
	// vault renames a new one into place.
	var parts []part
	defer func() {
		for _, p := range parts {
			p.f.Close()
		}
	}()
	now := time.Now().Truncate(time.Second) // tar keeps whole seconds: a rounded-up time would be in the future
	for _, fl := range files {
		f, err := os.Open(fl.path)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(fl.path) == src.Dir {
			continue // a temporary file of the vault's, renamed since it was listed
		}
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("backup: %w", err)
		}
		parts = append(parts, part{f, &tar.Header{Typeflag: tar.TypeReg, Name: fl.name, Mode: 0o600, Size: st.Size(), ModTime: now}})
	}
	return write(w, parts)
}

// copiedApart reports whether name, in a data directory, is a file that Take copies as of one instant
// instead (the record's and its WAL, the lines' and their journal) or a temporary one.
func copiedApart(name string) bool {
	return strings.HasPrefix(name, record.File) || strings.HasPrefix(name, memstore.LinesFile) || strings.HasPrefix(name, memstore.JournalFile) ||
		strings.HasPrefix(name, workPrefix) || strings.HasSuffix(name, ".tmp")
}

// part is one file of an archive, opened, and its header.
type part struct {
	f   *os.File
	hdr *tar.Header
}

// write writes the parts into one gzip-compressed tar archive.
func write(w io.Writer, parts []part) error {
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

// writeFile creates path and has fill write it, unbuffered (the lines are gob messages, each one
// write; a restore copies in large reads), synced to the disk when sync says.
func writeFile(path string, fill func(io.Writer) error, sync bool) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil && sync {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
