package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

// consoleTests specify what the operator's console reads: rooms' running totals, the lists of drops and
// auctions, the per-second history and the audit log.
var consoleTests = []check{
	{"Console/Totals", testTotals},
	{"Console/PreOpenTotals", testPreOpenTotals},
	{"Console/Lists", testLists},
	{"Console/History", testHistory},
	{"Console/HistoryKeep", testHistoryKeep},
	{"Console/Audit", testAudit},
	{"Console/Reschedule", testReschedule},
	{"Console/Schedule", testSchedule},
	{"Console/Amend", testAmend},
	{"Spent", testSpent},
	{"Invites", testInvites},
}

func testTotals(t *testing.T, h Harness) {
	c := cfg(1)
	put(t, h, "tot", c)
	join(t, h, "tot", "a", "b", "c")
	join(t, h, "tot", "a") // a repeat takes no place
	wantAdmitted(t, admit(t, h, "tot"), "a")
	status(t, h, "tot", "b")
	status(t, h, "tot", "c")
	h.Advance(time.Duration(c.Grace) + time.Second) // a never collects
	wantAdmitted(t, admit(t, h, "tot"), "b")
	status(t, h, "tot", "b") // b collects: its session will not count as a lapsed grace
	h.Advance(time.Duration(c.IdleTimeout) + time.Second)
	tk := admit(t, h, "tot")
	if !slices.Equal(tk.Idle, []string{"c"}) {
		t.Fatalf("idle = %v, want [c]", tk.Idle)
	}
	st, err := h.Rooms.Stats(ctx, "tot")
	if err != nil {
		t.Fatal(err)
	}
	want := room.Stats{Waiting: 0, Active: 1, AdmittedTotal: 2, JoinedTotal: 3, IdleTotal: 1, GraceTotal: 0 + 1}
	if st != want {
		t.Fatalf("stats = %+v, want %+v", st, want)
	}
}

func testPreOpenTotals(t *testing.T, h Harness) {
	c := cfg(5)
	opens := h.Now().Add(time.Minute).Truncate(time.Millisecond)
	c.OpensAt = &opens
	put(t, h, "pre", c)
	join(t, h, "pre", "a", "b")
	h.Advance(2 * time.Minute)
	join(t, h, "pre", "c")
	if st, err := h.Rooms.Stats(ctx, "pre"); err != nil || st.JoinedTotal != 3 {
		t.Fatalf("stats = %+v, %v; want 3 joined", st, err)
	}
}

