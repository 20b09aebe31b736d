package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestUnitsOfARoomWrittenBeforeRoomsNamedTheirDrop: a room whose config an older rushgate wrote has
// no "drop" field beside it, which the units' scripts check; until its config is written again, they
// take any drop's steps as its own, as every version did before, rather than leave it deaf to the
// drop it follows.
func TestUnitsOfARoomWrittenBeforeRoomsNamedTheirDrop(t *testing.T) {
	ctx := context.Background()
	b := New(redistest.Client(t, redistest.Shared(t)), Options{Prefix: redistest.Prefix("units")})
	rooms := b.Rooms()
	if err := rooms.PutRoom(ctx, "old", room.Config{Capacity: 5, Drop: "d"}); err != nil {
		t.Fatal(err)
	}
	meta := b.conn.keys.room("old")[0]
	units := func() string {
		t.Helper()
		m, err := b.conn.do(ctx, b.conn.rdb.B().Hget().Key(meta).Field("units").Build())
		if errors.Is(err, errNil) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		s, _ := m.ToString()
		return s
	}
	if err := rooms.SetUnits(ctx, "old", "elsewhere", rushgate.Level{Left: 3, Stock: 3, Written: 1}); err != nil || units() != "" {
		t.Fatalf("another drop's link, the room's drop named: units %q, %v", units(), err)
	}
	if _, err := b.conn.do(ctx, b.conn.rdb.B().Hdel().Key(meta).Field("drop").Build()); err != nil {
		t.Fatal(err)
	}
	if err := rooms.SetUnits(ctx, "old", "d", rushgate.Level{Left: 3, Stock: 3, Written: 1}); err != nil || units() != "3" {
		t.Fatalf("a link, the room's drop not named: units %q, %v", units(), err)
	}
	if news, err := rooms.Restock(ctx, "old", "d", rushgate.Level{Stock: 5, Written: 2}); err != nil || !news || units() != "5" {
		t.Fatalf("a restock, the room's drop not named: news %v, units %q, %v", news, units(), err)
	}
	if err := rooms.PutRoom(ctx, "old", room.Config{Capacity: 5, Drop: "d"}); err != nil { // written again: named
		t.Fatal(err)
	}
	if news, err := rooms.Restock(ctx, "old", "elsewhere", rushgate.Level{Stock: 9, Written: 3}); err != nil || news || units() != "5" {
		t.Fatalf("another drop's restock, the room's drop named again: news %v, units %q, %v", news, units(), err)
	}
}
