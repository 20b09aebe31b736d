package memstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
)

var sizes = []int{1e3, 1e5, 1e6}

// filled returns a store whose room "r" has n visitors waiting.
func filled(b *testing.B, n int) *memstore.Rooms {
	b.Helper()
	s := memstore.NewRooms(memstore.Options{})
	cfg := room.Config{Capacity: room.MaxCapacity, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour), Paused: true}
	ctx := context.Background()
	if err := s.PutRoom(ctx, "r", cfg); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := s.Join(ctx, "r", room.Entrant{Visitor: "w" + strconv.Itoa(i), Switch: true}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkJoin joins new visitors at the back of lines of growing length: O(log N).
func BenchmarkJoin(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			s, ctx, i := filled(b, n), context.Background(), 0
			for b.Loop() {
				i++
				if _, err := s.Join(ctx, "r", room.Entrant{Visitor: "j" + strconv.Itoa(i), Switch: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStatus reads positions all along the line: O(log N).
func BenchmarkStatus(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			s, ctx, i := filled(b, n), context.Background(), 0
			for b.Loop() {
				i = (i + 7919) % n
				if st, err := s.Status(ctx, "r", "w"+strconv.Itoa(i)); err != nil || st.State != room.StateWaiting {
					b.Fatal(st, err)
				}
			}
		})
	}
}

// BenchmarkAdmitTick admits 10 visitors per tick from lines of growing length. Its cost must stay flat
// (up to the log N of each removal): a tick costs O(admitted), never O(waiting). The admitted visitors
// are released and rejoin at the back outside the timer, so the line keeps its length.
func BenchmarkAdmitTick(b *testing.B) {
	const batch = 10
	for _, n := range sizes {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			s, ctx := filled(b, n), context.Background()
			cfg, _ := s.Room(ctx, "r")
			cfg.Paused = false
			_ = s.PutRoom(ctx, "r", cfg)
			for b.Loop() {
				t, err := s.Admit(ctx, "r", batch)
				if err != nil || len(t.Admitted) != batch {
					b.Fatal(len(t.Admitted), err)
				}
				b.StopTimer()
				for _, a := range t.Admitted {
					_ = s.Release(ctx, "r", a.Visitor, a.Admission.ID)
					_, _ = s.Join(ctx, "r", room.Entrant{Visitor: a.Visitor, Switch: true})
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/admitted")
		})
	}
}