func testLists(t *testing.T, h Harness) {
	for _, id := range []string{"d3", "d1", "d2"} {
		putDrop(t, h, id, dropCfg(h, 5))
		putAuction(t, h, "a"+id[1:], auctionCfg(h))
	}
	lists := map[string]func(after string, limit int) ([]string, error){
		"drops":    func(after string, limit int) ([]string, error) { return h.Drops.List(ctx, after, limit) },
		"auctions": func(after string, limit int) ([]string, error) { return h.Auctions.List(ctx, after, limit) },
	}
	for kind, list := range lists {
		p := kind[:1]
		first, err := list("", 2)
		if err != nil || !slices.Equal(first, []string{p + "1", p + "2"}) {
			t.Fatalf("%s first page = %v, %v", kind, first, err)
		}
		rest, err := list(first[1], 2)
		if err != nil || !slices.Equal(rest, []string{p + "3"}) {
			t.Fatalf("%s second page = %v, %v", kind, rest, err)
		}
	}
	if err := h.Drops.Delete(ctx, "d2"); err != nil {
		t.Fatal(err)
	}
	if err := h.Auctions.Delete(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Drops.List(ctx, "", 10); err != nil || !slices.Equal(got, []string{"d1", "d3"}) {
		t.Fatalf("drops after a delete = %v, %v", got, err)
	}
	if got, err := h.Auctions.List(ctx, "", 10); err != nil || !slices.Equal(got, []string{"a2", "a3"}) {
		t.Fatalf("auctions after a delete = %v, %v", got, err)
	}
}

func testHistory(t *testing.T, h Harness) {
	if h.History == nil {
		t.Skip("no history")
	}
	hist := h.History
	start := h.Now()
	sample := func(f ...int64) {
		t.Helper()
		if err := hist.Sample(ctx, "room:h", f); err != nil {
			t.Fatal(err)
		}
	}
	sample(1, 2)
	sample(9, 9) // the same second: another instance's offer, not kept
	h.Advance(time.Second)
	sample(3, 4)
	h.Advance(3 * time.Second) // seconds without a sample are simply absent
	sample(5, 6)
	if err := hist.Sample(ctx, "drop:h", []int64{7}); err != nil {
		t.Fatal(err)
	}
	got, err := hist.Since(ctx, "room:h", start.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("samples = %+v, want 3", got)
	}
	for i, want := range [][]int64{{1, 2}, {3, 4}, {5, 6}} {
		if !slices.Equal(got[i].Figures, want) {
			t.Fatalf("sample %d = %v, want %v", i, got[i].Figures, want)
		}
	}
	if got[0].At != start.Truncate(time.Second) || got[2].At.Sub(got[1].At) != 3*time.Second {
		t.Fatalf("sample times %v %v %v, started %v", got[0].At, got[1].At, got[2].At, start)
	}
	if rushgate.PerSecond(got[1], got[2], 0) != 2.0/3 {
		t.Fatalf("rate = %v", rushgate.PerSecond(got[1], got[2], 0))
	}
	later, err := hist.Since(ctx, "room:h", got[1].At)
	if err != nil || len(later) != 1 || later[0].Figures[0] != 5 {
		t.Fatalf("since the second sample: %+v, %v", later, err)
	}
	if err := hist.Forget(ctx, "room:h"); err != nil {
		t.Fatal(err)
	}
	if got, err := hist.Since(ctx, "room:h", start.Add(-time.Minute)); err != nil || len(got) != 0 {
		t.Fatalf("forgotten: %+v, %v", got, err)
	}
	if got, err := hist.Since(ctx, "drop:h", start.Add(-time.Minute)); err != nil || len(got) != 1 {
		t.Fatalf("another entity: %+v, %v", got, err)
	}
}

// testHistoryKeep samples for longer than a history keeps: the last hour stays, whole.
func testHistoryKeep(t *testing.T, h Harness) {
	if h.History == nil {
		t.Skip("no history")
	}
	n := rushgate.HistoryLen + 30
	for i := range n {
		if err := h.History.Sample(ctx, "auction:k", []int64{int64(i)}); err != nil {
			t.Fatal(err)
		}
		h.Advance(time.Second)
	}
	got, err := h.History.Since(ctx, "auction:k", h.Now().Add(-rushgate.HistoryKeep-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != int(rushgate.HistoryKeep/time.Second) || got[len(got)-1].Figures[0] != int64(n-1) {
		t.Fatalf("kept %d samples, last %v", len(got), got[len(got)-1].Figures)
	}
}

func testAudit(t *testing.T, h Harness) {
	if h.Audit == nil {
		t.Skip("no audit log")
	}
	at := h.Now().Truncate(time.Second).UTC()
	entries := []rushgate.Entry{
		{At: at, Kind: "room", ID: "x", Action: rushgate.ActionCreate, Changes: rushgate.Diff(nil, cfg(2)), By: rushgate.Owner},
		{At: at.Add(time.Second), Kind: "drop", ID: "x", Action: rushgate.ActionDelete, Changes: []rushgate.Change{}},
		{At: at.Add(2 * time.Second), Kind: "room", ID: "x", Action: rushgate.ActionUpdate, Changes: rushgate.Diff(cfg(2), cfg(3)), By: "mina"},
		{At: at.Add(3 * time.Second), Kind: "room", ID: "y", Action: rushgate.ActionUpdate, Changes: rushgate.Diff(cfg(2), cfg(4))},
	}
	for _, e := range entries {
		if err := h.Audit.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := h.Audit.Entries(ctx, rushgate.AuditFilter{}, 10)
	if err != nil || len(all) != 4 || all[0].ID != "y" || all[3].Action != rushgate.ActionCreate || all[0].By != "" {
		t.Fatalf("all = %+v, %v", all, err)
	}
	x, err := h.Audit.Entries(ctx, rushgate.AuditFilter{Kind: "room", ID: "x"}, 1)
	if err != nil || len(x) != 1 || x[0].Action != rushgate.ActionUpdate || !x[0].At.Equal(entries[2].At) || x[0].By != "mina" {
		t.Fatalf("newest of room x = %+v, %v", x, err)
	}
	if ch := x[0].Changes; len(ch) != 1 || ch[0].Field != "capacity" || string(ch[0].Old) != "2" || string(ch[0].New) != "3" {
		t.Fatalf("changes = %+v", ch)
	}
	older, err := h.Audit.Entries(ctx, rushgate.AuditFilter{Kind: "room", ID: "x", Before: x[0].Cursor}, 10)
	if err != nil || len(older) != 1 || older[0].Action != rushgate.ActionCreate || len(older[0].Changes) < 4 || older[0].By != rushgate.Owner {
		t.Fatalf("older of room x = %+v, %v", older, err)
	}
	// A cursor no page handed out (a mistyped or edited URL) names no entry: nothing is before it, and it
	// is not the store's failure.
	for _, before := range []string{"zzz", "-1", "0", "0-0", "1-", "1-x", "18446744073709551616", "(1", " 1"} {
		got, err := h.Audit.Entries(ctx, rushgate.AuditFilter{Before: before}, 10)
		if err != nil || got == nil || len(got) > 0 {
			t.Fatalf("before %q: %+v, %v", before, got, err)
		}
	}
	for _, c := range []struct {
		by   string
		want []string // actions, newest first
	}{{"mina", []string{rushgate.ActionUpdate}}, {rushgate.Owner, []string{rushgate.ActionCreate}}, {"nobody", nil}} {
		got, err := h.Audit.Entries(ctx, rushgate.AuditFilter{By: c.by}, 10)
		var actions []string
		for _, e := range got {
			actions = append(actions, e.Action)
		}
		if err != nil || fmt.Sprint(actions) != fmt.Sprint(c.want) {
			t.Fatalf("by %s: %v, %v; want %v", c.by, actions, err, c.want)
		}
	}
}

func testReschedule(t *testing.T, h Harness) {
	putAuction(t, h, "rs", auctionCfg(h))
	bid(t, h, "rs", "a", 1500)
	bid(t, h, "rs", "b", 1200)
	bid(t, h, "rs", "a", 1800) // a raises: still two bidders
	if n, err := h.Auctions.Bidders(ctx, "rs"); err != nil || n != 2 {
		t.Fatalf("bidders = %d, %v", n, err)
	}
	// b's bid was taken, though a's maximum outbid it at once; c's, too low, was not.
	if _, err := h.Auctions.Bid(ctx, "rs", "", auction.Bid{Bidder: "c", Max: 1000, Exact: true}); !errors.Is(err, auction.ErrTooLow) {
		t.Fatalf("a bid under the price: %v", err)
	}
	for _, c := range []struct {
		id, bidder string
		want       bool
	}{{"rs", "a", true}, {"rs", "b", true}, {"rs", "c", false}, {"rs", "", false}, {"none", "a", false}} {
		if got, err := h.Auctions.HasBidder(ctx, c.id, c.bidder); err != nil || got != c.want {
			t.Fatalf("HasBidder(%s, %q) = %v, %v; want %v", c.id, c.bidder, got, err, c.want)
		}
	}
	later := h.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	o, err := h.Auctions.Reschedule(ctx, "rs", later)
	if err != nil || !o.State.EndsAt.Equal(later) || len(o.Events) != 1 || o.Events[0].Kind != auction.EventExtended {
		t.Fatalf("extend: %+v, %v", o, err)
	}
	o, err = h.Auctions.Reschedule(ctx, "rs", h.Now().Add(-time.Minute))
	if err != nil || !o.State.Closed || o.State.Winner != "a" || len(o.Events) != 2 || o.Events[1].Kind != auction.EventClosed {
		t.Fatalf("end now: %+v, %v", o, err)
	}
	if _, err := h.Auctions.Bid(ctx, "rs", "", auction.Bid{Bidder: "c", Max: 5000}); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("bid after the end: %v", err)
	}
	if _, err := h.Auctions.Reschedule(ctx, "rs", later); !errors.Is(err, auction.ErrClosed) {
		t.Fatalf("reschedule after the end: %v", err)
	}
	if _, err := h.Auctions.Reschedule(ctx, "nope", later); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("unknown auction: %v", err)
	}
}

func testSchedule(t *testing.T, h Harness) {
	putDrop(t, h, "sc", dropCfg(h, 5))
	claim(t, h, "sc", "a")
	info, err := h.Drops.Get(ctx, "sc")
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	now := h.Now().Truncate(time.Millisecond)
	c.ClosesAt = &now
	c.Identity = "site" // ignored: only what may change once claimed does
	if err := h.Drops.Amend(ctx, "sc", info.Rev, c); err != nil {
		t.Fatal(err)
	}
	if err := h.Drops.Amend(ctx, "sc", info.Rev, c); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("schedule from an old revision: %v", err)
	}
	if _, _, err := h.Drops.Claim(ctx, "sc", "", "b", ""); !errors.Is(err, drop.ErrNotOpen) {
		t.Fatalf("claim after closing: %v", err)
	}
	after, err := h.Drops.Get(ctx, "sc")
	if err != nil || after.Claimed != 1 || after.Config.Stock != 5 || after.Config.Identity != "" || after.Config.ClosesAt == nil || after.Rev == info.Rev {
		t.Fatalf("closed drop = %+v, %v", after, err)
	}
	c.ClosesAt = nil
	if err := h.Drops.Amend(ctx, "sc", after.Rev, c); err != nil {
		t.Fatal(err)
	}
	claim(t, h, "sc", "b")
	if err := h.Drops.Amend(ctx, "none", "x", c); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("unknown drop: %v", err)
	}
}

