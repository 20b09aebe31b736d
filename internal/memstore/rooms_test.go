package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
	"github.com/rushgate/rushgate/internal/vault"
)

// TestConformance runs the suite on the embedded backend as it runs without a record.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		return storetest.Harness{Rooms: memstore.NewRooms(memstore.Options{Clock: c.Now}), Auctions: memstore.NewAuctions(c.Now, nil),
			Drops: memstore.NewDrops(c.Now, nil), Vault: vault.Dir(t.TempDir()), History: memstore.NewHistory(c.Now), Spent: memstore.NewSpent(c.Now),
			Advance: c.Advance, Now: c.Now}
	})
}

// TestConformanceRecorded runs the suite on the embedded backend as serve opens it: every room
// change, claim and auction step recorded in SQLite before it is kept.
func TestConformanceRecorded(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		rec := sqlite(t)
		return storetest.Harness{Rooms: memstore.NewRooms(memstore.Options{Clock: c.Now, Recorder: rec}), Auctions: memstore.NewAuctions(c.Now, rec),
			Drops: memstore.NewDrops(c.Now, rec), Vault: vault.Dir(t.TempDir()), History: memstore.NewHistory(c.Now), Audit: rec, Spent: memstore.NewSpent(c.Now),
			Advance: c.Advance, Now: c.Now}
	})
}

// failingRecorder records rooms in a map, or fails when told to.
type failingRecorder struct {
	memstore.Records // records rooms only
	fail             bool
	rooms            map[string]room.Config
}

func (r *failingRecorder) ForgetInvites(context.Context, string) error { return nil }

func (r *failingRecorder) RecordRoom(_ context.Context, id string, cfg room.Config) error {
	if r.fail {
		return errors.New("disk full")
	}
	r.rooms[id] = cfg
	return nil
}

func (r *failingRecorder) ForgetRoom(_ context.Context, id string) error {
	if r.fail {
		return errors.New("disk full")
	}
	delete(r.rooms, id)
	return nil
}

// TestRoomsRecorded checks that a room is recorded before it exists or changes and forgotten before it
// is deleted: when the record fails, the store is left as it was and says the store is unavailable.
func TestRoomsRecorded(t *testing.T) {
	ctx := context.Background()
	rec := &failingRecorder{rooms: map[string]room.Config{}}
	s := memstore.NewRooms(memstore.Options{Recorder: rec})
	if err := s.PutRoom(ctx, "a", room.Config{Capacity: 1}); err != nil || rec.rooms["a"].Capacity != 1 {
		t.Fatalf("put: %v, recorded %+v", err, rec.rooms)
	}
	rec.fail = true
	if err := s.PutRoom(ctx, "b", room.Config{Capacity: 1}); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("put with a failing record: %v", err)
	}
	if _, err := s.Room(ctx, "b"); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("a room whose record failed exists: %v", err)
	}
	if err := s.PutRoom(ctx, "a", room.Config{Capacity: 5}); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("change with a failing record: %v", err)
	}
	if cfg, _ := s.Room(ctx, "a"); cfg.Capacity != 1 {
		t.Fatalf("a change whose record failed was applied: %+v", cfg)
	}
	if err := s.DeleteRoom(ctx, "a"); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("delete with a failing record: %v", err)
	}
	if _, err := s.Room(ctx, "a"); err != nil {
		t.Fatalf("a room whose deletion was not recorded is gone: %v", err)
	}
	rec.fail = false
	if err := s.DeleteRoom(ctx, "a"); err != nil || len(rec.rooms) != 0 {
		t.Fatalf("delete: %v, recorded %+v", err, rec.rooms)
	}
	if err := s.DeleteRoom(ctx, "a"); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}

	restarted := memstore.NewRooms(memstore.Options{Recorder: rec})
	restarted.Restore("c", room.Config{Capacity: 7})
	if cfg, err := restarted.Room(ctx, "c"); err != nil || cfg.Capacity != 7 {
		t.Fatalf("restored room: %+v %v", cfg, err)
	}
	if _, ok := rec.rooms["c"]; ok {
		t.Fatal("restoring a room recorded it again")
	}
}
