package memstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/vault"
)

// Records is what the embedded backend's stores write before they answer, so that nothing acknowledged
// is lost with the process; the SQL record is it. A nil Records keeps no record (tests).
type Records interface {
	RecordRoom(ctx context.Context, id string, cfg room.Config) error
	ForgetRoom(ctx context.Context, id string) error
	// Commit writes the claims and auction steps of a batch in one transaction (see commit.go).
	Commit(ctx context.Context, b *record.Batch) error
	// ForgetAuction removes the record of a deleted auction, which had no bids.
	ForgetAuction(ctx context.Context, id string) error
	RecordDrop(ctx context.Context, id string, cfg drop.Config) error
	// ForgetDrop removes the record of a deleted drop, which had no claims.
	ForgetDrop(ctx context.Context, id string) error
}

// Backend is the embedded backend as one value: the room, auction and drop stores, which record to one
// SQL record, and the secrets vault, all under one data directory.
type Backend struct {
	rooms    *Rooms
	auctions *Auctions
	drops    *Drops
	vault    vault.Dir
	lines    string // the file a graceful stop saves the lines to
	log      *slog.Logger
}

// Open opens the embedded backend from what an earlier run kept: auctions, drops and rooms from
// records, and the lines that a graceful stop saved under dir. dir also holds the vault's secrets.
func Open(ctx context.Context, records *record.DB, dir string, log *slog.Logger) (*Backend, error) {
	b := &Backend{auctions: NewAuctions(nil, records), drops: NewDrops(nil, records),
		rooms: NewRooms(Options{Recorder: records}), vault: vault.Dir(dir), lines: filepath.Join(dir, "lines.snapshot"), log: log}
	// One writer for claims and bids alike: a batch of both costs one fsync.
	commit := &committer{db: records}
	b.auctions.commit, b.drops.commit = commit, commit
	saved, err := records.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded auctions: %w", err)
	}
	for id, sv := range saved {
		b.auctions.Restore(id, sv.State, sv.Events)
	}
	savedDrops, err := records.LoadDrops(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded drops: %w", err)
	}
	for id, sd := range savedDrops {
		b.drops.Restore(id, sd.Config, sd.Claims)
	}
	savedRooms, err := records.LoadRooms(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded rooms: %w", err)
	}
	for id, cfg := range savedRooms {
		b.rooms.Restore(id, cfg)
	}
	loadLines(b.rooms, b.lines, log)
	return b, nil
}

// Rooms returns the room store.
func (b *Backend) Rooms() *Rooms { return b.rooms }

// Auctions returns the auction store.
func (b *Backend) Auctions() *Auctions { return b.auctions }

// Drops returns the drop store.
func (b *Backend) Drops() *Drops { return b.drops }

// Vault returns the secrets kept in the data directory.
func (b *Backend) Vault() vault.Dir { return b.vault }

// Close saves the lines for the next start. Call it once nothing uses the rooms any more.
func (b *Backend) Close() { saveLines(b.rooms, b.lines, b.log) }

// loadLines puts back the lines a graceful shutdown saved, then removes the file: a later crash must
// not bring back lines that have moved on since. A file that cannot be read is set aside, with a
// warning, rather than keeping the instance from starting.
func loadLines(rooms *Rooms, path string, log *slog.Logger) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		err = rooms.Load(bufio.NewReader(f))
		f.Close()
	}
	if err != nil {
		log.Warn("saved lines not loaded; the rooms start with empty lines", "file", path, "err", err)
		_ = os.Rename(path, path+".bad")
		return
	}
	if err := os.Remove(path); err != nil {
		log.Warn("removing loaded lines", "file", path, "err", err)
	}
	log.Info("lines restored", "file", path)
}

// saveLines writes the lines to path for the next start, through a temporary file renamed over it, so
// that a crash while saving leaves no half-written lines to load.
func saveLines(rooms *Rooms, path string, log *slog.Logger) {
	tmp := path + ".tmp"
	err := writeFile(tmp, rooms.Save)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		log.Error("saving lines; the next start begins with empty lines", "file", path, "err", err)
		_ = os.Remove(tmp)
		return
	}
	log.Info("lines saved", "file", path)
}

// writeFile creates path and has write fill it, synced to disk before it returns.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