// testAmend: a drop with claims takes a new title and stock, above its claims and not once sold out,
// and a higher per_visitor, and goes on numbering its claims.
func testAmend(t *testing.T, h Harness) {
	putDrop(t, h, "am", dropCfg(h, 2))
	claim(t, h, "am", "a")
	amend := func(stock int, title string) error {
		t.Helper()
		info, err := h.Drops.Get(ctx, "am")
		if err != nil {
			t.Fatal(err)
		}
		c := info.Config
		c.Stock, c.Title = stock, title
		return h.Drops.Amend(ctx, "am", info.Rev, c)
	}
	if err := amend(4, "Restocked"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Drops.Claim(ctx, "am", "", "a", ""); err == nil {
		t.Fatal("a second claim at one each")
	}
	if info, err := h.Drops.Get(ctx, "am"); err != nil || info.Config.Stock != 4 || info.Config.Title != "Restocked" || info.Claimed != 1 {
		t.Fatalf("restocked drop = %+v, %v", info, err)
	}
	for i, v := range []string{"b", "c", "d"} {
		if v == "d" {
			if err := amend(2, "Fewer"); !errors.Is(err, drop.ErrBelowClaimed) {
				t.Fatalf("stock 2 below 3 claims: %v", err)
			}
		}
		if got := claim(t, h, "am", v); got.Seq != int64(i+2) {
			t.Fatalf("claim %s numbered %d, want %d", v, got.Seq, i+2)
		}
	}
	if _, _, err := h.Drops.Claim(ctx, "am", "", "e", ""); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("claim past the new stock: %v", err)
	}
	if err := amend(9, "Again"); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("restock of a drop sold out: %v", err)
	}
	info, err := h.Drops.Get(ctx, "am")
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	c.Title, c.Message = "Sold out, renamed", "A second batch drops on Friday" // a title and a message still change
	if err := h.Drops.Amend(ctx, "am", info.Rev, c); err != nil {
		t.Fatal(err)
	}
	if info, err := h.Drops.Get(ctx, "am"); err != nil || info.Config.Title != c.Title || info.Config.Message != c.Message || info.Claimed != 4 {
		t.Fatalf("sold out, renamed and told = %+v, %v", info, err)
	}
	putDrop(t, h, "down", dropCfg(h, 5))
	claim(t, h, "down", "a")
	info, err = h.Drops.Get(ctx, "down")
	if err != nil {
		t.Fatal(err)
	}
	c = info.Config
	c.PerVisitor = 2 // a second claim each
	if err := h.Drops.Amend(ctx, "down", info.Rev, c); err != nil {
		t.Fatal(err)
	}
	if again := claim(t, h, "down", "a"); again.Seq != 2 {
		t.Fatalf("a's second claim is numbered %d", again.Seq)
	}
	if _, _, err := h.Drops.Claim(ctx, "down", "", "a", ""); err == nil {
		t.Fatal("a third claim at two each")
	}
	if info, err = h.Drops.Get(ctx, "down"); err != nil {
		t.Fatal(err)
	}
	c = info.Config
	c.Stock = 2 // down to its claims: sold out now
	if err := h.Drops.Amend(ctx, "down", info.Rev, c); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Drops.Claim(ctx, "down", "", "b", ""); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("claim after the stock came down to the claims: %v", err)
	}
}

