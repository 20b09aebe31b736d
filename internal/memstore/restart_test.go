package memstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/storetest"
)

// TestRestartsKeepWhatWasAnswered sends the same random steps to embedded stores that keep running and
// to a backend over a data directory that is crashed or stopped, and opened again, every fifty steps
// or so (see storetest, alike.go): after each restart it must answer as the running stores do, and its
// record hold what theirs holds, so every line, admission, rate window, claim and bid it answered
// before was kept.
func TestRestartsKeepWhatWasAnswered(t *testing.T) {
	for _, c := range []struct {
		name    string
		compare func(*testing.T, uint64, storetest.Harness, storetest.Harness)
	}{{"rooms", storetest.CompareRooms}, {"auctions", storetest.CompareAuctions}, {"drops", storetest.CompareDrops}} {
		t.Run(c.name, func(t *testing.T) {
			for _, seed := range storetest.Seeds(t, 3) {
				t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
					start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
					clock := storetest.NewClock(start)
					rec := sqlite(t)
					running := storetest.Harness{Name: "running", Rooms: memstore.NewRooms(memstore.Options{Clock: clock.Now, Recorder: rec}),
						Auctions: memstore.NewAuctions(clock.Now, rec), Drops: memstore.NewDrops(clock.Now, rec),
						Advance: clock.Advance, Now: clock.Now, Record: rec}
					c.compare(t, seed, running, restarting(t, storetest.NewClock(start)))
				})
			}
		})
	}
}

// restarting opens a backend over a fresh data directory whose Restart crashes it (kill -9 once its
// journal was written) or stops it, in turns, and opens it again, its SQLite record too, on the same
// clock.
func restarting(t *testing.T, clock *storetest.Clock) storetest.Harness {
	dir := t.TempDir()
	ctx := context.Background()
	var (
		b  *memstore.Backend
		db *record.DB
		h  storetest.Harness
	)
	restarts := 0
	stop := func() {
		// Every other restart is a graceful stop, which saves a snapshot rather than leaving a journal.
		if restarts++; restarts%2 == 0 {
			b.Close()
		} else {
			memstore.Crash(b)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}
	open := func() storetest.Harness {
		var err error
		if db, err = record.OpenSQLite(ctx, filepath.Join(dir, "records.db"), record.FsyncNo); err != nil {
			t.Fatal(err)
		}
		if b, err = memstore.OpenAt(ctx, db, dir, record.FsyncNo, slog.New(slog.DiscardHandler), clock.Now); err != nil {
			t.Fatal(err)
		}
		h.Rooms, h.Auctions, h.Drops, h.Record = b.Rooms(), b.Auctions(), b.Drops(), db
		return h
	}
	h = storetest.Harness{Name: "restarted", Advance: clock.Advance, Now: clock.Now,
		Restart: func() storetest.Harness { stop(); return open() }}
	t.Cleanup(stop)
	return open()
}
