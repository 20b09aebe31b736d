package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

// modeTests specify the queue modes: each changes how a room admits or takes joins, and changing it
// keeps the line.
var modeTests = []check{
	{"Mode/Passthrough", testPassthrough},
	{"Mode/Reject", testReject},
	{"Mode/QueueAll", testQueueAll},
}

func withMode(c room.Config, m room.Mode) room.Config { c.Mode = m; return c }

func testPassthrough(t *testing.T, h Harness) {
	c := cfg(1)
	c.Rate = &room.Rate{Admits: 1, Per: 60_000_000_000}
	put(t, h, "pt", c)
	join(t, h, "pt", "a", "b", "c")
	wantAdmitted(t, admit(t, h, "pt"), "a")
	put(t, h, "pt", withMode(c, room.ModePassthrough)) // the rush is over
	wantAdmitted(t, admit(t, h, "pt"), "b", "c")
	join(t, h, "pt", "d")
	wantAdmitted(t, admit(t, h, "pt"), "d")
	wantStats(t, h, "pt", 0, 4)
}

func testReject(t *testing.T, h Harness) {
	c := cfg(1)
	put(t, h, "rj", c)
	put(t, h, "other", c)
	join(t, h, "rj", "a", "b")
	join(t, h, "other", "x", "c")
	put(t, h, "rj", withMode(c, room.ModeReject))
	if _, err := h.Rooms.Join(ctx, "rj", someone("new")); !errors.Is(err, room.ErrClosed) {
		t.Fatalf("a new join: %v, want ErrClosed", err)
	}
	if _, err := h.Rooms.Join(ctx, "rj", arrival("rj", "fresh")); !errors.Is(err, room.ErrClosed) {
		t.Fatalf("a first join: %v, want ErrClosed", err)
	}
	// A visitor that waits elsewhere and asks to switch is refused too, and keeps its place there.
	if _, err := h.Rooms.Join(ctx, "rj", someone("c")); !errors.Is(err, room.ErrClosed) {
		t.Fatalf("a switch into a rejecting room: %v, want ErrClosed", err)
	}
	if st := status(t, h, "other", "c"); st.State != room.StateWaiting || st.Position != 2 {
		t.Fatalf("c after a refused switch: %+v", st)
	}
	put(t, h, "third", c)
	var elsewhere *room.ElsewhereError
	if _, err := h.Rooms.Join(ctx, "third", room.Entrant{Visitor: "c"}); !errors.As(err, &elsewhere) || elsewhere.Room != "other" {
		t.Fatalf("a join of a third room without switch: %v, want c told it waits in other", err)
	}
	// Those in line keep their places and are admitted as before.
	if st, err := h.Rooms.Join(ctx, "rj", someone("b")); err != nil || st.State != room.StateWaiting || st.Position != 2 {
		t.Fatalf("b joining again: %+v, %v", st, err)
	}
	wantAdmitted(t, admit(t, h, "rj"), "a")
	wantStats(t, h, "rj", 1, 1)
	put(t, h, "rj", c) // fifo again
	join(t, h, "rj", "new")
	wantStats(t, h, "rj", 2, 1)
}

func testQueueAll(t *testing.T, h Harness) {
	c := withMode(cfg(5), room.ModeQueueAll)
	put(t, h, "qa", c)
	join(t, h, "qa", "a", "b")
	if tk := admit(t, h, "qa"); len(tk.Admitted) != 0 {
		t.Fatalf("queue_all admitted %v with free slots", admittedNames(tk))
	}
	opens := h.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	c.OpensAt = &opens
	put(t, h, "qa", c)
	join(t, h, "qa", "c")
	if tk := admit(t, h, "qa"); len(tk.Admitted) != 0 {
		t.Fatalf("queue_all admitted %v before its opening", admittedNames(tk))
	}
	h.Advance(31 * time.Second) // within the idle timeout: all three are still in line
	if tk := admit(t, h, "qa"); len(tk.Admitted) != 3 {
		t.Fatalf("after the opening: admitted %v, want all three", admittedNames(tk))
	}
	put(t, h, "qb", withMode(cfg(5), room.ModeQueueAll))
	join(t, h, "qb", "d")
	put(t, h, "qb", cfg(5)) // an operator lets them in
	wantAdmitted(t, admit(t, h, "qb"), "d")
}
