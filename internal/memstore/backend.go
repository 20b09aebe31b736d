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
	"time"

	"github.com/rushgate/rushgate/internal/auction"
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
	// ForgetAuction removes the record of a deleted auction, which had no bids, but for its events,
	// which an auction created again under the id goes on from.
	ForgetAuction(ctx context.Context, id string) error
	// Events reads an auction's recorded events: a deleted one's, for one created again after a restart.
	Events(ctx context.Context, id string) ([]auction.Event, error)
	RecordDrop(ctx context.Context, id string, cfg drop.Config) error
	// ForgetDrop removes the record of a deleted drop, which had no claims.
	ForgetDrop(ctx context.Context, id string) error
	// AddInvites, TakeInvite, ReturnInvite and ForgetInvites keep rooms' invite codes durably, so that
	// a code is used once across any restart.
	AddInvites(ctx context.Context, room string, codes []string) (int, error)
	TakeInvite(ctx context.Context, room, code string) (bool, error)
	ReturnInvite(ctx context.Context, room, code string) error
	ForgetInvites(ctx context.Context, room string) error
}

// The files of the lines in the data directory (see journal.go), and of the history.
const (
	LinesFile   = "lines.snapshot"   // the lines as of the last compaction
	JournalFile = "lines.journal"    // the changes since
	HistoryFile = "history.snapshot" // the per-second history, as of its last save (see historyEvery)
)

// historyEvery is how often the history is saved while serving: what a crash loses of the charts.
const historyEvery = time.Minute

// Backend is the embedded backend as one value: the room, auction and drop stores, which record to one
// SQL record, and the secrets vault, all under one data directory.
type Backend struct {
	rooms    *Rooms
	auctions *Auctions
	drops    *Drops
	vault    vault.Dir
	history  *History
	spent    *Spent
	releases *Releases
	audit    *record.DB
	lines    string // the snapshot of the lines (see journal.go)
	journal  string // the journal of line changes since that snapshot
	historyF string // the saved history
	log      *slog.Logger

	j         *journal
	compactAt int64         // the journal's size that makes the writer compact it
	stop      chan struct{} // closed by Close: the journal's writer flushes and ends
	done      chan struct{} // closed when it has
}

// Open opens the embedded backend from what an earlier run kept: auctions, drops and rooms from
// records, and the lines from the snapshot and journal under dir (see journal.go), which it then
// compacts. dir also holds the vault's secrets. fsync is the policy records was opened with: line
// changes are fsync'd every journalEvery unless it is FsyncNo, and with FsyncEverySec the record is
// checkpointed as often. Close stops it.
func Open(ctx context.Context, records *record.DB, dir string, fsync record.Fsync, log *slog.Logger) (*Backend, error) {
	return open(ctx, records, dir, fsync, log, nil)
}

