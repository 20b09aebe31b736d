package redisstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

func visitTestStore(t *testing.T, timeout time.Duration, batched func(int)) (*Rooms, rueidis.Client) {
	t.Helper()
	rdb := redistest.Client(t, redistest.Shared(t))
	s := New(rdb, Options{Prefix: redistest.Prefix(t.Name()), Timeout: timeout, Batched: batched}).Rooms()
	cfg := room.Config{Capacity: 1000, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	if err := s.PutRoom(context.Background(), "r", cfg); err != nil {
		t.Fatal(err)
	}
	return s, rdb
}

// scriptCalls returns how many EVALSHA and EVAL commands Redis has run since its stats were reset.
func scriptCalls(t *testing.T, rdb rueidis.Client) int {
	t.Helper()
	return int(commandStat(t, rdb, "eval", "calls") + commandStat(t, rdb, "evalsha", "calls"))
}

// commandStat returns one field (calls, usec, ...) of a command's line in Redis's INFO commandstats,
// 0 when Redis has not run the command since its stats were reset.
func commandStat(tb testing.TB, rdb rueidis.Client, cmd, field string) float64 {
	tb.Helper()
	info, err := rdb.Do(context.Background(), rdb.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^cmdstat_` + regexp.QuoteMeta(cmd) + `:(?:.*,)?` + regexp.QuoteMeta(field) + `=([0-9.]+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestVisitsShareScriptCalls checks that a crowd's joins reach Redis in fewer script calls than there are
// joins, which is the point of batching, that every one of them took a place, and that the batch sizes
// reported for metrics account for every join.
func TestVisitsShareScriptCalls(t *testing.T) {
	var mu sync.Mutex
	var batches, visits int
	s, rdb := visitTestStore(t, 5*time.Second, func(n int) {
		mu.Lock()
		batches, visits = batches+1, visits+n
		mu.Unlock()
	})
	ctx := context.Background()
	if err := rdb.Do(ctx, rdb.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	const crowd = 400
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range crowd {
		wg.Go(func() {
			<-start
			if _, err := s.Join(ctx, "r", room.Entrant{Visitor: fmt.Sprintf("v%d", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	st, err := s.Stats(ctx, "r")
	if err != nil || st.Waiting != crowd {
		t.Fatalf("stats %+v, %v; want %d waiting", st, err, crowd)
	}
	calls := scriptCalls(t, rdb) - 1 // the Stats call
	t.Logf("%d joins in %d script calls", crowd, calls)
	if calls >= crowd {
		t.Fatalf("%d joins took %d script calls: no batch formed", crowd, calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if visits != crowd || batches > calls {
		t.Fatalf("batch sizes reported: %d batches of %d visits in all, want %d visits in at most %d", batches, visits, crowd, calls)
	}
}

// TestAbandonedVisitIsNotSent holds Redis still while both of a room's batches are with it, so that the
// next join waits in the queue; its caller gives up, and the join must never take a place.
func TestAbandonedVisitIsNotSent(t *testing.T) {
	s, rdb := visitTestStore(t, 10*time.Second, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	holdRunners(t, s, rdb, 2000, &wg, func(v string) {
		if _, err := s.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true}); err != nil {
			t.Error(err)
		}
	})

	quick, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Join(quick, "r", room.Entrant{Visitor: "c", Switch: true}); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("join given up: %v, want ErrUnavailable", err)
	}
	wg.Wait()
	if st, err := s.Status(ctx, "r", "c"); err != nil || st.State != room.StateNone {
		t.Fatalf("abandoned join took a place: %+v, %v", st, err)
	}
	if st, _ := s.Stats(ctx, "r"); st.Waiting != 2 {
		t.Fatalf("%d waiting, want a and b", st.Waiting)
	}
	waitFor(t, s, func(_, _ int, ok bool) bool { return !ok }) // the runners retired
}

// TestVisitFailsFast checks that, as without batching, a visit fails with ErrUnavailable within the
// store's timeout of its arrival when Redis does not answer, even when it had to queue behind batches
// that were already waiting for Redis.
func TestVisitFailsFast(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, rdb := visitTestStore(t, timeout, nil)
	ctx := context.Background()
	join := func(v string) {
		began := time.Now()
		_, err := s.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true})
		// The slack allows for a loaded machine; Redis stays paused ten times longer than the timeout.
		if took := time.Since(began); !errors.Is(err, rushgate.ErrUnavailable) || took > timeout+300*time.Millisecond {
			t.Errorf("join of %s while Redis is paused: %v after %v, want ErrUnavailable within %v", v, err, took, timeout)
		}
	}
	var wg sync.WaitGroup
	holdRunners(t, s, rdb, 3000, &wg, join)
	for i := range 10 { // these queue behind them
		wg.Go(func() { join(fmt.Sprintf("v%d", i)) })
	}
	wg.Wait()
}

// holdRunners pauses Redis for ms milliseconds, then starts the joins of visitors a and b with join in
// wg, one at a time, so that each is a batch of its own and both of the room's runners are held by Redis.
func holdRunners(t *testing.T, s *Rooms, rdb rueidis.Client, ms int64, wg *sync.WaitGroup, join func(v string)) {
	t.Helper()
	if err := rdb.Do(context.Background(), rdb.B().ClientPause().Timeout(ms).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"a", "b"} {
		wg.Go(func() { join(v) })
		waitFor(t, s, func(pending, runners int, ok bool) bool { return ok && runners == i+1 && pending == 0 })
	}
}

// waitFor polls room r's visit queue until ok holds, failing after a few seconds.
func waitFor(t *testing.T, s *Rooms, ok func(pending, runners int, exists bool) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if ok(s.visits.queue("r")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the visit queue never reached the state waited for")
		}
	}
}

// TestVisitScriptTwins runs the visit script with one visitor twice in one batch, which a crowd of
// retries produces: the second visit sees what the first did, as if each had a step of its own.
func TestVisitScriptTwins(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t, redistest.Shared(t))
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := New(rdb, Options{Prefix: redistest.Prefix("twins"), Clock: func() time.Time { return now }}).Rooms()
	opens := now.Add(time.Hour)
	cfg := room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(2 * time.Hour), OpensAt: &opens}
	if err := s.PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	batch := func(visits ...string) []int64 { // visitor, mode, draw, origin, ...
		t.Helper()
		v, err := s.run(ctx, visitScript, s.keys.room("r"), append([]string{s.now(), "r", "60"}, visits...)...)
		if err != nil {
			t.Fatal(err)
		}
		return ints(v)
	}
	score := func(key, member string) string {
		t.Helper()
		got, _ := rdb.Do(ctx, rdb.B().Zscore().Key(key).Member(member).Build()).ToString()
		return got
	}

	// Before the opening a join draws a random order; a second join in the same step keeps the first draw.
	batch("x", "join", "500", "", "x", "join", "7", "")
	if got := score(s.keys.room("r")[1], "x"); got != "500" {
		t.Fatalf("x's pre-queue order is %s after two joins in one step, want the first draw, 500", got)
	}

	// An admission collected by the first visit is seen collected by the second: both are told the
	// session's end, not the grace window's.
	now = opens
	if tk, err := s.Admit(ctx, "r", 1); err != nil || len(tk.Admitted) != 1 {
		t.Fatalf("admit: %+v, %v", tk, err)
	}
	session := now.Add(time.Hour).UnixMilli()
	if got := batch("x", "status", "1", "", "x", "status", "1", ""); got[2] != session || got[5] != session {
		t.Fatalf("two status reads of a fresh admission in one step: %v, want both to expire at %d", got, session)
	}
}
