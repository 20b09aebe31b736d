package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestRecordSeen holds lua/record_seen.lua to its rules: it counts the different records instances
// said they record into within the horizon, each once however often it is said, and forgets one
// nobody has named for longer.
func TestRecordSeen(t *testing.T) {
	b := New(redistest.Client(t, redistest.Shared(t)), Options{Prefix: redistest.Prefix("seen")})
	seen := func(id string, horizon time.Duration, want int64) {
		t.Helper()
		m, err := b.conn.run(context.Background(), seenScript, []string{b.conn.keys.records()}, id, itoa(horizon.Milliseconds()))
		n, _ := m.AsInt64()
		if err != nil || n != want {
			t.Fatalf("%s said: %d records, %v; want %d", id, n, err, want)
		}
	}
	seen("a", time.Minute, 1)
	seen("a", time.Minute, 1)
	seen("b", time.Minute, 2)
	time.Sleep(150 * time.Millisecond)
	seen("a", 100*time.Millisecond, 1) // b said nothing for longer than the horizon: forgotten
	seen("b", time.Minute, 2)
}
