package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

// stockTests specify rooms that follow a drop's stock: the store's units and sold-out state, and, through
// the room and drop services over the backend, a crowd that never gets more admissions than units.
var stockTests = []check{
	{"Stock/Units", testUnits},
	{"Stock/RestockUnits", testRestockUnits},
	{"Stock/RestockOrder", testRestockOrder},
	{"Stock/DropClosed", testDropClosed},
	{"Stock/DropNotOpen", testDropNotOpen},
	{"Stock/SoldOut", testSoldOut},
	{"Stock/OtherDrop", testOtherDrop},
	{"Stock/Crowd", testStockCrowd},
	{"Stock/Restock", testRestock},
	{"Stock/RestockRace", testRestockRace},
}

// dropD is the drop the rooms of the store-level checks follow: each store step about a drop's
// units names it, and changes a room's units only while the room's config names it too.
const dropD = "d"

// following is c naming drop dropD.
func following(c room.Config) room.Config {
	c.Drop = dropD
	return c
}

// unlink stops a room following its drop, as the room's service does: its config first, then its
// units.
func unlink(t *testing.T, h Harness, id string) {
	t.Helper()
	c, err := h.Rooms.Room(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c.Drop = ""
	put(t, h, id, c)
	if err := h.Rooms.SetUnits(ctx, id, "", level(-1, 0, 0)); err != nil {
		t.Fatal(err)
	}
}

// level is a drop's stock as a room hears of it: units left (-1 unlinks), stock in all, the write.
func level(left, stock int, written int64) rushgate.Level {
	return rushgate.Level{Left: left, Stock: stock, Written: written}
}

func testUnits(t *testing.T, h Harness) {
	put(t, h, "su", following(cfg(10)))
	if err := h.Rooms.SetUnits(ctx, "su", dropD, level(3, 3, 1)); err != nil {
		t.Fatal(err)
	}
	join(t, h, "su", names("v", 5)...)
	tk := admit(t, h, "su")
	if len(tk.Admitted) != 3 || tk.Free != 0 { // seven slots empty, but no unit for them
		t.Fatalf("admitted %v with 3 units, %d slots free", admittedNames(tk), tk.Free)
	}
	a := tk.Admitted[0]
	if _, err := h.Rooms.Hold(ctx, "su", dropD, a.Visitor, "nope"); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("hold with another admission: %v", err)
	}
	if held, err := h.Rooms.Hold(ctx, "su", dropD, a.Visitor, a.Admission.ID); err != nil || !held {
		t.Fatalf("hold: %v %v", held, err)
	}
	if err := h.Rooms.Release(ctx, "su", a.Visitor, a.Admission.ID); err != nil { // its claim is made
		t.Fatal(err)
	}
	if tk := admit(t, h, "su"); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v: 2 units left for 2 admissions", admittedNames(tk))
	}
	b := tk.Admitted[1]
	if held, err := h.Rooms.Hold(ctx, "su", dropD, b.Visitor, b.Admission.ID); err != nil || !held {
		t.Fatalf("hold: %v %v", held, err)
	}
	if err := h.Rooms.Unhold(ctx, "su", dropD); err != nil { // its claim failed: the unit is back
		t.Fatal(err)
	}
	if tk := admit(t, h, "su"); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v: b still holds its admission", admittedNames(tk))
	}
	if err := h.Rooms.Release(ctx, "su", b.Visitor, ""); err != nil { // b leaves without a claim
		t.Fatal(err)
	}
	wantAdmitted(t, admit(t, h, "su"), "v0003")
	unlink(t, h, "su") // capacity alone rules again
	tk = admit(t, h, "su")
	wantAdmitted(t, tk, "v0004")
	if held, err := h.Rooms.Hold(ctx, "su", dropD, "v0004", tk.Admitted[0].Admission.ID); err != nil || held {
		t.Fatalf("hold in an unlinked room: %v %v", held, err)
	}
	if err := h.Rooms.SetUnits(ctx, "none", dropD, level(1, 1, 1)); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("units of an unknown room: %v", err)
	}
}

