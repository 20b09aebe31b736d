// Package storetest is the conformance suite for [room.Store]. Every backend runs it through [Run]; a
// backend that passes is correct by definition, so new behaviour is specified here first.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// Harness is one backend under test: its stores of rooms, auctions and drops and its vault, sharing one
// clock.
type Harness struct {
	Rooms    room.Store
	Auctions auction.Store
	Drops    drop.Store
	// Vault, when set, keeps the backend's secrets (signing keys, the visitor secret).
	Vault keyring.Vault
	// History and Audit, when set, are the backend's per-second samples and audit log.
	History rushgate.History
	Audit   rushgate.Audit
	// Spent, when set, remembers used one-time things.
	Spent rushgate.Spent
	// Advance moves the backend's clock forward. Backends whose clock is a server's (Redis TIME) apply
	// it as an offset the store adds to that clock, so no test sleeps for time to pass.
	Advance func(time.Duration)
	// Now returns the backend's current time, for configs that name an instant (opens_at).
	Now func() time.Time
	// Name, when set, names the backend in the comparisons' failures (see alike.go).
	Name string
	// Restart, when set, ends the backend as a crash would once it has written what it answered, opens
	// it again on what it kept, and returns the new one: the comparisons restart it between steps.
	Restart func() Harness
	// Record, when set, is the backend's durable SQL record of claims and bids, which the comparisons
	// compare; Settle, when set, brings it up to date, and they call it after every step.
	Record *record.DB
	Settle func()
}

// check is one check of the suite, run as a subtest on a harness of its own.
type check struct {
	name string
	fn   func(*testing.T, Harness)
}

// Run runs the whole conformance suite against a backend: rooms, auctions, drops and the vault, each
// check as a parallel subtest on a harness of its own. newHarness must return independent stores (or
// ones shared with a unique key prefix) per call. A backend that passes it is correct by definition.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []check{
		{"Rooms", testRooms},
		{"UnknownRoom", testUnknownRoom},
		{"JoinFIFO", testJoinFIFO},
		{"CapacityAdmission", testCapacity},
		{"RateAdmission", testRate},
		{"CapacityAndRate", testCapacityAndRate},
		{"GraceExpiry", testGrace},
		{"SessionExpiry", testSession},
		{"IdleExpiry", testIdle},
		{"IdleNeverAdmitted", testIdleNeverAdmitted},
		{"PreQueue", testPreQueue},
		{"Paused", testPaused},
		{"OneRoomPerVisitor", testOneRoom},
		{"Leave", testLeave},
		{"Release", testRelease},
		{"BatchLimit", testBatch},
		{"Concurrency", testConcurrency},
		{"JoinCrowd", testJoinCrowd},
		{"Origins", testOrigins},
		{"WaitingElsewhere", testWaitingElsewhere},
		{"RacingGates", testRacingGates},
	}
	tests = append(tests, auctionTests...)
	tests = append(tests, dropTests...)
	tests = append(tests, consoleTests...)
	tests = append(tests, modeTests...)
	tests = append(tests, stockTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newHarness(t))
		})
	}
	t.Run("Vault", func(t *testing.T) {
		t.Parallel()
		if v := newHarness(t).Vault; v != nil {
			runVault(t, v)
		}
	})
}

var ctx = context.Background()

func cfg(capacity int) room.Config {
	return room.Config{
		Capacity:    capacity,
		SessionTTL:  rushgate.Duration(10 * time.Minute),
		Grace:       rushgate.Duration(time.Minute),
		IdleTimeout: rushgate.Duration(2 * time.Minute),
	}
}

func put(t *testing.T, h Harness, id string, c room.Config) {
	t.Helper()
	if err := h.Rooms.PutRoom(ctx, id, c); err != nil {
		t.Fatalf("PutRoom(%s): %v", id, err)
	}
}

// join joins visitors whose tokens name no origin, as a subject's do: the backend alone must know
// where they wait.
func join(t *testing.T, h Harness, id string, visitors ...string) {
	t.Helper()
	for _, v := range visitors {
		if _, err := h.Rooms.Join(ctx, id, someone(v)); err != nil {
			t.Fatalf("Join(%s, %s): %v", id, v, err)
		}
	}
}

// someone is a visitor whose token names no origin.
// someone is a join of a visitor whose token names no origin, which may move it from another line.
func someone(v string) room.Entrant { return room.Entrant{Visitor: v, Switch: true} }

// arrival is a visitor's first join, which issued its token, in the room id.
func arrival(id, v string) room.Entrant { return room.Entrant{Visitor: v, Origin: id, New: true} }

// from is a later join of a visitor whose token was issued by a join of the room origin, which may move
// it from another line.
func from(origin, v string) room.Entrant {
	return room.Entrant{Visitor: v, Origin: origin, Switch: true}
}

func admit(t *testing.T, h Harness, id string) room.Tick {
	t.Helper()
	tk, err := h.Rooms.Admit(ctx, id, 1000)
	if err != nil {
		t.Fatalf("Admit(%s): %v", id, err)
	}
	return tk
}