// open is Open on clock's time (nil: the wall clock's), which tests move.
func open(ctx context.Context, records *record.DB, dir string, fsync record.Fsync, log *slog.Logger, clock func() time.Time) (*Backend, error) {
	b := &Backend{auctions: NewAuctions(clock, records), drops: NewDrops(clock, records),
		rooms: NewRooms(Options{Clock: clock, Recorder: records}), vault: vault.Dir(dir), log: log,
		history: NewHistory(clock), spent: NewSpent(clock), audit: records,
		lines: filepath.Join(dir, LinesFile), journal: filepath.Join(dir, JournalFile), historyF: filepath.Join(dir, HistoryFile),
		j: &journal{paused: true, nosync: fsync == record.FsyncNo}, compactAt: compactAt,
		stop: make(chan struct{}), done: make(chan struct{})}
	b.rooms.journal, b.rooms.spent, b.spent.j = b.j, b.spent, b.j
	b.releases = &Releases{spent: b.spent}
	// One writer for claims and bids alike: a batch of both costs one fsync.
	commit := &committer{db: records}
	b.auctions.commit, b.drops.commit = commit, commit
	saved, err := records.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded auctions: %w", err)
	}
	for id, sv := range saved {
		b.auctions.load(id, sv.State, sv.Events, sv.Bidders)
	}
	savedDrops, err := records.LoadDrops(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded drops: %w", err)
	}
	for id, sd := range savedDrops {
		b.drops.load(id, sd.Config, sd.Claims)
	}
	savedRooms, err := records.LoadRooms(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading recorded rooms: %w", err)
	}
	for id, cfg := range savedRooms {
		b.rooms.Restore(id, cfg)
	}
	loadLines(b.rooms, b.lines, log)
	b.replay()
	// A room that follows a drop counts the drop's units left, which the journal does not keep: they
	// come back from the drop's recorded claims (none left: the link is sold out).
	for id, cfg := range savedRooms {
		if info, err := b.drops.Get(ctx, cfg.Drop); cfg.Drop != "" && err == nil {
			_ = b.rooms.SetUnits(ctx, id, cfg.Drop, info.Level())
		}
	}
	if err := b.compact(); err != nil {
		return nil, err
	}
	b.loadHistory()
	b.j.mu.Lock()
	b.j.paused = false
	b.j.mu.Unlock()
	go func() {
		defer close(b.done)
		historySaved := time.Now()
		every := func() error {
			if time.Since(historySaved) >= historyEvery {
				b.saveHistory()
				historySaved = time.Now()
			}
			var err error
			if fsync == record.FsyncEverySec {
				err = records.Checkpoint(context.Background())
			}
			if b.j.size >= b.compactAt {
				err = errors.Join(err, b.compact())
			}
			return err
		}
		var logged time.Time // a full disk fails every tick: say so every ten seconds, not four times a second
		b.j.run(b.stop, journalEvery, every, func(err error) {
			if time.Since(logged) >= 10*time.Second {
				logged = time.Now()
				log.Error("line changes or the record not synced; a crash now loses them", "err", err)
			}
		})
	}()
	return b, nil
}

// journalEvery is how often the journal is written and fsync'd: a crash loses this much of line
// changes, and the time the write takes. A quarter of the promised second leaves room for a loaded
// machine's delays (a test that killed a server under load lost a join made 1.48 s before the kill
// when the writer ran once a second). compactAt is the journal's size past which the writer compacts
// it while serving.
const (
	journalEvery = 250 * time.Millisecond
	compactAt    = 64 << 20
)

// replay applies the journal to the lines loaded from the snapshot. A torn or damaged tail is cut
// with a warning: the lines are as the last good record left them.
func (b *Backend) replay() {
	f, err := os.Open(b.journal)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		b.log.Warn("line journal not read; the lines are as the snapshot left them", "file", b.journal, "err", err)
		return
	}
	defer f.Close()
	good, err := b.rooms.replay(f)
	if err != nil {
		b.log.Warn("line journal cut after its last good record", "file", b.journal, "bytes", good, "err", err)
		return
	}
	if good > 0 {
		b.log.Info("line journal replayed", "file", b.journal, "bytes", good)
	}
}

// compact saves the lines as the snapshot of the next generation and starts an empty journal for it.
// It runs at the start, at the stop, and from the journal's writer while the lines change: the lines
// are frozen for the time it takes to copy them (no I/O), then what the old journal still lacks is
// written to it, the copy saved as the next snapshot and a new journal started, while changes buffer
// for the new one. A crash before the snapshot is saved finds the old snapshot and its complete
// journal; one between the snapshot and the new journal finds the new snapshot and ignores the old
// journal, which is of an older generation: either way it loses only what a crash loses anyway, the
// changes not yet written.
func (b *Backend) compact() error {
	var rest []byte
	snap := b.rooms.freeze(b.rooms.gen+1, func() { rest = b.j.take() })
	if err := b.j.write(rest); err != nil {
		return err
	}
	if err := replaceFile(b.lines, snap.write); err != nil {
		return fmt.Errorf("saving the lines to %s: %w", b.lines, err)
	}
	b.rooms.gen = snap.Generation
	b.log.Info("lines saved", "file", b.lines, "generation", snap.Generation)
	return b.newJournal()
}