// testRestockUnits: a room hears its drop's stock anew: its units change by the difference from the
// stock it last heard of, never below none, and the same stock again changes nothing, so that it may be
// told as often as the drop is read; held units given back come back; a room that follows nothing
// stays so.
func testRestockUnits(t *testing.T, h Harness) {
	put(t, h, "au", following(cfg(10)))
	if err := h.Rooms.SetUnits(ctx, "au", dropD, level(1, 1, 10)); err != nil {
		t.Fatal(err)
	}
	join(t, h, "au", names("v", 4)...)
	first := admit(t, h, "au")
	wantAdmitted(t, first, "v0000")
	written := int64(10)
	restock := func(stock int, want bool) {
		t.Helper()
		written++
		if news, err := h.Rooms.Restock(ctx, "au", dropD, level(0, stock, written)); err != nil || news != want {
			t.Fatalf("Restock(%d): news %v, %v; want news %v", stock, news, err, want)
		}
	}
	restock(3, true)
	more := admit(t, h, "au")
	wantAdmitted(t, more, "v0001", "v0002")
	restock(3, false) // heard again: nothing changes
	if tk := admit(t, h, "au"); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v with three units for three admissions", admittedNames(tk))
	}
	hold := func(a room.Admitted) error {
		t.Helper()
		_, err := h.Rooms.Hold(ctx, "au", dropD, a.Visitor, a.Admission.ID)
		return err
	}
	restock(1, true) // 3 - 2: one unit
	if err := hold(first.Admitted[0]); err != nil {
		t.Fatal(err)
	}
	if err := hold(more.Admitted[0]); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("hold with no unit left: %v", err)
	}
	restock(0, true) // 0 - 1: none, not -1
	restock(1, true) // from none
	if err := hold(more.Admitted[0]); err != nil {
		t.Fatalf("hold of the unit restocked: %v", err)
	}
	if err := h.Rooms.Unhold(ctx, "au", dropD); err != nil { // a claim failed: its unit is back
		t.Fatal(err)
	}
	if err := hold(more.Admitted[1]); err != nil {
		t.Fatalf("hold of the unit given back: %v", err)
	}
	unlink(t, h, "au")
	restock(5, false)
	if held, err := h.Rooms.Hold(ctx, "au", dropD, "v0001", more.Admitted[0].Admission.ID); err != nil || held {
		t.Fatalf("hold in a room that follows nothing: %v %v", held, err)
	}
	if _, err := h.Rooms.Restock(ctx, "none", dropD, level(0, 1, 1)); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("units of an unknown room: %v", err)
	}
}

