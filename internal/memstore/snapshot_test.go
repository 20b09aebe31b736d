package memstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
)

// TestSaveLoad saves the lines and admissions of a store in the middle of its work and loads them into
// a fresh store holding the same rooms, as a restart of the embedded backend does: every visitor reads
// the same status as before, a visitor in the pre-queue keeps its draw, admission ids go on without
// repeating, and the line is admitted on in the same order.
func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	opens := c.Now().Add(time.Hour)
	cfgs := map[string]room.Config{
		"sale": {Capacity: 3, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(2 * time.Minute)},
		// Its waiters wait for the opening an hour away without showing presence: an idle timeout of
		// two hours keeps them.
		"early": {Capacity: 3, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(2 * time.Hour), OpensAt: &opens},
		"empty": {Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(2 * time.Minute)},
	}
	a := memstore.NewRooms(memstore.Options{Clock: c.Now})
	for id, cfg := range cfgs {
		if err := a.PutRoom(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
	}
	visitors := map[string][]string{}
	for i := range 10 {
		for _, id := range []string{"sale", "early"} {
			v := fmt.Sprintf("%s-%d", id, i)
			if _, err := a.Join(ctx, id, room.Entrant{Visitor: v, Switch: true}); err != nil {
				t.Fatal(err)
			}
			visitors[id] = append(visitors[id], v)
		}
	}
	if _, err := a.Join(ctx, "early", room.Entrant{Visitor: "sale-9", Switch: true}); err != nil { // moves from sale to early
		t.Fatal(err)
	}
	visitors["early"] = append(visitors["early"], "sale-9")
	if _, err := a.Admit(ctx, "sale", 2); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Status(ctx, "sale", "sale-0"); err != nil || !st.Admission.Collected { // collects
		t.Fatalf("sale-0: %+v %v", st, err)
	}
	c.Advance(30 * time.Second)

	all := func(s *memstore.Rooms) map[string]room.Status {
		out := map[string]room.Status{}
		for id, vs := range visitors {
			for _, v := range vs {
				st, err := s.Status(ctx, id, v)
				if err != nil {
					t.Fatal(err)
				}
				out[id+"/"+v] = st
			}
		}
		return out
	}
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	before := all(a) // after saving: sale-1's admission is collected here, and below after loading

	b := memstore.NewRooms(memstore.Options{Clock: c.Now})
	for id, cfg := range cfgs {
		b.Restore(id, cfg)
	}
	b.Restore("new", cfgs["empty"])
	if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	after := all(b)
	for k, want := range before {
		if got := after[k]; got != want {
			t.Errorf("%s: %+v after loading, %+v before", k, got, want)
		}
	}
	if before["sale/sale-9"].State != room.StateNone || before["early/sale-9"].State != room.StateWaiting {
		t.Fatalf("the moved visitor: %+v / %+v", before["sale/sale-9"], before["early/sale-9"])
	}
	for _, id := range []string{"sale", "early", "empty"} {
		sa, _ := a.Stats(ctx, id)
		sb, _ := b.Stats(ctx, id)
		if sa != sb {
			t.Errorf("%s stats %+v after loading, %+v before", id, sb, sa)
		}
	}
	if err := b.Load(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("loaded twice into the same rooms")
	}

	// Both stores go on alike: the same visitors next, with the same new admission ids.
	ta, _ := a.Admit(ctx, "sale", 5)
	tb, _ := b.Admit(ctx, "sale", 5)
	if fmt.Sprint(ta.Admitted) != fmt.Sprint(tb.Admitted) || len(tb.Admitted) != 1 {
		t.Fatalf("next admissions: %+v after loading, %+v without", tb.Admitted, ta.Admitted)
	}
	c.Advance(opens.Sub(c.Now()))
	ta, _ = a.Admit(ctx, "early", 3)
	tb, _ = b.Admit(ctx, "early", 3)
	if fmt.Sprint(ta.Admitted) != fmt.Sprint(tb.Admitted) || len(tb.Admitted) != 3 {
		t.Fatalf("pre-queue admissions: %+v after loading, %+v without", tb.Admitted, ta.Admitted)
	}
}

// TestLoadCountsAsPresence checks that the downtime does not count as idleness: a waiter restored
// after being quiet for most of the idle timeout has a whole timeout again.
func TestLoadCountsAsPresence(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	cfg := room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(2 * time.Minute), Paused: true}
	a := memstore.NewRooms(memstore.Options{Clock: c.Now})
	_ = a.PutRoom(ctx, "r", cfg)
	_, _ = a.Join(ctx, "r", room.Entrant{Visitor: "v", Switch: true})
	c.Advance(110 * time.Second)
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	b := memstore.NewRooms(memstore.Options{Clock: c.Now})
	b.Restore("r", cfg)
	if err := b.Load(&buf); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if tk, _ := b.Admit(ctx, "r", 10); len(tk.Idle) != 0 {
		t.Fatalf("idle %v a minute after loading", tk.Idle)
	}
	c.Advance(time.Minute)
	if tk, _ := b.Admit(ctx, "r", 10); len(tk.Idle) != 1 {
		t.Fatalf("idle %v two minutes after loading", tk.Idle)
	}
}

// FuzzLoad feeds damaged lines files to Load: it may refuse them, but must not panic, and a store that
// loaded one must still answer and admit.
func FuzzLoad(f *testing.F) {
	ctx := context.Background()
	cfg := room.Config{Capacity: 2, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(time.Minute)}
	src := memstore.NewRooms(memstore.Options{})
	_ = src.PutRoom(ctx, "r", cfg)
	for _, v := range []string{"a", "b", "c", "d"} {
		_, _ = src.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true})
	}
	_, _ = src.Admit(ctx, "r", 1)
	var buf bytes.Buffer
	if err := src.Save(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := memstore.NewRooms(memstore.Options{})
		s.Restore("r", cfg)
		if err := s.Load(bytes.NewReader(data)); err != nil {
			return
		}
		for _, v := range []string{"a", "b", "z"} {
			if _, err := s.Status(ctx, "r", v); err != nil {
				t.Fatalf("status after loading: %v", err)
			}
		}
		if _, err := s.Join(ctx, "r", room.Entrant{Visitor: "new", Switch: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Admit(ctx, "r", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stats(ctx, "r"); err != nil {
			t.Fatal(err)
		}
	})
}