func admittedNames(tk room.Tick) []string {
	out := make([]string, len(tk.Admitted))
	for i, a := range tk.Admitted {
		out[i] = a.Visitor
	}
	return out
}

func wantAdmitted(t *testing.T, tk room.Tick, want ...string) {
	t.Helper()
	if got := admittedNames(tk); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("admitted %v, want %v", got, want)
	}
}

func status(t *testing.T, h Harness, id, v string) room.Status {
	t.Helper()
	st, err := h.Rooms.Status(ctx, id, v)
	if err != nil {
		t.Fatalf("Status(%s, %s): %v", id, v, err)
	}
	return st
}

func wantStats(t *testing.T, h Harness, id string, waiting, active int64) {
	t.Helper()
	st, err := h.Rooms.Stats(ctx, id)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.Waiting != waiting || st.Active != active {
		t.Fatalf("stats = %+v, want waiting %d active %d", st, waiting, active)
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

func testRooms(t *testing.T, h Harness) {
	c := cfg(3)
	put(t, h, "r1", c)
	put(t, h, "r2", c)
	got, err := h.Rooms.Room(ctx, "r1")
	if err != nil || got.Capacity != 3 {
		t.Fatalf("Room = %+v, %v", got, err)
	}
	join(t, h, "r1", "a")
	c.Capacity = 7
	put(t, h, "r1", c) // replacing keeps the line
	if st := status(t, h, "r1", "a"); st.State != room.StateWaiting {
		t.Fatalf("after replace: %+v", st)
	}
	if got, _ := h.Rooms.Room(ctx, "r1"); got.Capacity != 7 {
		t.Fatalf("replaced capacity = %d", got.Capacity)
	}
	ids, err := h.Rooms.Rooms(ctx)
	if err != nil || !slices.Contains(ids, "r1") || !slices.Contains(ids, "r2") {
		t.Fatalf("Rooms = %v, %v", ids, err)
	}
	if err := h.Rooms.DeleteRoom(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rooms.Room(ctx, "r1"); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("deleted room: %v", err)
	}
	put(t, h, "r1", c) // created again: empty
	if st := status(t, h, "r1", "a"); st.State != room.StateNone {
		t.Fatalf("recreated room remembers visitor: %+v", st)
	}
}

func testUnknownRoom(t *testing.T, h Harness) {
	s := h.Rooms
	checks := map[string]error{}
	_, checks["Room"] = s.Room(ctx, "nope")
	checks["DeleteRoom"] = s.DeleteRoom(ctx, "nope")
	_, checks["Join"] = s.Join(ctx, "nope", someone("v"))
	_, checks["Status"] = s.Status(ctx, "nope", "v")
	checks["Touch"] = s.Touch(ctx, "nope", []string{"v"})
	_, checks["Leave"] = s.Leave(ctx, "nope", "v")
	checks["Release"] = s.Release(ctx, "nope", "v", "")
	_, checks["Admit"] = s.Admit(ctx, "nope", 10)
	_, checks["Stats"] = s.Stats(ctx, "nope")
	_, checks["Active"] = s.Active(ctx, "nope", "v", "x")
	for op, err := range checks {
		if !errors.Is(err, room.ErrNotFound) {
			t.Errorf("%s on unknown room: %v, want ErrNotFound", op, err)
		}
	}
}

func testJoinFIFO(t *testing.T, h Harness) {
	put(t, h, "r", cfg(1))
	for i, v := range []string{"a", "b", "c"} {
		st, err := h.Rooms.Join(ctx, "r", someone(v))
		if err != nil || st.State != room.StateWaiting || st.Position != int64(i+1) {
			t.Fatalf("Join(%s) = %+v, %v; want waiting at %d", v, st, err, i+1)
		}
	}
	if st, _ := h.Rooms.Join(ctx, "r", someone("b")); st.Position != 2 {
		t.Fatalf("rejoin moved b to %d", st.Position)
	}
	wantStats(t, h, "r", 3, 0)
	wantAdmitted(t, admit(t, h, "r"), "a")
	if st := status(t, h, "r", "c"); st.Position != 2 {
		t.Fatalf("c at %d after a was admitted, want 2", st.Position)
	}
	if st := status(t, h, "r", "nobody"); st.State != room.StateNone {
		t.Fatalf("stranger: %+v", st)
	}
}

func testCapacity(t *testing.T, h Harness) {
	put(t, h, "r", cfg(2))
	join(t, h, "r", "a", "b", "c", "d")
	tk := admit(t, h, "r")
	wantAdmitted(t, tk, "a", "b")
	if tk.AdmittedTotal != 2 {
		t.Fatalf("AdmittedTotal = %d", tk.AdmittedTotal)
	}
	wantAdmitted(t, admit(t, h, "r"))
	wantStats(t, h, "r", 2, 2)
	st := status(t, h, "r", "a")
	if st.State != room.StateAdmitted || st.Admission.ID == "" || !st.Admission.Collected {
		t.Fatalf("a: %+v", st)
	}
	if err := h.Rooms.Release(ctx, "r", "a", ""); err != nil {
		t.Fatal(err)
	}
	wantAdmitted(t, admit(t, h, "r"), "c")
	wantStats(t, h, "r", 1, 2)
}

func testRate(t *testing.T, h Harness) {
	c := cfg(0)
	c.Rate = &room.Rate{Admits: 2, Per: rushgate.Duration(time.Minute)}
	c.IdleTimeout = rushgate.Duration(time.Hour)
	put(t, h, "r", c)
	join(t, h, "r", "a", "b", "c", "d", "e")
	tk := admit(t, h, "r")
	wantAdmitted(t, tk, "a", "b")
	start := h.Now()
	if d := tk.Next.Sub(start); d < 59*time.Second || d > time.Minute {
		t.Fatalf("Next in %v, want the window to slide in 1m", d)
	}
	h.Advance(30 * time.Second)
	wantAdmitted(t, admit(t, h, "r"))
	h.Advance(30 * time.Second)
	wantAdmitted(t, admit(t, h, "r"), "c", "d")
	h.Advance(59 * time.Second)
	wantAdmitted(t, admit(t, h, "r"))
	h.Advance(time.Second)
	wantAdmitted(t, admit(t, h, "r"), "e")
}

func testCapacityAndRate(t *testing.T, h Harness) {
	c := cfg(1)
	c.Rate = &room.Rate{Admits: 5, Per: rushgate.Duration(time.Minute)}
	put(t, h, "r", c)
	join(t, h, "r", names("v", 8)...)
	for i := range 5 {
		tk := admit(t, h, "r")
		wantAdmitted(t, tk, fmt.Sprintf("v%04d", i))
		if err := h.Rooms.Release(ctx, "r", tk.Admitted[0].Visitor, tk.Admitted[0].Admission.ID); err != nil {
			t.Fatal(err)
		}
	}
	wantAdmitted(t, admit(t, h, "r")) // capacity free, rate spent
	h.Advance(time.Minute)
	wantAdmitted(t, admit(t, h, "r"), "v0005")
}

func testGrace(t *testing.T, h Harness) {
	put(t, h, "r", cfg(1))
	join(t, h, "r", "a", "b")
	tk := admit(t, h, "r")
	wantAdmitted(t, tk, "a")
	if got := tk.Admitted[0].Admission; got.Collected || got.ExpiresAt.Sub(h.Now()) > time.Minute {
		t.Fatalf("fresh admission %+v should expire within the grace minute", got)
	}
	status(t, h, "r", "b") // b stays present
	h.Advance(time.Minute)
	if st := status(t, h, "r", "a"); st.State != room.StateNone {
		t.Fatalf("uncollected admission after grace: %+v", st)
	}
	tk = admit(t, h, "r")
	if !slices.Equal(tk.Expired, []string{"a"}) {
		t.Fatalf("Expired = %v, want [a]", tk.Expired)
	}
	wantAdmitted(t, tk, "b")
	// Collecting within grace turns it into a full session.
	h.Advance(30 * time.Second)
	st := status(t, h, "r", "b")
	if st.State != room.StateAdmitted || !st.Admission.Collected {
		t.Fatalf("b: %+v", st)
	}
	if d := st.Admission.ExpiresAt.Sub(h.Now()); d < 9*time.Minute || d > 10*time.Minute {
		t.Fatalf("collected admission expires in %v, want the 10m session", d)
	}
	h.Advance(2 * time.Minute)
	if st := status(t, h, "r", "b"); st.State != room.StateAdmitted {
		t.Fatalf("collected admission lost after grace: %+v", st)
	}
}

func testSession(t *testing.T, h Harness) {
	put(t, h, "r", cfg(1))
	join(t, h, "r", "a", "b")
	wantAdmitted(t, admit(t, h, "r"), "a")
	first := status(t, h, "r", "a").Admission
	for range 9 { // b keeps polling through a's session
		h.Advance(time.Minute)
		status(t, h, "r", "b")
		if again := status(t, h, "r", "a").Admission; again != first {
			t.Fatalf("polling changed the admission: %+v vs %+v", again, first)
		}
	}
	wantAdmitted(t, admit(t, h, "r"))
	h.Advance(time.Minute)
	status(t, h, "r", "b")
	wantStats(t, h, "r", 1, 0) // the expired session no longer counts, swept or not
	tk := admit(t, h, "r")
	if !slices.Equal(tk.Expired, []string{"a"}) {
		t.Fatalf("Expired = %v", tk.Expired)
	}
	wantAdmitted(t, tk, "b")
	if ok, _ := h.Rooms.Active(ctx, "r", "a", first.ID); ok {
		t.Fatal("expired admission still active")
	}
}

func testIdle(t *testing.T, h Harness) {
	c := cfg(1)
	c.Paused = true
	put(t, h, "r", c)
	join(t, h, "r", "a", "b", "c")
	h.Advance(90 * time.Second)
	status(t, h, "r", "b")
	if err := h.Rooms.Touch(ctx, "r", []string{"c", "stranger"}); err != nil {
		t.Fatal(err)
	}
	tk := admit(t, h, "r")
	if len(tk.Idle) != 0 || tk.Next.IsZero() {
		t.Fatalf("before timeout: idle %v next %v", tk.Idle, tk.Next)
	}
	if want := h.Now().Add(30 * time.Second); !tk.Next.Equal(want) {
		t.Fatalf("Next = %v, want a's idle deadline %v", tk.Next, want)
	}
	h.Advance(30 * time.Second)
	tk = admit(t, h, "r")
	if !slices.Equal(tk.Idle, []string{"a"}) {
		t.Fatalf("Idle = %v, want [a]", tk.Idle)
	}
	if st := status(t, h, "r", "a"); st.State != room.StateNone {
		t.Fatalf("idle visitor still in line: %+v", st)
	}
	if st := status(t, h, "r", "c"); st.Position != 2 {
		t.Fatalf("c at %d, want 2", st.Position)
	}
	if st, _ := h.Rooms.Join(ctx, "r", someone("stranger")); st.Position != 3 {
		t.Fatalf("touch must not add a visitor to the line: %+v", st)
	}

	// A crowd arriving at once (which a backend may serve in shared steps): those who show presence
	// stay, the others go, each exactly once.
	put(t, h, "crowd", c)
	crowd := names("w", 60)
	var wg sync.WaitGroup
	for _, v := range crowd {
		wg.Go(func() {
			if _, err := h.Rooms.Join(ctx, "crowd", arrival("crowd", v)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	h.Advance(90 * time.Second)
	var gone []string
	for i, v := range crowd {
		if i%3 == 0 {
			gone = append(gone, v)
		} else {
			status(t, h, "crowd", v)
		}
	}
	h.Advance(30 * time.Second)
	// Small steps: each reports more work while idle waiters remain, and each visitor goes once.
	sweep := func() []string {
		t.Helper()
		var all []string
		for range 100 {
			tk, err := h.Rooms.Admit(ctx, "crowd", 7)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, tk.Idle...)
			if !tk.More {
				return slices.Sorted(slices.Values(all))
			}
		}
		t.Fatal("the sweep never finished")
		return nil
	}
	if got := sweep(); !slices.Equal(got, gone) {
		t.Fatalf("Idle = %v, want %v", got, gone)
	}
	wantStats(t, h, "crowd", int64(len(crowd)-len(gone)), 0)
	h.Advance(90 * time.Second)
	if got := sweep(); len(got) != len(crowd)-len(gone) || len(slices.Compact(got)) != len(got) {
		t.Fatalf("after their own timeout %d went idle (%v), want %d", len(got), got, len(crowd)-len(gone))
	}
	wantStats(t, h, "crowd", 0, 0)
}

// testIdleNeverAdmitted: a waiter gone idle is let go, never let in, even by a step whose sweep of
// idle waiters stops at its limit before reaching it (a backend may keep presence entries of visitors
// long admitted, which such a sweep spends its limit on).
func testIdleNeverAdmitted(t *testing.T, h Harness) {
	c := cfg(100)
	c.IdleTimeout = rushgate.Duration(time.Minute)
	put(t, h, "r", c)
	for _, v := range []string{"a", "b", "c", "d"} { // each in a step of its own
		if _, err := h.Rooms.Join(ctx, "r", arrival("r", v)); err != nil {
			t.Fatal(err)
		}
		wantAdmitted(t, admit(t, h, "r"), v)
		status(t, h, "r", v) // collected, so its session outlives the sweep
	}
	for _, v := range []string{"x", "y"} {
		if _, err := h.Rooms.Join(ctx, "r", arrival("r", v)); err != nil {
			t.Fatal(err)
		}
	}
	h.Advance(2 * time.Minute)
	if idle := sweepAdmittingNobody(t, h, "r"); !slices.Equal(idle, []string{"x", "y"}) {
		t.Fatalf("Idle = %v, want [x y]", idle)
	}
	wantStats(t, h, "r", 0, 4)

	// More idle waiters than a step may sweep, the front of the line the last of them to be seen: the
	// step that sweeps the others must not let it in.
	put(t, h, "q", c)
	join(t, h, "q", "p", "q1", "q2")
	h.Advance(10 * time.Second)
	if err := h.Rooms.Touch(ctx, "q", []string{"p"}); err != nil {
		t.Fatal(err)
	}
	h.Advance(2 * time.Minute)
	if idle := sweepAdmittingNobody(t, h, "q"); !slices.Equal(idle, []string{"p", "q1", "q2"}) {
		t.Fatalf("Idle = %v, want [p q1 q2]", idle)
	}
}

// sweepAdmittingNobody runs steps of two until one reports no more work, failing if any admits
// someone, and returns the waiters they found idle, sorted.
func sweepAdmittingNobody(t *testing.T, h Harness, id string) []string {
	t.Helper()
	var idle []string
	for range 20 {
		tk, err := h.Rooms.Admit(ctx, id, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(tk.Admitted) > 0 {
			t.Fatalf("idle waiters admitted: %+v", tk.Admitted)
		}
		idle = append(idle, tk.Idle...)
		if !tk.More {
			break
		}
	}
	return slices.Sorted(slices.Values(idle))
}

func testPreQueue(t *testing.T, h Harness) {
	c := cfg(0)
	c.Capacity = 1000
	opens := h.Now().Add(time.Hour).Truncate(time.Millisecond)
	c.OpensAt = &opens
	c.IdleTimeout = rushgate.Duration(2 * time.Hour)
	put(t, h, "r", c)
	early := names("early", 60)
	join(t, h, "r", early...)
	tk := admit(t, h, "r")
	wantAdmitted(t, tk)
	if !tk.Next.Equal(opens) {
		t.Fatalf("Next = %v, want the opening %v", tk.Next, opens)
	}
	h.Advance(time.Hour)
	late := names("late", 20)
	join(t, h, "r", late...)
	got := admittedNames(admit(t, h, "r"))
	if len(got) != 80 {
		t.Fatalf("admitted %d, want 80", len(got))
	}
	head := slices.Clone(got[:60])
	if slices.Equal(head, early) {
		t.Fatal("early arrivals were admitted in arrival order; want a random order")
	}
	slices.Sort(head)
	if !slices.Equal(head, early) {
		t.Fatalf("first 60 admitted are not a permutation of the early arrivals: %v", got[:60])
	}
	if !slices.Equal(got[60:], late) {
		t.Fatalf("late arrivals out of order: %v", got[60:])
	}
}

func testPaused(t *testing.T, h Harness) {
	c := cfg(5)
	c.Paused = true
	put(t, h, "r", c)
	join(t, h, "r", "a", "b")
	wantAdmitted(t, admit(t, h, "r"))
	c.Paused = false
	put(t, h, "r", c)
	wantAdmitted(t, admit(t, h, "r"), "a", "b")
}

func testOneRoom(t *testing.T, h Harness) {
	put(t, h, "x", cfg(1))
	put(t, h, "y", cfg(1))
	join(t, h, "x", "hold", "v")
	join(t, h, "y", "v")
	if st := status(t, h, "x", "v"); st.State != room.StateNone {
		t.Fatalf("v still in x after joining y: %+v", st)
	}
	if st := status(t, h, "y", "v"); st.State != room.StateWaiting || st.Position != 1 {
		t.Fatalf("v in y: %+v", st)
	}
	// An admission is not a place in a line: joining elsewhere keeps it.
	wantAdmitted(t, admit(t, h, "y"), "v")
	join(t, h, "x", "v")
	if st := status(t, h, "y", "v"); st.State != room.StateAdmitted {
		t.Fatalf("admission in y lost by joining x: %+v", st)
	}
	// One visitor racing into many rooms ends up in exactly one line.
	ids := []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	for _, id := range ids {
		put(t, h, id, cfg(1))
	}
	// Half the racers arrived in p0 first, so their tokens name it as their origin.
	for round := range 40 {
		v := fmt.Sprintf("racer%d", round)
		who := someone(v)
		if round%2 == 1 {
			if _, err := h.Rooms.Join(ctx, "p0", arrival("p0", v)); err != nil {
				t.Fatal(err)
			}
			who = from("p0", v)
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() { _, _ = h.Rooms.Join(ctx, id, who) })
		}
		wg.Wait()
		in := 0
		for _, id := range ids {
			if status(t, h, id, v).State == room.StateWaiting {
				in++
			}
		}
		if in != 1 {
			t.Fatalf("%s waits in %d rooms, want 1", v, in)
		}
	}
}

// testOrigins keeps the one-line rule for visitors whose first join issued their token: a backend may
// record nothing for such a visitor until it joins elsewhere, and must then leave its origin's line.
func testOrigins(t *testing.T, h Harness) {
	for _, id := range []string{"a", "b"} {
		put(t, h, id, cfg(1))
	}
	where := func(v string, want string) {
		t.Helper()
		for _, id := range []string{"a", "b"} {
			st := status(t, h, id, v)
			if (st.State == room.StateWaiting) != (id == want) {
				t.Fatalf("%s in %s: %+v; want it waiting in %q only", v, id, st, want)
			}
		}
	}
	enter := func(id string, e room.Entrant, position int64) {
		t.Helper()
		st, err := h.Rooms.Join(ctx, id, e)
		if err != nil || st.State != room.StateWaiting || st.Position != position {
			t.Fatalf("Join(%s, %+v) = %+v, %v; want waiting at %d", id, e, st, err, position)
		}
	}
	// Straight from the origin to another room.
	enter("a", arrival("a", "n1"), 1)
	enter("b", from("a", "n1"), 1)
	where("n1", "b")
	// Back to the origin, then away again: the line left is the one last joined, not the origin.
	enter("a", from("a", "n1"), 1)
	where("n1", "a")
	enter("b", from("a", "n1"), 1)
	where("n1", "b")
	// Joining the origin again keeps the place, and still counts when leaving.
	enter("a", arrival("a", "n2"), 1)
	enter("a", from("a", "n2"), 1)
	enter("b", from("a", "n2"), 2)
	where("n2", "b")
	wantStats(t, h, "a", 0, 0)
	// An admission in the origin is not a place in its line: joining elsewhere keeps it.
	enter("a", arrival("a", "n3"), 1)
	wantAdmitted(t, admit(t, h, "a"), "n3")
	enter("b", from("a", "n3"), 3)
	if st := status(t, h, "a", "n3"); st.State != room.StateAdmitted {
		t.Fatalf("admission in a lost by joining b: %+v", st)
	}
}

func testLeave(t *testing.T, h Harness) {
	put(t, h, "r", cfg(1))
	join(t, h, "r", "a", "b", "c")
	if left, err := h.Rooms.Leave(ctx, "r", "b"); err != nil || !left {
		t.Fatalf("Leave(b) = %v, %v", left, err)
	}
	if left, _ := h.Rooms.Leave(ctx, "r", "b"); left {
		t.Fatal("second Leave(b) reported leaving")
	}
	if st := status(t, h, "r", "c"); st.Position != 2 {
		t.Fatalf("c at %d", st.Position)
	}
	wantAdmitted(t, admit(t, h, "r"), "a")
	if left, _ := h.Rooms.Leave(ctx, "r", "a"); !left {
		t.Fatal("admitted visitor could not leave")
	}
	wantAdmitted(t, admit(t, h, "r"), "c")
}

func testRelease(t *testing.T, h Harness) {
	put(t, h, "r", cfg(1))
	join(t, h, "r", "a", "b")
	if err := h.Rooms.Release(ctx, "r", "b", ""); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("releasing a waiter: %v", err)
	}
	tk := admit(t, h, "r")
	id := tk.Admitted[0].Admission.ID
	if ok, _ := h.Rooms.Active(ctx, "r", "a", id); !ok {
		t.Fatal("fresh admission not active")
	}
	if err := h.Rooms.Release(ctx, "r", "a", "someone-else"); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("release with a wrong admission id: %v", err)
	}
	if err := h.Rooms.Release(ctx, "r", "a", id); err != nil {
		t.Fatal(err)
	}
	if ok, _ := h.Rooms.Active(ctx, "r", "a", id); ok {
		t.Fatal("released admission still active")
	}
	if err := h.Rooms.Release(ctx, "r", "a", id); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("double release: %v", err)
	}
	tk = admit(t, h, "r")
	wantAdmitted(t, tk, "b")
	if tk.Admitted[0].Admission.ID == id {
		t.Fatal("admission ids repeat")
	}
}

func testBatch(t *testing.T, h Harness) {
	put(t, h, "r", cfg(100))
	join(t, h, "r", names("v", 25)...)
	tk, err := h.Rooms.Admit(ctx, "r", 10)
	if err != nil || len(tk.Admitted) != 10 || !tk.More || tk.Waiting != 15 {
		t.Fatalf("Admit(max 10) = %d admitted, more %v, %d still waiting, %v", len(tk.Admitted), tk.More, tk.Waiting, err)
	}
	tk, _ = h.Rooms.Admit(ctx, "r", 15)
	if len(tk.Admitted) != 15 || tk.More || tk.Waiting != 0 {
		t.Fatalf("second batch = %d admitted, more %v, %d still waiting", len(tk.Admitted), tk.More, tk.Waiting)
	}
}

// testConcurrency races 2,000 visitors against the admission step and releases: admissions never exceed
// capacity, follow join order exactly, and nobody is admitted twice.
func testConcurrency(t *testing.T, h Harness) {
	const visitors, capacity = 2000, 50
	put(t, h, "r", cfg(capacity))
	var (
		joinMu    sync.Mutex
		joinOrder []string
		wg        sync.WaitGroup
		joined    atomic.Int64
	)
	for i, v := range names("v", visitors) {
		who := someone(v)
		if i%2 == 0 {
			who = arrival("r", v)
		}
		wg.Go(func() {
			joinMu.Lock() // defines the join order the admissions must follow
			_, err := h.Rooms.Join(ctx, "r", who)
			joinOrder = append(joinOrder, v)
			joinMu.Unlock()
			if err != nil {
				t.Error(err)
			}
			joined.Add(1)
			_, _ = h.Rooms.Status(ctx, "r", v)
		})
	}
	var admitted []string
	seen := map[string]bool{}
	for len(admitted) < visitors {
		// Read before the step: once every join has returned, an empty line in this step's stats is
		// final. Read after, a join landing between the stats and the count would be missed.
		allJoined := joined.Load() == visitors
		tk, err := h.Rooms.Admit(ctx, "r", 20)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := h.Rooms.Stats(ctx, "r")
		if st.Active > capacity {
			t.Fatalf("%d active, capacity %d", st.Active, capacity)
		}
		for _, a := range tk.Admitted {
			if seen[a.Visitor] {
				t.Fatalf("%s admitted twice", a.Visitor)
			}
			seen[a.Visitor] = true
			admitted = append(admitted, a.Visitor)
			wg.Go(func() { // releases race the next admission step
				if err := h.Rooms.Release(ctx, "r", a.Visitor, a.Admission.ID); err != nil {
					t.Error(err)
				}
			})
		}
		if len(tk.Admitted) == 0 && allJoined && st.Waiting == 0 {
			break
		}
	}
	wg.Wait()
	if !slices.Equal(admitted, joinOrder) {
		t.Fatalf("admission order differs from join order (%d admitted)", len(admitted))
	}
}

// testJoinCrowd sends a crowd of joins, twin joins and status reads at once, as a backend that combines
// concurrent requests would see them: every visitor gets one place, the places are exactly 1..N, a
// visitor joining twice at once is told one place both times, a later join or status read answers no
// later place, and the line is admitted in the order of the places handed out.
func testJoinCrowd(t *testing.T, h Harness) {
	const visitors = 600
	put(t, h, "r", cfg(visitors))
	crowd := names("c", visitors)
	places := make([]int64, visitors)
	twins := make([]int64, visitors)
	start := make(chan struct{})
	var wg sync.WaitGroup
	joinAt := func(e room.Entrant, at *int64) {
		<-start
		st, err := h.Rooms.Join(ctx, "r", e)
		if err != nil || st.State != room.StateWaiting {
			t.Errorf("Join(%+v) = %+v, %v", e, st, err)
			return
		}
		*at = st.Position
	}
	for i, v := range crowd {
		// Visitors 0, 1 and 2 of every four arrive (their first join issues their token), visitor 3
		// has a token naming no origin and joins twice at once.
		first := arrival("r", v)
		if i%4 == 3 {
			first = someone(v)
			wg.Go(func() { joinAt(first, &twins[i]) })
		}
		wg.Go(func() {
			joinAt(first, &places[i])
			again := func(st room.Status, err error) {
				if err != nil || st.State != room.StateWaiting || st.Position > places[i] {
					t.Errorf("%s again: %+v, %v; joined at %d", v, st, err, places[i])
				}
			}
			switch i % 4 { // nobody leaves or is admitted meanwhile, so a place can only stay
			case 0:
				again(h.Rooms.Join(ctx, "r", from("r", v)))
			case 1:
				again(h.Rooms.Status(ctx, "r", v))
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	byPlace := make([]string, visitors)
	for i, p := range places {
		if p < 1 || p > visitors || byPlace[p-1] != "" {
			t.Fatalf("%s got place %d, which is out of range or taken", crowd[i], p)
		}
		if twins[i] != 0 && twins[i] != p {
			t.Fatalf("%s joined twice at once and was told places %d and %d", crowd[i], p, twins[i])
		}
		byPlace[p-1] = crowd[i]
	}
	wantStats(t, h, "r", visitors, 0)
	if got := admittedNames(admit(t, h, "r")); !slices.Equal(got, byPlace) {
		t.Fatalf("admitted %d of %d, or in an order other than the places handed out", len(got), visitors)
	}
}

// testRacingGates runs three admission steps at once at every instant, as the gates of three instances
// would: the rate holds in every window, capacity is never exceeded, nobody is admitted twice, and the
// line is served in order.
func testRacingGates(t *testing.T, h Harness) {
	const admits, capacity, steps = 5, 4, 60
	c := cfg(capacity)
	c.Rate = &room.Rate{Admits: admits, Per: rushgate.Duration(time.Second)}
	c.IdleTimeout = rushgate.Duration(time.Hour)
	put(t, h, "r", c)
	order := names("v", 100)
	join(t, h, "r", order...)
	var admitted []string
	perStep := make([]int, steps)
	for step := range steps {
		h.Advance(100 * time.Millisecond)
		var mu sync.Mutex
		var wg sync.WaitGroup
		var got []room.Admitted
		for range 3 {
			wg.Go(func() {
				tk, err := h.Rooms.Admit(ctx, "r", 100)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, tk.Admitted...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if st, _ := h.Rooms.Stats(ctx, "r"); st.Active > capacity {
			t.Fatalf("step %d: %d active, capacity %d", step, st.Active, capacity)
		}
		slices.SortFunc(got, func(a, b room.Admitted) int { return strings.Compare(a.Visitor, b.Visitor) })
		for _, a := range got {
			admitted = append(admitted, a.Visitor)
			if step%3 == 0 { // release some, so capacity frees and rate becomes the binding limit
				_ = h.Rooms.Release(ctx, "r", a.Visitor, a.Admission.ID)
			}
		}
		perStep[step] = len(got)
		window := 0
		for i := max(0, step-9); i <= step; i++ {
			window += perStep[i]
		}
		if window > admits {
			t.Fatalf("step %d: %d admissions within one second, rate %d/s", step, window, admits)
		}
	}
	if len(admitted) == 0 || !slices.Equal(admitted, order[:len(admitted)]) {
		t.Fatalf("admitted %v, want a prefix of the line in order", admitted)
	}
}

// testWaitingElsewhere: a join without Switch never takes a visitor out of another room's line; it is
// refused with *ElsewhereError naming that room, and changes nothing. With Switch the visitor moves.
// An admission held elsewhere, or a line left, is no obstacle.
func testWaitingElsewhere(t *testing.T, h Harness) {
	for _, id := range []string{"a", "b", "c"} {
		put(t, h, id, cfg(1))
	}
	join(t, h, "a", "first") // holds a's only slot once admitted, so the others wait
	admit(t, h, "a")
	refused := func(id string, e room.Entrant, in string) {
		t.Helper()
		_, err := h.Rooms.Join(ctx, id, e)
		var ee *room.ElsewhereError
		if !errors.As(err, &ee) || ee.Room != in {
			t.Fatalf("Join(%s, %+v) = %v; want *ElsewhereError naming %s", id, e, err, in)
		}
		if st := status(t, h, in, e.Visitor); st.State != room.StateWaiting {
			t.Fatalf("%s after a refused join: %+v in %s; want still waiting there", e.Visitor, st, in)
		}
		if st := status(t, h, id, e.Visitor); st.State != room.StateNone {
			t.Fatalf("%s after a refused join: %+v in %s; want nothing there", e.Visitor, st, id)
		}
	}
	// A visitor whose token was issued in a, and one whose token names no room.
	if _, err := h.Rooms.Join(ctx, "a", arrival("a", "v")); err != nil {
		t.Fatal(err)
	}
	join(t, h, "a", "w")
	refused("b", room.Entrant{Visitor: "v", Origin: "a"}, "a")
	refused("b", room.Entrant{Visitor: "w"}, "a")
	// A room that does not exist is not one to be told to switch to, nor one to switch to: a switch
	// there leaves the visitor where it waits, and a later join is still told so.
	for _, e := range []room.Entrant{{Visitor: "v", Origin: "a"}, {Visitor: "w"}} {
		if _, err := h.Rooms.Join(ctx, "nowhere", e); !errors.Is(err, room.ErrNotFound) {
			t.Fatalf("Join(nowhere, %+v) while waiting in a = %v; want ErrNotFound", e, err)
		}
		e.Switch = true
		if _, err := h.Rooms.Join(ctx, "nowhere", e); !errors.Is(err, room.ErrNotFound) {
			t.Fatalf("Join(nowhere, %+v) with a switch while waiting in a = %v; want ErrNotFound", e, err)
		}
		e.Switch = false
		refused("b", e, "a")
	}
	// Joining the line one waits in needs no switch and keeps the place.
	if st, err := h.Rooms.Join(ctx, "a", room.Entrant{Visitor: "v", Origin: "a"}); err != nil || st.Position != 1 {
		t.Fatalf("joining its own line again: %+v %v", st, err)
	}
	// With Switch the visitor moves; then its old room is the one a join elsewhere would leave.
	if st, err := h.Rooms.Join(ctx, "b", room.Entrant{Visitor: "v", Origin: "a", Switch: true}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("switching to b: %+v %v", st, err)
	}
	refused("a", room.Entrant{Visitor: "v", Origin: "a"}, "b")
	refused("c", room.Entrant{Visitor: "v", Origin: "a"}, "b")
	// An admission is not a place in a line: once admitted in b, v may join c without switching.
	join(t, h, "b", "x")
	if tk := admit(t, h, "b"); len(tk.Admitted) != 1 || tk.Admitted[0].Visitor != "v" {
		t.Fatalf("admitting v in b: %+v", tk)
	}
	if st, err := h.Rooms.Join(ctx, "c", room.Entrant{Visitor: "v", Origin: "a"}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("joining c while admitted in b: %+v %v", st, err)
	}
	// A switch to the room that admitted it takes no place there, so it leaves no line: v still waits in
	// c, and a join elsewhere is still told so (on Cluster such a switch once left c out of the lines
	// the next join checked, and the next join of a third room, a link opened, took v out of c).
	if st, err := h.Rooms.Join(ctx, "b", room.Entrant{Visitor: "v", Origin: "a", Switch: true}); err != nil || st.State != room.StateAdmitted {
		t.Fatalf("switching to b while admitted there: %+v %v", st, err)
	}
	refused("a", room.Entrant{Visitor: "v", Origin: "a"}, "c")
	// A line left is no obstacle either.
	if _, err := h.Rooms.Leave(ctx, "a", "w"); err != nil {
		t.Fatal(err)
	}
	if st, err := h.Rooms.Join(ctx, "b", room.Entrant{Visitor: "w"}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("joining b after leaving a: %+v %v", st, err)
	}
}
