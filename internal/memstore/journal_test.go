package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// crash ends a backend as kill -9 would once its journal was written: the writer stops (flushing what
// it buffered, which an everysec writer would have done within a second) and nothing is compacted.
func crash(b *Backend) {
	close(b.stop)
	<-b.done
	b.j.fmu.Lock()
	b.j.f.Close()
	b.j.f = nil
	b.j.fmu.Unlock()
}

// journalFixture opens a backend over a fresh data directory with room r (capacity 2, session an hour).
func journalFixture(t *testing.T) (string, *record.DB, *Backend) {
	t.Helper()
	dir := t.TempDir()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(dir, "records.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b, err := Open(context.Background(), db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cfg := room.Config{Capacity: 2, SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}
	if err := b.Rooms().PutRoom(context.Background(), "r", cfg); err != nil {
		t.Fatal(err)
	}
	return dir, db, b
}

// reopen crashes b (no graceful save) and opens the backend again on the same data, as a restart
// after a kill -9 does; the test's end crashes the new one.
func reopen(t *testing.T, dir string, db *record.DB, b *Backend) *Backend {
	t.Helper()
	crash(b)
	b2, err := Open(context.Background(), db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(b2) })
	return b2
}

// lineOf reads every visitor's standing in room r.
func lineOf(t *testing.T, rooms *Rooms, visitors []string) []room.Status {
	t.Helper()
	out := make([]room.Status, len(visitors))
	for i, v := range visitors {
		var err error
		if out[i], err = rooms.Status(context.Background(), "r", v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestJournalKeepsLinesAcrossACrash: after joins, admissions, a collected admission, a leave and a
// release, a crash (no graceful save) and a start on the same data give every visitor the same
// standing: the same place in the same order, the same admission id and expiry. A second crash
// right after the restart changes nothing either: the start compacted the journal into a snapshot.
func TestJournalKeepsLinesAcrossACrash(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	rooms := b.Rooms()
	var visitors []string
	for i := range 12 {
		v := fmt.Sprintf("v%02d", i)
		visitors = append(visitors, v)
		if _, err := rooms.Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rooms.Admit(ctx, "r", 2); err != nil { // v00 and v01
		t.Fatal(err)
	}
	if _, err := rooms.Status(ctx, "r", "v00"); err != nil { // collects its admission
		t.Fatal(err)
	}
	if _, err := rooms.Leave(ctx, "r", "v05"); err != nil {
		t.Fatal(err)
	}
	st, _ := rooms.Status(ctx, "r", "v01")
	if err := rooms.Release(ctx, "r", "v01", st.Admission.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rooms.Admit(ctx, "r", 1); err != nil { // v02 takes the freed place
		t.Fatal(err)
	}
	want := lineOf(t, rooms, visitors)
	crash(b)

	for range 2 {
		b2, err := Open(ctx, db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		got := lineOf(t, b2.Rooms(), visitors)
		for i := range want {
			if got[i].State != want[i].State || got[i].Position != want[i].Position || got[i].Admission.ID != want[i].Admission.ID ||
				!got[i].Admission.ExpiresAt.Equal(want[i].Admission.ExpiresAt) {
				t.Fatalf("%s after the crash: %+v, before: %+v", visitors[i], got[i], want[i])
			}
		}
		crash(b2)
	}
}

// TestJournalRoomDeleted: a room deleted and created again under its id before a crash comes back
// with the line it had after it was created again, not with the deleted room's.
func TestJournalRoomDeleted(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	cfg, _ := b.Rooms().Room(ctx, "r")
	for _, v := range []string{"old1", "old2"} {
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Rooms().Admit(ctx, "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Rooms().DeleteRoom(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if err := b.Rooms().PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: "new", New: true}); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, dir, db, b)
	got := lineOf(t, b2.Rooms(), []string{"old1", "old2", "new"})
	if got[0].State != room.StateNone || got[1].State != room.StateNone || got[2].Position != 1 {
		t.Fatalf("after a crash: %+v, want only the visitor of the room created again", got)
	}
	// Its figures are the new room's too, not the deleted one's added to them.
	if st, err := b2.Rooms().Stats(ctx, "r"); err != nil || st.JoinedTotal != 1 || st.AdmittedTotal != 0 {
		t.Fatalf("the room's figures after a crash: %+v %v, want one join and no admission", st, err)
	}
}

// TestJournalAdmissionIDsStayUnique: admissions made after the last snapshot and replayed from the
// journal after a crash are followed by admissions with new ids, never theirs again: an id is the
// admission token's jti, which a release or a spent token is checked against.
func TestJournalAdmissionIDsStayUnique(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	crash(b)
	b, err := Open(ctx, db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler)) // its start saves room r in a snapshot
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	admit := func(rooms *Rooms, v string) {
		t.Helper()
		if _, err := rooms.Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := rooms.Admit(ctx, "r", 1); err != nil {
			t.Fatal(err)
		}
		st, err := rooms.Status(ctx, "r", v)
		if err != nil || st.State != room.StateAdmitted {
			t.Fatalf("%s: %+v %v", v, st, err)
		}
		if other, ok := ids[st.Admission.ID]; ok {
			t.Fatalf("%s admitted under %s, the id of %s's admission", v, st.Admission.ID, other)
		}
		ids[st.Admission.ID] = v
		if err := rooms.Release(ctx, "r", v, st.Admission.ID); err != nil {
			t.Fatal(err)
		}
	}
	admit(b.Rooms(), "before1")
	admit(b.Rooms(), "before2")
	b2 := reopen(t, dir, db, b) // replays the two from the journal
	admit(b2.Rooms(), "after1")
	admit(b2.Rooms(), "after2")
}

// TestJournalTornTail: a journal cut in the middle of a record, or ending in garbage, loses only that
// record; the start warns and goes on.
func TestJournalTornTail(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	for _, v := range []string{"a", "b", "c"} {
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	crash(b)
	path := filepath.Join(dir, "lines.journal")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last record (c's join) short, then add garbage after it.
	torn := append(data[:len(data)-3:len(data)-3], []byte("\xff\x00garbage")...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(ctx, db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer crash(b2)
	got := lineOf(t, b2.Rooms(), []string{"a", "b", "c"})
	if got[0].Position != 1 || got[1].Position != 2 || got[2].State != room.StateNone {
		t.Fatalf("after a torn journal: %+v, want a and b waiting and c's join lost", got)
	}
}

// FuzzJournal replays arbitrary bytes as a journal of the right generation: never a panic, and what
// it calls good is never more than what it read.
func FuzzJournal(f *testing.F) {
	var j journal
	j.record(recHeader, int64(1))
	j.record(recJoin, "r", "v", false, int64(0))
	j.record(recAdmit, "r", "v", "e.1", int64(5), int64(1))
	j.record(recCollect, "r", "v", int64(9))
	j.record(recEnd, "r", "v")
	j.record(recGone, "r", "w")
	j.record(recAdmit, "r", "w", "e.2", int64(5), int64(2), int64(1)) // with the window's cut
	j.record(recGone, "r", "x", true)                                 // an idle waiter
	j.record(recEnd, "r", "w", true)                                  // a lapsed admission
	j.record(recSpend, "solution", int64(30000000))
	j.record(recDelete, "r", "")
	f.Add(j.buf)
	f.Add(j.buf[:len(j.buf)-2])
	f.Fuzz(func(t *testing.T, data []byte) {
		rooms := NewRooms(Options{})
		rooms.gen, rooms.spent = 1, NewSpent(nil)
		rooms.Restore("r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)})
		good, _ := rooms.replay(bytes.NewReader(data))
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("good %d of %d bytes", good, len(data))
		}
	})
}

// TestJournalCompactsWhileServing: past its size limit the journal is compacted by its writer while
// visitors keep joining; a crash afterwards brings back every place, from the new snapshot and the
// new, small journal.
func TestJournalCompactsWhileServing(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	close(b.stop) // this test is the writer: it ticks faster, and compacts sooner
	<-b.done
	b.compactAt = 2 << 10 // a few dozen records
	var visitors []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the writer's work, a tick at a time, while the crowd joins
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if err := b.j.flush(); err != nil {
				t.Error(err)
			}
			if b.j.size >= b.compactAt {
				if err := b.compact(); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	gen := b.rooms.gen
	for i := range 600 {
		v := fmt.Sprintf("v%03d", i)
		visitors = append(visitors, v)
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stop)
	<-done
	if b.rooms.gen-gen < 2 {
		t.Fatalf("the journal was compacted %d times, want several", b.rooms.gen-gen)
	}
	want := lineOf(t, b.Rooms(), visitors)
	if err := b.j.flush(); err != nil { // as the writer's next tick would
		t.Fatal(err)
	}
	b.j.f.Close() // the crash: no compaction at a stop
	if fi, err := os.Stat(filepath.Join(dir, "lines.journal")); err != nil || fi.Size() > 8<<10 {
		t.Fatalf("journal after compactions: %v %v", fi, err)
	}
	b2, err := Open(ctx, db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer crash(b2)
	got := lineOf(t, b2.Rooms(), visitors)
	for i := range want {
		if got[i].Position != want[i].Position || got[i].State != want[i].State {
			t.Fatalf("%s after the crash: %+v, before: %+v", visitors[i], got[i], want[i])
		}
	}
}

// TestJournalWriteFailureRetried: a write that fails leaves no torn record behind and is retried
// whole at the next flush, so the records after it are not lost.
func TestJournalWriteFailureRetried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	var j journal
	j.record(recHeader, int64(1))
	j.record(recJoin, "r", "a", false, int64(0))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	j.f = f
	if err := j.flush(); err != nil {
		t.Fatal(err)
	}
	j.record(recJoin, "r", "b", false, int64(0))
	ro, err := os.Open(path) // writes to a read-only descriptor fail, as on a full disk
	if err != nil {
		t.Fatal(err)
	}
	j.f = ro
	if err := j.flush(); err == nil {
		t.Fatal("a write to a read-only file succeeded")
	}
	ro.Close()
	j.f = f
	j.record(recJoin, "r", "c", false, int64(0))
	if err := j.flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rooms := NewRooms(Options{})
	rooms.gen = 1
	rooms.Restore("r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)})
	data, _ := os.ReadFile(path)
	if _, err := rooms.replay(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got := lineOf(t, rooms, []string{"a", "b", "c"})
	if got[0].Position != 1 || got[1].Position != 2 || got[2].Position != 3 {
		t.Fatalf("after a failed write and its retry: %+v, want a, b, c in order", got)
	}
}

// TestDeletedAuctionNumberingOutlivesARestart: an auction deleted without bids, then created again
// under its id after a restart, numbers its events on after the deleted one's, as it does without the
// restart (and on Redis): an event stream resuming after the deleted auction's last event would
// otherwise miss the new one's first events, or be told it had ended.
func TestDeletedAuctionNumberingOutlivesARestart(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	now := time.Now()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(50 * time.Millisecond)}
	if err := b.Auctions().Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	o, err := b.Auctions().Close(ctx, "a") // an event, and no bids
	if err != nil || len(o.Events) != 1 {
		t.Fatalf("ending: %+v %v", o, err)
	}
	if err := b.Auctions().Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, dir, db, b)
	if _, err := b2.Auctions().Get(ctx, "a"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("the deleted auction after a restart: %v", err)
	}
	cfg.EndsAt = time.Now().Add(time.Hour)
	if err := b2.Auctions().Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	bid, err := b2.Auctions().Bid(ctx, "a", "", auction.Bid{Bidder: "x", Max: 500})
	if err != nil || len(bid.Events) != 1 || bid.Events[0].Seq != o.Events[0].Seq+1 {
		t.Fatalf("the first bid of the auction created again: %+v %v; want event %d", bid.Events, err, o.Events[0].Seq+1)
	}
}

// TestOutbidBiddersOutliveARestart: a bidder whose bid was taken but outbid at once by the leader's
// maximum is named by no event, only the leader is; after a restart it still counts as a bidder of
// the auction (the README promises GET /v1/auctions/{id}/me says so, "also one outbid at once"), as
// it does before the restart and on Redis. Counted from the events alone, it was forgotten.
func TestOutbidBiddersOutliveARestart(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	now := time.Now()
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}
	if err := b.Auctions().Put(ctx, "a", cfg); err != nil {
		t.Fatal(err)
	}
	for _, bid := range []auction.Bid{{Bidder: "lead", Max: 500}, {Bidder: "outbid", Max: 300}, {Bidder: "outbid", Max: 400}} {
		o, err := b.Auctions().Bid(ctx, "a", "", bid)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range o.Events {
			if bid.Bidder == "outbid" && e.Bidder == "outbid" {
				t.Fatalf("an event names the bidder outbid at once: %+v; the test wants one that does not", o.Events)
			}
		}
	}
	b2 := reopen(t, dir, db, b)
	if ok, err := b2.Auctions().HasBidder(ctx, "a", "outbid"); err != nil || !ok {
		t.Fatalf("the bidder outbid at once, after a restart: %v %v", ok, err)
	}
	if n, err := b2.Auctions().Bidders(ctx, "a"); err != nil || n != 2 {
		t.Fatalf("bidders after a restart: %d %v, want 2", n, err)
	}
}

// TestJournalRateCountsWhatItCounted: an admission made while the room had no rate, replayed after a
// crash into a room that has one now, does not count toward its rate: without the crash it did not
// (nor on Redis), and the next visitor was let in at once, not an hour later.
func TestJournalRateCountsWhatItCounted(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: "early", New: true}); err != nil {
		t.Fatal(err)
	}
	if tk, err := b.Rooms().Admit(ctx, "r", 1); err != nil || len(tk.Admitted) != 1 {
		t.Fatalf("admitting under capacity alone: %+v %v", tk, err)
	}
	cfg, _ := b.Rooms().Room(ctx, "r")
	cfg.Capacity, cfg.Rate = 0, &room.Rate{Admits: 1, Per: rushgate.Duration(time.Hour)}
	if err := b.Rooms().PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, dir, db, b)
	if _, err := b2.Rooms().Join(ctx, "r", room.Entrant{Visitor: "next", New: true}); err != nil {
		t.Fatal(err)
	}
	if tk, err := b2.Rooms().Admit(ctx, "r", 1); err != nil || len(tk.Admitted) != 1 {
		t.Fatalf("the first admission under the new rate, after a crash: %+v %v", tk, err)
	}
}

// TestJournalSwitchToADeletedRoom: a visitor who moved from one line to another room's, which was
// deleted afterwards, is out of the first line after a crash too. The replay skips the join of a room
// that no longer exists, and the move out of the first line went with it: the visitor was back there.
func TestJournalSwitchToADeletedRoom(t *testing.T) {
	dir, db, b := journalFixture(t)
	ctx := context.Background()
	cfg, _ := b.Rooms().Room(ctx, "r")
	cfg.Capacity = 1
	if err := b.Rooms().PutRoom(ctx, "full", cfg); err != nil {
		t.Fatal(err)
	}
	if err := b.Rooms().PutRoom(ctx, "other", cfg); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"in", "moves"} { // in is let in; moves waits
		if _, err := b.Rooms().Join(ctx, "full", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Rooms().Admit(ctx, "full", 1); err != nil {
			t.Fatal(err)
		}
	}
	crash(b)
	b, err := Open(ctx, db, dir, record.FsyncAlways, slog.New(slog.DiscardHandler)) // a snapshot with moves waiting in full
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Rooms().Join(ctx, "other", room.Entrant{Visitor: "moves", Switch: true}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("moving to the other room: %+v %v", st, err)
	}
	if err := b.Rooms().DeleteRoom(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, dir, db, b)
	if st, err := b2.Rooms().Status(ctx, "full", "moves"); err != nil || st.State != room.StateNone {
		t.Fatalf("the visitor who moved out of the line, after a crash: %+v %v; want it out", st, err)
	}
}

// clockedFixture opens a backend over a fresh data directory on a clock the test moves, with room r
// (cfg); reopen crashes it and returns it opened again on the same clock.
func clockedFixture(t *testing.T, cfg room.Config) (b *Backend, now *time.Time, reopen func() *Backend) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := record.OpenSQLite(ctx, filepath.Join(dir, "records.db"), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now = &at
	clock := func() time.Time { return *now }
	openIt := func() {
		if b, err = open(ctx, db, dir, record.FsyncNo, slog.New(slog.DiscardHandler), clock); err != nil {
			t.Fatal(err)
		}
	}
	openIt()
	t.Cleanup(func() { crash(b) })
	if err := b.Rooms().PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	return b, now, func() *Backend { crash(b); openIt(); return b }
}

// TestJournalKeepsIdleAndLapsedCounts: the room's counts of waiters gone idle and of admissions left
// uncollected, which the console shows, are the same after a crash. The journal said only that a
// visitor was out of the line or its admission over, and the replay counted neither.
func TestJournalKeepsIdleAndLapsedCounts(t *testing.T) {
	ctx := context.Background()
	b, now, reopen := clockedFixture(t, room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour),
		Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(time.Minute)})
	for _, v := range []string{"first", "idle"} {
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	if tk, err := b.Rooms().Admit(ctx, "r", 10); err != nil || len(tk.Admitted) != 1 { // first, never collected
		t.Fatalf("admitting the first: %+v %v", tk, err)
	}
	*now = now.Add(2 * time.Minute)
	if tk, err := b.Rooms().Admit(ctx, "r", 10); err != nil || len(tk.Expired) != 1 || len(tk.Idle) != 1 {
		t.Fatalf("two minutes later: %+v %v", tk, err)
	}
	want, _ := b.Rooms().Stats(ctx, "r")
	b = reopen()
	if got, _ := b.Rooms().Stats(ctx, "r"); got != want || got.IdleTotal != 1 || got.GraceTotal != 1 {
		t.Fatalf("after a crash %+v, before %+v", got, want)
	}
}

// TestJournalKeepsTheRateWindow: after a crash the rate window holds what it held, not the admissions
// an admission since had aged out of it. The replay put those back, and a rate changed to a longer
// window then counted them: fewer visitors were let in than before the crash.
func TestJournalKeepsTheRateWindow(t *testing.T) {
	ctx := context.Background()
	cfg := room.Config{SessionTTL: rushgate.Duration(time.Hour), Grace: rushgate.Duration(time.Hour),
		IdleTimeout: rushgate.Duration(time.Hour), Rate: &room.Rate{Admits: 1, Per: rushgate.Duration(10 * time.Second)}}
	b, now, reopen := clockedFixture(t, cfg)
	admit := func(v string) room.Tick {
		t.Helper()
		if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: v, New: true}); err != nil {
			t.Fatal(err)
		}
		tk, err := b.Rooms().Admit(ctx, "r", 10)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	b = reopen() // from a snapshot that holds the window, as every start compacts
	if tk := admit("old"); len(tk.Admitted) != 1 {
		t.Fatalf("the first admission: %+v", tk)
	}
	b = reopen()
	*now = now.Add(11 * time.Second)
	if tk := admit("recent"); len(tk.Admitted) != 1 { // "old" ages out of the window
		t.Fatalf("the second admission: %+v", tk)
	}
	cfg.Rate = &room.Rate{Admits: 2, Per: rushgate.Duration(time.Minute)}
	if err := b.Rooms().PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	b = reopen()
	if tk := admit("next"); len(tk.Admitted) != 1 {
		t.Fatalf("under two a minute, with one admission counted, after a crash: %+v", tk)
	}
}

// TestSpentOutlivesARestart: a challenge's solution used before a crash or a stop is still used after
// it, until it expires; a restart forgot them all, so that each solution could be used once more.
func TestSpentOutlivesARestart(t *testing.T) {
	ctx := context.Background()
	b, now, reopen := clockedFixture(t, room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour),
		Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)})
	spend := func(id string) bool {
		t.Helper()
		first, err := b.Spent().Spend(ctx, id, now.Add(5*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	if !spend("journaled") {
		t.Fatal("a first spend refused")
	}
	b = reopen() // from the journal
	if spend("journaled") {
		t.Fatal("a solution spent before a crash is spendable again after it")
	}
	if !spend("compacted") {
		t.Fatal("a first spend refused after a restart")
	}
	if err := b.compact(); err != nil { // as a stop does: the spends go into the snapshot
		t.Fatal(err)
	}
	b = reopen()
	if spend("journaled") || spend("compacted") {
		t.Fatal("a solution spent before a compaction and a crash is spendable again after them")
	}
	*now = now.Add(10 * time.Minute)
	b = reopen()
	if !spend("journaled") || !spend("compacted") {
		t.Fatal("an expired spend is remembered after a restart")
	}
}

// TestReleasesOutliveARestart: an admission ended early is still refused by the checks after a crash
// or a stop, until its token expires; a restart forgot them, and the checks, which verify tokens
// offline, let a released token through again.
func TestReleasesOutliveARestart(t *testing.T) {
	ctx := context.Background()
	b, now, reopen := clockedFixture(t, room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour),
		Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)})
	if err := b.Releases().Announce(ctx, "e.1", now.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := b.Releases().Announce(ctx, "e.2", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	heard := func(b *Backend) []string {
		t.Helper()
		lctx, cancel := context.WithCancel(ctx)
		ch := b.Releases().Listen(lctx)
		cancel()
		var ids []string
		for r := range ch { // what was kept, then closed
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		return ids
	}
	b = reopen()
	if got := heard(b); !slices.Equal(got, []string{"e.1", "e.2"}) {
		t.Fatalf("after a crash the checks hear of %v, want e.1 and e.2", got)
	}
	if err := b.compact(); err != nil {
		t.Fatal(err)
	}
	b = reopen()
	*now = now.Add(20 * time.Minute)
	if got := heard(b); !slices.Equal(got, []string{"e.2"}) {
		t.Fatalf("twenty minutes on, after a compaction and a crash, the checks hear of %v, want e.2 alone", got)
	}

	// A listener hears what is announced while it listens.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := b.Releases().Listen(lctx)
	if r := <-ch; r.ID != "e.2" {
		t.Fatalf("heard %+v first, want e.2", r)
	}
	if err := b.Releases().Announce(ctx, "e.3", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.ID != "e.3" {
		t.Fatalf("heard %+v, want e.3", r)
	}
}
