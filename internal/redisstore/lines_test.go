package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestLineLeftAfterCrash plays a rushgate that dies in the middle of moving a visitor from one line to
// another: the new place is taken and the pointer swapped, but the old line is never left. The
// visitor's next join must leave both, so that it waits in exactly one line.
func TestLineLeftAfterCrash(t *testing.T) {
	for name, cluster := range map[string]bool{"standalone": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			var s *Store
			if cluster {
				s = New(redistest.Client(t, redistest.Cluster(t)...), Options{Prefix: "crash", Cluster: true})
			} else {
				s = New(redistest.Client(t, redistest.Start(t).Addr), Options{Prefix: "crash"})
			}
			ctx := context.Background()
			cfg := room.Config{Capacity: 10, Paused: true, SessionTTL: room.Duration(time.Hour), Grace: room.Duration(time.Hour), IdleTimeout: room.Duration(time.Hour)}
			for _, id := range []string{"a", "b", "c"} {
				if err := s.PutRoom(ctx, id, cfg); err != nil {
					t.Fatal(err)
				}
			}
			const v = "v_crash"
			if _, err := s.Join(ctx, "a", v); err != nil {
				t.Fatal(err)
			}
			// The move to b, cut short after the pointer swap: what Join does up to the leaving.
			if _, _, err := s.visit(ctx, "b", v, "join"); err != nil {
				t.Fatal(err)
			}
			if cluster {
				if _, err := s.run(ctx, lineScript, []string{s.keys.line(v)}, "b", "3600"); err != nil {
					t.Fatal(err)
				}
			}
			waiting := func() []string {
				var in []string
				for _, id := range []string{"a", "b", "c"} {
					st, err := s.Status(ctx, id, v)
					if err != nil {
						t.Fatal(err)
					}
					if st.State == room.StateWaiting {
						in = append(in, id)
					}
				}
				return in
			}
			if in := waiting(); len(in) != 2 {
				t.Fatalf("after the cut-short move the visitor waits in %v, want a and b", in)
			}
			if _, err := s.Join(ctx, "c", v); err != nil {
				t.Fatal(err)
			}
			if in := waiting(); len(in) != 1 || in[0] != "c" {
				t.Fatalf("after the next join the visitor waits in %v, want c alone", in)
			}
			if p, err := s.rdb.Do(ctx, s.rdb.B().Get().Key(s.keys.line(v)).Build()).ToString(); err != nil || p != "c" {
				t.Fatalf("pointer %q (%v), want it settled on c", p, err)
			}
		})
	}
}
