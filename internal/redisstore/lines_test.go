package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestLineLeftAfterCrash plays a rushgate that dies in the middle of moving a visitor from one line to
// another: the pointer is swapped and the new place taken, but the old line is never left (and on
// Cluster the join lock never released). The visitor's next join must leave both, so that it waits in
// exactly one line, whether the visitor's first line is on its pointer or is its origin.
func TestLineLeftAfterCrash(t *testing.T) {
	for name, cluster := range map[string]bool{"standalone": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			// A short timeout keeps the lock of the dead join (ten timeouts) short.
			opts := Options{Prefix: "crash", Cluster: cluster, Timeout: 100 * time.Millisecond}
			var s *Store
			if cluster {
				s = New(redistest.Client(t, redistest.Cluster(t)...), opts)
			} else {
				s = New(redistest.Client(t, redistest.Start(t).Addr), opts)
			}
			cfg := room.Config{Capacity: 10, Paused: true, SessionTTL: room.Duration(time.Hour), Grace: room.Duration(time.Hour), IdleTimeout: room.Duration(time.Hour)}
			for _, id := range []string{"a", "b", "c"} {
				if err := s.PutRoom(context.Background(), id, cfg); err != nil {
					t.Fatal(err)
				}
			}
			crashMidMove(t, s, room.Entrant{Visitor: "v_pointed"})
			crashMidMove(t, s, room.Entrant{Visitor: "v_arrived", Origin: "a", New: true})
		})
	}
}

// crashMidMove joins e to a, cuts its move to b short, and checks that its next join, to c, leaves both.
func crashMidMove(t *testing.T, s *Store, e room.Entrant) {
	t.Helper()
	ctx := context.Background()
	v := e.Visitor
	if _, err := s.Join(ctx, "a", e); err != nil {
		t.Fatal(err)
	}
	later := room.Entrant{Visitor: v, Origin: e.Origin}
	// The move to b, cut short before the leaving: what Join does up to there.
	if s.cluster {
		if _, err := s.lockLine(ctx, "b", later, "dead"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.visit(ctx, "b", v, "join", e.Origin); err != nil {
		t.Fatal(err)
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
		t.Fatalf("%s: after the cut-short move the visitor waits in %v, want a and b", v, in)
	}
	// On Cluster the dead join's lock holds the next join off until it expires.
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := s.Join(ctx, "c", later)
		if err == nil {
			break
		}
		if !s.cluster || !errors.Is(err, room.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s: join after the crash: %v", v, err)
		}
	}
	if in := waiting(); len(in) != 1 || in[0] != "c" {
		t.Fatalf("%s: after the next join the visitor waits in %v, want c alone", v, in)
	}
	if p, err := s.rdb.Do(ctx, s.rdb.B().Get().Key(s.keys.line(v)).Build()).ToString(); err != nil || p != "c" {
		t.Fatalf("%s: pointer %q (%v), want it settled on c", v, p, err)
	}
}