func testSpent(t *testing.T, h Harness) {
	if h.Spent == nil {
		t.Skip("no memory of spent things")
	}
	until := h.Now().Add(time.Minute)
	if first, err := h.Spent.Spend(ctx, "token-1", until); err != nil || !first {
		t.Fatalf("first spend: %v %v", first, err)
	}
	if first, err := h.Spent.Spend(ctx, "token-1", until); err != nil || first {
		t.Fatalf("second spend: %v %v", first, err)
	}
	if first, err := h.Spent.Spend(ctx, "token-2", until); err != nil || !first {
		t.Fatalf("another id: %v %v", first, err)
	}
}

func testInvites(t *testing.T, h Harness) {
	put(t, h, "inv", cfg(1))
	if n, err := h.Rooms.AddInvites(ctx, "inv", []string{"A", "B", "A"}); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := h.Rooms.AddInvites(ctx, "inv", []string{"B", "C"}); err != nil || n != 1 {
		t.Fatalf("add again: %d %v", n, err)
	}
	take := func(code string) bool {
		t.Helper()
		ok, err := h.Rooms.TakeInvite(ctx, "inv", code)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take("A") || take("A") || take("Z") {
		t.Fatal("a code is taken once, and only a listed one")
	}
	if err := h.Rooms.ReturnInvite(ctx, "inv", "A"); err != nil {
		t.Fatal(err)
	}
	if !take("A") {
		t.Fatal("a code given back is taken again")
	}
	if n, _ := h.Rooms.AddInvites(ctx, "inv", []string{"A"}); n != 0 || take("A") {
		t.Fatal("adding a used code again made it usable")
	}
	if _, err := h.Rooms.AddInvites(ctx, "none", []string{"A"}); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("codes of an unknown room: %v", err)
	}
	if err := h.Rooms.DeleteRoom(ctx, "inv"); err != nil {
		t.Fatal(err)
	}
	put(t, h, "inv", cfg(1))
	if take("B") {
		t.Fatal("a room created again kept the codes of the deleted one")
	}
}