// testRestockOrder: what a room hears of its drop's stock may come out of order (a sampler's read from
// before an operator's change, told after the change was): a stock of a config write before the last
// one heard of changes nothing, one of the same write again nothing either, and a later one counts from
// the stock last heard of.
func testRestockOrder(t *testing.T, h Harness) {
	put(t, h, "ro", following(cfg(1000)))
	if err := h.Rooms.SetUnits(ctx, "ro", dropD, level(5, 10, 100)); err != nil { // 10 in all, 5 claimed
		t.Fatal(err)
	}
	join(t, h, "ro", names("v", 200)...)
	for _, step := range []struct {
		stock   int
		written int64
		news    bool
		units   int // admissions the room then makes with none live
	}{
		{20, 300, true, 15},  // restocked to 20: 10 more
		{10, 200, false, 15}, // read before the restock, told after it
		{10, 100, false, 15}, // the link's own level, told late
		{20, 300, false, 15}, // the same again
		{12, 400, true, 7},   // lowered to 12: 8 fewer
		{25, 400, true, 20},  // a number written twice (another instance's clock): counts still
		{20, 399, false, 20},
	} {
		news, err := h.Rooms.Restock(ctx, "ro", dropD, level(0, step.stock, step.written))
		if err != nil || news != step.news {
			t.Fatalf("Restock(%d, %d): news %v, %v; want news %v", step.stock, step.written, news, err, step.news)
		}
		tk := admit(t, h, "ro")
		if len(tk.Admitted) != step.units {
			t.Fatalf("after Restock(%d, %d): %d admitted, want %d", step.stock, step.written, len(tk.Admitted), step.units)
		}
		for _, a := range tk.Admitted { // they leave without a claim: the units stay
			if err := h.Rooms.Release(ctx, "ro", a.Visitor, a.Admission.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testDropClosed: a room whose drop closes lets nobody in from the closing on, by the store's clock,
// while its steps still expire sessions and idle waiters, and says so; its next step is due at the
// closing. Told the drop opened again (a later write), it admits at once; a level of an earlier write
// told late closes nothing, and an unlinked room is held by no closing.
func testDropClosed(t *testing.T, h Harness) {
	c := following(cfg(1))
	c.IdleTimeout = rushgate.Duration(time.Hour)
	put(t, h, "dc", c)
	closes := h.Now().Add(30 * time.Second)
	if err := h.Rooms.SetUnits(ctx, "dc", dropD, rushgate.Level{Left: 10, Stock: 10, Written: 1, Closes: closes}); err != nil {
		t.Fatal(err)
	}
	join(t, h, "dc", "a", "b", "c")
	tk := admit(t, h, "dc")
	wantAdmitted(t, tk, "a")
	if tk.DropClosed || !tk.Next.Equal(closes) {
		t.Fatalf("before the closing: closed %v, next %v; want the closing %v next", tk.DropClosed, tk.Next, closes)
	}
	h.Advance(2 * time.Minute) // the drop closed, and a's grace ran out
	tk = admit(t, h, "dc")
	if len(tk.Admitted) != 0 || !tk.DropClosed || len(tk.Expired) != 1 || tk.Expired[0] != "a" {
		t.Fatalf("after the closing: %+v; want a expired, nobody admitted, the drop closed", tk)
	}
	if st := status(t, h, "dc", "b"); st.State != room.StateWaiting || st.Position != 1 {
		t.Fatalf("b after the closing: %+v", st)
	}
	// A level read before the link, told late, opens nothing.
	if _, err := h.Rooms.Restock(ctx, "dc", dropD, rushgate.Level{Stock: 10, Written: 0}); err != nil {
		t.Fatal(err)
	}
	if tk := admit(t, h, "dc"); len(tk.Admitted) != 0 || !tk.DropClosed {
		t.Fatalf("after a late level of an earlier write: %+v", tk)
	}
	if _, err := h.Rooms.Restock(ctx, "dc", dropD, rushgate.Level{Stock: 10, Written: 2}); err != nil { // opened again
		t.Fatal(err)
	}
	tk = admit(t, h, "dc")
	wantAdmitted(t, tk, "b")
	if tk.DropClosed {
		t.Fatalf("reopened, the step says closed: %+v", tk)
	}
	if _, err := h.Rooms.Restock(ctx, "dc", dropD, rushgate.Level{Stock: 10, Written: 3, Closes: h.Now()}); err != nil { // closed now
		t.Fatal(err)
	}
	if err := h.Rooms.Release(ctx, "dc", "b", ""); err != nil {
		t.Fatal(err)
	}
	if tk := admit(t, h, "dc"); len(tk.Admitted) != 0 || !tk.DropClosed {
		t.Fatalf("closed at once: %+v", tk)
	}
	unlink(t, h, "dc") // its closing goes too
	tk = admit(t, h, "dc")
	wantAdmitted(t, tk, "c")
	if tk.DropClosed {
		t.Fatalf("unlinked, the step says closed: %+v", tk)
	}
}

// testDropNotOpen: a room whose drop opens later lets nobody in until the opening, by the store's
// clock, says when it comes and keeps the line's order; its next step is due at the opening, and from
// it on the line moves. A later opening told (a later write) holds it again, a level of an earlier
// write told late moves nothing, and an unlinked room waits for no opening.
func testDropNotOpen(t *testing.T, h Harness) {
	put(t, h, "dn", following(cfg(1)))
	opens := h.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	if err := h.Rooms.SetUnits(ctx, "dn", dropD, rushgate.Level{Left: 10, Stock: 10, Written: 1, Opens: opens}); err != nil {
		t.Fatal(err)
	}
	join(t, h, "dn", "a", "b")
	tk := admit(t, h, "dn")
	if len(tk.Admitted) != 0 || !tk.DropOpens.Equal(opens) || !tk.Next.Equal(opens) || tk.DropClosed {
		t.Fatalf("before the opening: %+v; want nobody admitted, the opening %v told and next", tk, opens)
	}
	if st := status(t, h, "dn", "b"); st.State != room.StateWaiting || st.Position != 2 {
		t.Fatalf("b before the opening: %+v", st)
	}
	later := opens.Add(time.Minute)
	if _, err := h.Rooms.Restock(ctx, "dn", dropD, rushgate.Level{Stock: 10, Written: 2, Opens: later}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rooms.Restock(ctx, "dn", dropD, rushgate.Level{Stock: 10, Written: 1, Opens: opens}); err != nil { // told late
		t.Fatal(err)
	}
	h.Advance(45 * time.Second) // past the first opening, not the later one
	if tk := admit(t, h, "dn"); len(tk.Admitted) != 0 || !tk.DropOpens.Equal(later) {
		t.Fatalf("before the later opening: %+v; want nobody admitted, %v told", tk, later)
	}
	if tk := admit(t, h, "dn"); tk.Free != 1 {
		t.Fatalf("nobody in a room of one, the step counts %d free slots", tk.Free)
	}
	h.Advance(time.Minute)
	tk = admit(t, h, "dn")
	wantAdmitted(t, tk, "a")
	if !tk.DropOpens.IsZero() || tk.Free != 0 {
		t.Fatalf("opened, the step tells an opening or miscounts the free slots: %+v", tk)
	}
	if _, err := h.Rooms.Restock(ctx, "dn", dropD, rushgate.Level{Stock: 10, Written: 3, Opens: h.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms.Release(ctx, "dn", "a", ""); err != nil {
		t.Fatal(err)
	}
	if tk := admit(t, h, "dn"); len(tk.Admitted) != 0 || tk.DropOpens.IsZero() {
		t.Fatalf("its opening moved on: %+v", tk)
	}
	unlink(t, h, "dn") // its opening goes too
	tk = admit(t, h, "dn")
	wantAdmitted(t, tk, "b")
	if !tk.DropOpens.IsZero() {
		t.Fatalf("unlinked, the step tells an opening: %+v", tk)
	}
}

func testSoldOut(t *testing.T, h Harness) {
	put(t, h, "so", following(cfg(1)))
	if err := h.Rooms.SetUnits(ctx, "so", dropD, level(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	join(t, h, "so", "a", "b", "c")
	wantAdmitted(t, admit(t, h, "so"), "a")
	if err := h.Rooms.SoldOut(ctx, "so", dropD); err != nil {
		t.Fatal(err)
	}
	if st := status(t, h, "so", "b"); st.State != room.StateSoldOut {
		t.Fatalf("a waiting visitor after the sell-out: %+v", st)
	}
	if st := status(t, h, "so", "g"); st.State != room.StateSoldOut { // so that its page can wait for more
		t.Fatalf("the status of a visitor in no line after the sell-out: %+v", st)
	}
	if st, err := h.Rooms.Join(ctx, "so", someone("c")); err != nil || st.State != room.StateSoldOut {
		t.Fatalf("a waiting visitor joining again: %+v %v", st, err)
	}
	if _, err := h.Rooms.Join(ctx, "so", someone("d")); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("a new join: %v", err)
	}
	if _, err := h.Rooms.Join(ctx, "so", arrival("so", "e")); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("a first join: %v", err)
	}
	_ = h.Rooms.Release(ctx, "so", "a", "")
	if tk := admit(t, h, "so"); len(tk.Admitted) != 0 {
		t.Fatalf("a sold-out room admitted %v", admittedNames(tk))
	}
	if _, err := h.Rooms.Hold(ctx, "so", dropD, "b", "x"); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("hold of no admission: %v", err)
	}
	// Linked to a second batch, the room takes joins and lets visitors in again; linked to a drop with
	// nothing left, it is sold out at once.
	if err := h.Rooms.SetUnits(ctx, "so", dropD, level(2, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if st := status(t, h, "so", "g"); st.State != room.StateNone {
		t.Fatalf("the status of a visitor in no line once linked to a second batch: %+v", st)
	}
	if st := status(t, h, "so", "c"); st.State != room.StateWaiting || st.Position != 2 {
		t.Fatalf("a visitor that waited through the sell-out, linked to a second batch: %+v", st)
	}
	if _, err := h.Rooms.Join(ctx, "so", someone("d")); err != nil {
		t.Fatalf("a join once linked to a second batch: %v", err)
	}
	wantAdmitted(t, admit(t, h, "so"), "b")
	if err := h.Rooms.SetUnits(ctx, "so", dropD, level(0, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rooms.Join(ctx, "so", someone("f")); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("a join once linked to a drop with nothing left: %v", err)
	}
}

// testOtherDrop: several drops may sit behind a room that follows one of them. A step about another
// drop's units changes nothing: a hold for a claim on it still checks the admission but takes no unit,
// its sell-out, restock, give-back and link leave the room's count alone; and once the room follows
// another drop (its config written first, as the room's service writes it), a late link to the drop it
// followed is ignored too.
func testOtherDrop(t *testing.T, h Harness) {
	put(t, h, "od", following(cfg(10)))
	if err := h.Rooms.SetUnits(ctx, "od", dropD, level(2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	join(t, h, "od", names("v", 4)...)
	tk := admit(t, h, "od")
	if len(tk.Admitted) != 2 {
		t.Fatalf("admitted %v with 2 units", admittedNames(tk))
	}
	a := tk.Admitted[0]
	if _, err := h.Rooms.Hold(ctx, "od", "other", a.Visitor, "nope"); !errors.Is(err, room.ErrNotAdmitted) {
		t.Fatalf("hold for another drop with another admission: %v", err)
	}
	for range 3 {
		if held, err := h.Rooms.Hold(ctx, "od", "other", a.Visitor, a.Admission.ID); err != nil || held {
			t.Fatalf("hold for another drop: took %v, %v", held, err)
		}
	}
	if err := h.Rooms.SoldOut(ctx, "od", "other"); err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms.SetUnits(ctx, "od", "other", level(0, 5, 9)); err != nil {
		t.Fatal(err)
	}
	if news, err := h.Rooms.Restock(ctx, "od", "other", level(0, 9, 10)); err != nil || news {
		t.Fatalf("restock of another drop: news %v, %v", news, err)
	}
	if err := h.Rooms.Unhold(ctx, "od", "other"); err != nil {
		t.Fatal(err)
	}
	if st := status(t, h, "od", "v0002"); st.State != room.StateWaiting {
		t.Fatalf("after another drop's steps, a waiting visitor: %+v", st)
	}
	// The room's two units are as they were: both admissions hold one, and the room lets nobody else in.
	for _, ad := range tk.Admitted {
		if held, err := h.Rooms.Hold(ctx, "od", dropD, ad.Visitor, ad.Admission.ID); err != nil || !held {
			t.Fatalf("hold for the drop followed: took %v, %v", held, err)
		}
	}
	if _, err := h.Rooms.Hold(ctx, "od", dropD, a.Visitor, a.Admission.ID); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("a third hold of two units: %v", err)
	}

	// Relinked: the config first, then the units of the new drop, and the old drop's link, told late.
	c := cfg(10)
	c.Drop = "next"
	put(t, h, "od", c)
	if err := h.Rooms.SetUnits(ctx, "od", "next", level(1, 1, 20)); err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms.SetUnits(ctx, "od", dropD, level(0, 2, 21)); err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms.SoldOut(ctx, "od", dropD); err != nil {
		t.Fatal(err)
	}
	for _, ad := range tk.Admitted { // their claims made
		if err := h.Rooms.Release(ctx, "od", ad.Visitor, ""); err != nil {
			t.Fatal(err)
		}
	}
	wantAdmitted(t, admit(t, h, "od"), "v0002") // the new drop's one unit
}

// testStockCrowd: a drop of 100 behind a room of capacity 50 that follows it, and 2,000 visitors. Each
// admitted visitor claims at once, many at a time. The room never holds more admissions than units
// left; exactly 100 are admitted and claim; everyone else is told sold_out.
func testStockCrowd(t *testing.T, h Harness) {
	const stock, capacity, crowd = 100, 50, 2000
	rooms, drops, _ := followed(t, h, "stock", "line", stock, capacity)
	visitors := names("c", crowd)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := g; i < crowd; i += 32 {
				if _, err := rooms.Join(ctx, "line", someone(visitors[i])); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var claimed, refused atomic.Int64
	for tick := 0; tick < 1000; tick++ {
		info, err := drops.Get(ctx, "stock")
		if err != nil {
			t.Fatal(err)
		}
		before, err := h.Rooms.Stats(ctx, "line")
		if err != nil {
			t.Fatal(err)
		}
		if left := int64(info.Config.Stock - info.Claimed); before.Active > left {
			t.Fatalf("tick %d: %d admitted with %d units left", tick, before.Active, left)
		}
		tk, err := rooms.Tick(ctx, "line")
		if err != nil {
			t.Fatal(err)
		}
		after, _ := h.Rooms.Stats(ctx, "line")
		if left := int64(info.Config.Stock - info.Claimed); after.Active > left {
			t.Fatalf("tick %d: %d admitted with at most %d units left", tick, after.Active, left)
		}
		if len(tk.Admitted) == 0 && before.Active == 0 {
			break
		}
		for _, a := range tk.Admitted {
			wg.Go(func() {
				_, _, err := drops.Claim(ctx, drop.ClaimRequest{Drop: "stock", Visitor: a.Visitor,
					Admission: &rushgate.Admission{Room: "line", Visitor: a.Visitor, ID: a.Admission.ID}})
				if err != nil {
					refused.Add(1)
					t.Errorf("claim by an admitted visitor: %v", err)
					return
				}
				claimed.Add(1)
			})
		}
		wg.Wait()
	}
	st, err := h.Rooms.Stats(ctx, "line")
	if err != nil {
		t.Fatal(err)
	}
	if claimed.Load() != stock || refused.Load() != 0 || st.AdmittedTotal != stock {
		t.Fatalf("%d claims, %d refused, %d admitted; want %d claims and admissions", claimed.Load(), refused.Load(), st.AdmittedTotal, stock)
	}
	all, err := h.Drops.Claims(ctx, "stock", 0, 1000)
	if err != nil || len(all) != stock {
		t.Fatalf("the drop holds %d claims (%v)", len(all), err)
	}
	soldOut := 0
	for _, v := range visitors {
		st, err := h.Rooms.Status(ctx, "line", v)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == room.StateSoldOut {
			soldOut++
		}
	}
	// Those still in line keep their places; everyone, they and those whose claims ended their
	// admissions, is told the room is sold out.
	if soldOut != crowd || st.Waiting != crowd-stock {
		t.Fatalf("%d visitors told sold_out, %d waiting; want %d and %d", soldOut, st.Waiting, crowd, crowd-stock)
	}
	if _, err := rooms.Join(ctx, "line", someone("late")); !errors.Is(err, rushgate.ErrSoldOut) {
		t.Fatalf("a join after the sell-out: %v", err)
	}
}

// testRestock: an operator restocks a drop that a room follows, through the services over the backend,
// before its first claim and after: the room lets in as many more, also after missing a restock (the
// drop's sampler tells it again) and after hearing an older stock late; lowering the stock to the
// claims sells the line out.
func testRestock(t *testing.T, h Harness) {
	rooms, drops, dc := followed(t, h, "rs", "rsl", 1, 10)
	dc.Stock = 2 // before any claim: the room follows too
	if _, err := drops.Put(ctx, "rs", dc); err != nil {
		t.Fatal(err)
	}
	for _, v := range names("r", 7) {
		if _, err := rooms.Join(ctx, "rsl", someone(v)); err != nil {
			t.Fatal(err)
		}
	}
	tick := func() room.Tick {
		t.Helper()
		tk, err := rooms.Tick(ctx, "rsl")
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	first := tick()
	wantAdmitted(t, first, "r0000", "r0001")
	a := first.Admitted[0]
	if _, _, err := drops.Claim(ctx, drop.ClaimRequest{Drop: "rs", Visitor: a.Visitor,
		Admission: &rushgate.Admission{Room: "rsl", Visitor: a.Visitor, ID: a.Admission.ID}}); err != nil {
		t.Fatal(err)
	}
	dc.Stock = 5 // 4 left: r0001 holds one admission, three more come in
	if _, err := drops.Put(ctx, "rs", dc); err != nil {
		t.Fatal(err)
	}
	second := tick()
	wantAdmitted(t, second, "r0002", "r0003", "r0004")
	// A restock the room missed (its instance stopped between the drop's change and the room's): the
	// drop's sampler tells the room the stock again, and the room catches up.
	info, err := h.Drops.Get(ctx, "rs")
	if err != nil {
		t.Fatal(err)
	}
	missed := info.Config
	missed.Stock = 6
	if err := h.Drops.Amend(ctx, "rs", info.Rev, missed); err != nil {
		t.Fatal(err)
	}
	if tk := tick(); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v before the room heard of the restock", admittedNames(tk))
	}
	drops.Sample(ctx)
	wantAdmitted(t, tick(), "r0005")
	drops.Sample(ctx) // heard again: nothing more
	if tk := tick(); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v after the same stock was told twice", admittedNames(tk))
	}
	// A sampler (another instance's) reads the drop, an operator lowers its stock and the room hears of
	// it, two visitors leave without a claim, then the sampler tells the room what it read: the room
	// keeps the later stock. Heard as news, the old stock let two more in for units that were gone,
	// until the samplers' next read.
	stale, err := drop.StockOf(h.Drops).Remaining(ctx, "rs", "rsl")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range names("s", 2) {
		if _, err := rooms.Join(ctx, "rsl", someone(v)); err != nil {
			t.Fatal(err)
		}
	}
	dc.Stock = 4 // 3 left for 5 admissions
	if _, err := drops.Put(ctx, "rs", dc); err != nil {
		t.Fatal(err)
	}
	for _, a := range append(first.Admitted[1:], second.Admitted[0]) { // r0001, r0002
		if err := rooms.Release(ctx, "rsl", a.Visitor, a.Admission.ID); err != nil {
			t.Fatal(err)
		}
	}
	if tk := tick(); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v with 3 units for 3 admissions", admittedNames(tk))
	}
	if err := rooms.Restock(ctx, "rsl", "rs", stale); err != nil {
		t.Fatal(err)
	}
	if tk := tick(); len(tk.Admitted) != 0 {
		t.Fatalf("admitted %v with 3 units for 3 admissions, told a stock read before it was lowered", admittedNames(tk))
	}
	dc.Stock = 1 // down to its one claim
	if _, err := drops.Put(ctx, "rs", dc); err != nil {
		t.Fatal(err)
	}
	if st := status(t, h, "rsl", "s0000"); st.State != room.StateSoldOut {
		t.Fatalf("a waiting visitor after the stock came down to the claims: %+v", st)
	}
	b := second.Admitted[1] // r0003, still admitted
	_, _, err = drops.Claim(ctx, drop.ClaimRequest{Drop: "rs", Visitor: b.Visitor,
		Admission: &rushgate.Admission{Room: "rsl", Visitor: b.Visitor, ID: b.Admission.ID}})
	if !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("a claim after the stock came down to the claims: %v", err)
	}
}

// testRestockRace: operators change a drop's stock from four goroutines while two samplers (other
// instances') read the drop and tell its room what they read, as fast as they can. Once all is said,
// and before any sampler tells the room again, the room lets in as many visitors as the drop's last
// stock: no read from before a change, told last, leaves it off.
func testRestockRace(t *testing.T, h Harness) {
	rooms, drops, _ := followed(t, h, "race", "race", 10, 1000)
	var changing sync.WaitGroup
	var failed atomic.Pointer[error]
	for g := range 4 {
		changing.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 25 {
				patch := fmt.Sprintf(`{"stock": %d}`, 1+r.IntN(60))
				if _, err := drops.Patch(ctx, "race", []byte(patch)); err != nil && !errors.Is(err, rushgate.ErrUnavailable) {
					failed.Store(&err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var sampling sync.WaitGroup
	for range 2 {
		sampling.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					drops.Sample(ctx)
				}
			}
		})
	}
	changing.Wait()
	close(done)
	sampling.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	info, err := h.Drops.Get(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	join(t, h, "race", names("q", 70)...)
	tk, err := rooms.Tick(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.Admitted) != info.Config.Stock {
		t.Fatalf("the drop's stock ended at %d; the room let %d in", info.Config.Stock, len(tk.Admitted))
	}
}

// followed starts room and drop services over h, and puts drop id, of stock units behind room rid of
// capacity, and the room following the drop's stock; it returns them and the drop's config.
func followed(t *testing.T, h Harness, id, rid string, stock, capacity int) (*room.Service, *drop.Service, drop.Config) {
	t.Helper()
	rooms := room.NewService(h.Rooms, room.Options{Clock: h.Now, Manual: true, Stock: drop.StockOf(h.Drops)})
	drops := drop.NewService(h.Drops, drop.Options{Gate: rooms, Clock: h.Now})
	t.Cleanup(drops.Stop)
	t.Cleanup(rooms.Stop)
	dc := dropCfg(h, stock)
	dc.Room = rid
	if _, err := drops.Put(ctx, id, dc); err != nil {
		t.Fatal(err)
	}
	rc := cfg(capacity)
	rc.Drop = id
	if err := rooms.Put(ctx, rid, rc); err != nil {
		t.Fatal(err)
	}
	return rooms, drops, dc
}
