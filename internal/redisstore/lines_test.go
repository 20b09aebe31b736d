package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
)

// TestLineLeftAfterCrash plays a rushgate that dies in the middle of moving a visitor from one line to
// another: the pointer is swapped and the new place taken, but the old line is never left (and on
// Cluster the join lock never released). The visitor's next join must leave both, so that it waits in
// exactly one line, whether the visitor's first line is on its pointer or is its origin.
func TestLineLeftAfterCrash(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		// A short timeout keeps the lock of the dead join (ten timeouts) short.
		s := New(tp.Client(t), Options{Prefix: redistest.Prefix("crash"), Cluster: tp.Cluster, Timeout: 100 * time.Millisecond}).Rooms()
		putLines(t, s)
		crashMidMove(t, s, room.Entrant{Visitor: "v_pointed", Switch: true})
		crashMidMove(t, s, room.Entrant{Visitor: "v_arrived", Origin: "a", New: true})
	})
}

// lines are the rooms the line tests move visitors between.
var lines = []string{"a", "b", "c"}

// putLines creates the rooms of lines, paused so that visitors stay waiting.
func putLines(t *testing.T, s *Rooms) {
	t.Helper()
	cfg := room.Config{Capacity: 10, Paused: true, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	for _, id := range lines {
		if err := s.PutRoom(context.Background(), id, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

// waitingIn returns the rooms of lines in which v waits.
func waitingIn(t *testing.T, s *Rooms, v string) []string {
	t.Helper()
	var in []string
	for _, id := range lines {
		st, err := s.Status(context.Background(), id, v)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == room.StateWaiting {
			in = append(in, id)
		}
	}
	return in
}

// crashMidMove joins e to a, cuts its move to b short, and checks that its next join, to c, leaves both.
func crashMidMove(t *testing.T, s *Rooms, e room.Entrant) {
	t.Helper()
	ctx := context.Background()
	v := e.Visitor
	if _, err := s.Join(ctx, "a", e); err != nil {
		t.Fatal(err)
	}
	later := room.Entrant{Visitor: v, Origin: e.Origin, Switch: true}
	// The move to b, cut short before the leaving: what Join does up to there.
	mode, arg := "join", e.Origin
	if s.cluster {
		_, fence, err := s.lockLine(ctx, "b", later)
		if err != nil {
			t.Fatal(err)
		}
		mode, arg = "fenced", fence
	}
	if _, _, err := s.visit(ctx, "b", v, mode, arg); err != nil {
		t.Fatal(err)
	}
	if in := waitingIn(t, s, v); len(in) != 2 {
		t.Fatalf("%s: after the cut-short move the visitor waits in %v, want a and b", v, in)
	}
	// On Cluster the dead join's lock holds the next join off until it expires.
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := s.Join(ctx, "c", later)
		if err == nil {
			break
		}
		if !s.cluster || !errors.Is(err, rushgate.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s: join after the crash: %v", v, err)
		}
	}
	if in := waitingIn(t, s, v); len(in) != 1 || in[0] != "c" {
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
	rdb := redistest.Client(t, redistest.Shared(t))
	// One node holds every slot, so the Cluster code path runs on standalone Redis.
	s := New(rdb, Options{Prefix: redistest.Prefix("lock"), Cluster: true, Timeout: 500 * time.Millisecond}).Rooms()
	cfg := room.Config{Capacity: 10, Paused: true, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	if err := s.PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	const v = "v_locked"
	lock := s.keys.joining(v)
	if err := rdb.Do(ctx, rdb.B().Set().Key(lock).Value("dead").Px(10*time.Second).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	calls := func() int { return int(commandStat(t, rdb, "evalsha", "calls")) }
	before, start := calls(), time.Now()
	_, err := s.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true})
	if took := time.Since(start); !errors.Is(err, rushgate.ErrUnavailable) || took > 2*s.timeout {
		t.Fatalf("join under a held lock: %v after %v, want ErrUnavailable within about %v", err, took, s.timeout)
	}
	// Backing off from 1 ms to 64 ms makes about 16 tries in 500 ms; a fixed 2 ms would make 250.
	if n := calls() - before; n > 20 {
		t.Fatalf("one join asked Redis for the lock %d times", n)
	}
	if err := rdb.Do(ctx, rdb.B().Del().Key(lock).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("join after the lock went: %+v, %v", st, err)
	}
	if n, _ := rdb.Do(ctx, rdb.B().Exists().Key(lock).Build()).AsInt64(); n != 0 {
		t.Fatal("the join left its lock behind")
	}
}

// TestStaleJoinFenced plays, on Cluster, a join that stalls past its lock's life while a later join of
// the same visitor runs to the end: whatever the stale join does afterwards, the later join decides
// where the visitor waits, because the rooms refuse steps whose fence is older than one they have seen.
// Without fences, the stale join's late leave would leave the visitor in no line, and its late place
// would leave it in two. Rooms, and the visitor's own key, forget fences once no step can carry them.
func TestStaleJoinFenced(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	s := New(redistest.Client(t, redistest.SharedCluster(t)...), Options{Prefix: redistest.Prefix("fence"), Cluster: true, Timeout: 100 * time.Millisecond, Clock: clock.Now}).Rooms()
	putLines(t, s)
	// stall starts a move of v to id and stops it after the lock (and, if placed, the place in id); its
	// lock then expires, as it would while the stalled rushgate slept.
	stall := func(v, id string, placed bool) (others, fence string) {
		others, fence, err := s.lockLine(ctx, id, room.Entrant{Visitor: v, Switch: true})
		if err != nil {
			t.Fatal(err)
		}
		if placed {
			if _, _, err := s.visit(ctx, id, v, "fenced", fence); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.rdb.Do(ctx, s.rdb.B().Del().Key(s.keys.joining(v)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		return others, fence
	}
	join := func(v, id string) {
		if _, err := s.Join(ctx, id, room.Entrant{Visitor: v, Switch: true}); err != nil {
			t.Fatalf("%s: join %s: %v", v, id, err)
		}
	}

	// The stale join took its place in b; the later join returns to a, leaving b. The stale join's late
	// leave of a must not take the visitor out of a.
	join("v_leave", "a")
	others, fence := stall("v_leave", "b", true)
	join("v_leave", "a")
	if err := s.settle(ctx, "b", "v_leave", others, fence); err != nil {
		t.Fatal(err)
	}
	if in := waitingIn(t, s, "v_leave"); len(in) != 1 || in[0] != "a" {
		t.Fatalf("after a stale leave the visitor waits in %v, want a alone", in)
	}

	// The stale join stalled before its place in b; the later join moves the visitor to c. The stale
	// join's late place in b must be refused.
	join("v_place", "a")
	_, fence = stall("v_place", "b", false)
	join("v_place", "c")
	if _, _, err := s.visit(ctx, "b", "v_place", "fenced", fence); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("stale place: %v, want ErrUnavailable", err)
	}
	if in := waitingIn(t, s, "v_place"); len(in) != 1 || in[0] != "c" {
		t.Fatalf("after a stale place the visitor waits in %v, want c alone", in)
	}

	fences := func() (n int64) {
		for _, id := range lines {
			c, err := s.rdb.Do(ctx, s.rdb.B().Zcard().Key(s.keys.room(id)[6]).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
		return n
	}
	if n := fences(); n == 0 {
		t.Fatal("the rooms remember no fence")
	}
	// A visitor's own last fence lives as long as the rooms remember fences, not a day like its pointer.
	keep := fenceKeepLocks * s.lockLife
	if ttl, err := s.rdb.Do(ctx, s.rdb.B().Pttl().Key(s.keys.fence("v_place")).Build()).AsInt64(); err != nil || ttl <= 0 || ttl > keep.Milliseconds() {
		t.Fatalf("the visitor's fence lives %d ms (%v), want at most %v", ttl, err, keep)
	}
	clock.Advance(keep + time.Second)
	for _, id := range lines {
		if _, err := s.Admit(ctx, id, 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := fences(); n != 0 {
		t.Fatalf("%d fences outlived their keep", n)
	}
}
