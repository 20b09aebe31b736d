package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
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

// TestJoinLockBacksOff holds a visitor's join lock as a dead rushgate would: a join of that visitor
// fails with ErrUnavailable within the store's timeout, having asked Redis for the lock only a few times
// (a client sending many joins with one token must not turn each into hundreds of Redis calls), and
// succeeds once the lock is gone.
func TestJoinLockBacksOff(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t, redistest.Start(t).Addr)
	// One node holds every slot, so the Cluster code path runs on standalone Redis.
	s := New(rdb, Options{Prefix: "lock", Cluster: true, Timeout: 500 * time.Millisecond})
	cfg := room.Config{Capacity: 10, Paused: true, SessionTTL: room.Duration(time.Hour), Grace: room.Duration(time.Hour), IdleTimeout: room.Duration(time.Hour)}
	if err := s.PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	const v = "v_locked"
	lock := s.keys.joining(v)
	if err := rdb.Do(ctx, rdb.B().Set().Key(lock).Value("dead").Px(10*time.Second).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		info, err := rdb.Do(ctx, rdb.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	before, start := calls(), time.Now()
	_, err := s.Join(ctx, "r", room.Entrant{Visitor: v})
	if took := time.Since(start); !errors.Is(err, room.ErrUnavailable) || took > 2*s.timeout {
		t.Fatalf("join under a held lock: %v after %v, want ErrUnavailable within about %v", err, took, s.timeout)
	}
	// Backing off from 1 ms to 64 ms makes about 16 tries in 500 ms; a fixed 2 ms would make 250.
	if n := calls() - before; n > 20 {
		t.Fatalf("one join asked Redis for the lock %d times", n)
	}
	if err := rdb.Do(ctx, rdb.B().Del().Key(lock).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Join(ctx, "r", room.Entrant{Visitor: v}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("join after the lock went: %+v, %v", st, err)
	}
	if n, _ := rdb.Do(ctx, rdb.B().Exists().Key(lock).Build()).AsInt64(); n != 0 {
		t.Fatal("the join left its lock behind")
	}
}