// newJournal starts an empty journal for the rooms' current generation and makes it the one written.
func (b *Backend) newJournal() error {
	var head journal
	head.record(recHeader, b.rooms.gen)
	err := replaceFile(b.journal, func(w io.Writer) error { _, err := w.Write(head.buf); return err })
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(b.journal, os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if err != nil {
		return fmt.Errorf("starting the line journal %s: %w", b.journal, err)
	}
	b.j.fmu.Lock()
	old := b.j.f
	b.j.f, b.j.size = f, int64(len(head.buf))
	b.j.fmu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Rooms returns the room store.
func (b *Backend) Rooms() *Rooms { return b.rooms }

// Auctions returns the auction store.
func (b *Backend) Auctions() *Auctions { return b.auctions }

// Drops returns the drop store.
func (b *Backend) Drops() *Drops { return b.drops }

// Vault returns the secrets kept in the data directory.
func (b *Backend) Vault() vault.Dir { return b.vault }

// History returns the per-second samples of rooms, drops and auctions, kept in memory and saved to
// HistoryFile every minute and at Close.
func (b *Backend) History() *History { return b.history }

// Spent returns the memory of used one-time things, kept with the lines' changes in their journal
// and snapshot: a restart remembers them until they expire.
func (b *Backend) Spent() *Spent { return b.spent }

// Releases returns the admissions ended early, which the checks in front of a site refuse.
func (b *Backend) Releases() *Releases { return b.releases }

// Audit returns the log of operators' changes, kept in the record.
func (b *Backend) Audit() *record.DB { return b.audit }

// Close stops the journal's writer and compacts, so that the next start has a snapshot and nothing to
// replay. Call it once nothing uses the rooms any more.
func (b *Backend) Close() {
	close(b.stop)
	<-b.done
	if err := b.compact(); err != nil {
		b.log.Error("compacting the lines at the stop; the next start replays the journal", "err", err)
	}
	b.saveHistory()
	b.j.fmu.Lock()
	if b.j.f != nil {
		b.j.f.Close()
		b.j.f = nil
	}
	b.j.fmu.Unlock()
}

// saveHistory saves the history; a failure costs only the charts of a restart, so it is logged.
func (b *Backend) saveHistory() {
	if err := replaceFile(b.historyF, b.history.Save); err != nil {
		b.log.Warn("history not saved; a restart now starts its charts afresh", "file", b.historyF, "err", err)
	}
}

// loadHistory puts back the history of the last save. A file that cannot be read is set aside, with a
// warning, and the history starts empty.
func (b *Backend) loadHistory() {
	if _, err := loadSaved(b.historyF, b.history.Load); err != nil {
		b.log.Warn("saved history not loaded; the charts start afresh", "file", b.historyF, "err", err)
	}
}

// loadLines puts back the lines of the last snapshot. A file that cannot be read is set aside, with a
// warning, rather than keeping the instance from starting.
func loadLines(rooms *Rooms, path string, log *slog.Logger) {
	found, err := loadSaved(path, rooms.Load)
	switch {
	case err != nil:
		log.Warn("saved lines not loaded; the rooms start with empty lines", "file", path, "err", err)
	case found:
		log.Info("lines restored", "file", path)
	}
}

// loadSaved has load read the file at path, if there is one, and sets one it cannot read aside as
// path.bad, so that a damaged file never keeps the instance from starting (nor is read again at the
// next start). It reports whether there was a file, and why it was set aside.
func loadSaved(path string, load func(io.Reader) error) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = load(bufio.NewReader(f))
		f.Close()
	}
	if err != nil {
		_ = os.Rename(path, path+".bad")
	}
	return true, err
}

// replaceFile has write fill path through a temporary file, synced and renamed over it, so that a
// crash while writing leaves the old file whole, never a half-written one.
func replaceFile(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	err := writeFile(tmp, write)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
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
