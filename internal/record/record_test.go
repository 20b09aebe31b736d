package record_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// TestRecords runs the replay, audit and invite cases on both databases.
func TestRecords(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		testRecords(t, r)
		testAudit(t, r)
		testInvites(t, r)
		testRedemptions(t, r)
	})
}

// testRedemptions: 64 checkouts redeem one code at once, each for its own order: one of them redeems
// it, and every one is told the same redemption. Other codes, and another drop's same code, are apart;
// a drop forgotten forgets its redemptions.
func testRedemptions(t *testing.T, r *record.DB) {
	ctx := context.Background()
	if _, ok, err := r.Redeemed(ctx, "coupons", "SAVE-7"); err != nil || ok {
		t.Fatalf("an unused code: %v %v", ok, err)
	}
	at := time.Date(2026, 12, 24, 18, 0, 0, 123456789, time.UTC)
	type answer struct {
		stands drop.Redemption
		mine   bool
	}
	answers := make([]answer, 64)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			red, mine, err := r.Redeem(ctx, "coupons", "SAVE-7", drop.Redemption{At: at.Add(time.Duration(i) * time.Second), Order: fmt.Sprint("order-", i)})
			if err != nil {
				t.Error(err)
			}
			answers[i] = answer{red, mine}
		})
	}
	wg.Wait()
	won := -1
	for i, a := range answers {
		if a.mine {
			if won >= 0 {
				t.Fatalf("orders %d and %d both redeemed the code", won, i)
			}
			won = i
		}
	}
	if won < 0 {
		t.Fatal("no order redeemed the code")
	}
	want := drop.Redemption{At: at.Add(time.Duration(won) * time.Second), Order: fmt.Sprint("order-", won)}
	for i, a := range answers {
		if a.stands != want {
			t.Fatalf("order %d was told %+v; the redemption is %+v", i, a.stands, want)
		}
	}
	if got, ok, err := r.Redeemed(ctx, "coupons", "SAVE-7"); err != nil || !ok || got != want {
		t.Fatalf("redeemed: %+v %v %v, want %+v", got, ok, err, want)
	}
	for _, other := range [][2]string{{"coupons", "SAVE-8"}, {"other", "SAVE-7"}} {
		if _, mine, err := r.Redeem(ctx, other[0], other[1], drop.Redemption{At: at}); err != nil || !mine {
			t.Fatalf("%s code %s: %v %v", other[0], other[1], mine, err)
		}
	}
	// Another order cannot hand the code back; its own order can, once, and then the code is free.
	if removed, err := r.Unredeem(ctx, "coupons", "SAVE-7", "another"); err != nil || removed {
		t.Fatalf("another order's unredeem: %v %v; want the redemption to stay", removed, err)
	}
	if stands, ok, err := r.Redeemed(ctx, "coupons", "SAVE-7"); err != nil || !ok || stands != want {
		t.Fatalf("after another order's unredeem: %+v %v %v; want the redemption to stay", stands, ok, err)
	}
	if removed, err := r.Unredeem(ctx, "coupons", "SAVE-7", want.Order); err != nil || !removed {
		t.Fatalf("the order's own unredeem: %v %v", removed, err)
	}
	if removed, err := r.Unredeem(ctx, "coupons", "SAVE-7", want.Order); err != nil || removed {
		t.Fatalf("unredeeming a free code: %v %v", removed, err)
	}
	if _, mine, err := r.Redeem(ctx, "coupons", "SAVE-7", want); err != nil || !mine {
		t.Fatalf("redeeming a code handed back: %v %v", mine, err)
	}
	among, err := r.RedeemedAmong(ctx, "coupons", []string{"SAVE-6", "SAVE-7", "SAVE-8"})
	if err != nil || len(among) != 2 || among["SAVE-7"] != want || among["SAVE-8"].At != at {
		t.Fatalf("the redeemed among three codes: %+v %v", among, err)
	}
	many := make([]string, 2500) // past one statement's thousand
	for i := range many {
		many[i] = fmt.Sprint("NONE-", i)
	}
	many[2400] = "SAVE-8"
	if among, err := r.RedeemedAmong(ctx, "coupons", many); err != nil || len(among) != 1 || among["SAVE-8"].At != at {
		t.Fatalf("the redeemed among 2,500 codes: %+v %v", among, err)
	}
	if n, err := r.CountRedeemed(ctx, "coupons"); err != nil || n != 2 {
		t.Fatalf("coupons counts %d redeemed codes, %v; want 2", n, err)
	}
	if err := r.ForgetDrop(ctx, "coupons"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.Redeemed(ctx, "coupons", "SAVE-7"); ok {
		t.Fatal("a forgotten drop's redemption is still there")
	}
	if _, ok, _ := r.Redeemed(ctx, "other", "SAVE-7"); !ok {
		t.Fatal("forgetting one drop forgot another's redemption")
	}
}

// testInvites: a code is taken once, given back, and forgotten with its room.
func testInvites(t *testing.T, r *record.DB) {
	ctx := context.Background()
	if n, err := r.AddInvites(ctx, "presale", []string{"A", "B", "A"}); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	for i, want := range []bool{true, false} {
		if ok, err := r.TakeInvite(ctx, "presale", "A"); err != nil || ok != want {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	if err := r.ReturnInvite(ctx, "presale", "A"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.TakeInvite(ctx, "presale", "A"); !ok {
		t.Fatal("a code given back was not taken again")
	}
	if err := r.ForgetInvites(ctx, "presale"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.TakeInvite(ctx, "presale", "B"); ok {
		t.Fatal("a forgotten code was taken")
	}
}

// testAudit appends from many goroutines at once: each entry is kept once, under its own cursor.
func testAudit(t *testing.T, r *record.DB) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				e := rushgate.Entry{At: time.Now(), Kind: "room", ID: fmt.Sprint("r", g), Action: "update",
					Changes: []rushgate.Change{{Field: "capacity", Old: []byte(fmt.Sprint(i)), New: []byte(fmt.Sprint(i + 1))}}}
				if err := r.Append(ctx, e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	all, err := r.Entries(ctx, rushgate.AuditFilter{}, 100)
	if err != nil || len(all) != 40 {
		t.Fatalf("entries = %d, %v", len(all), err)
	}
	mine, err := r.Entries(ctx, rushgate.AuditFilter{Kind: "room", ID: "r3"}, 100)
	if err != nil || len(mine) != 5 || string(mine[0].Changes[0].New) != "5" {
		t.Fatalf("entries of r3 = %+v, %v", mine, err)
	}
}

// testRecords replays events as a crashed writer would (twice, and concurrently) and races two
// different closes: the record holds each event once and the first settlement only.
func testRecords(t *testing.T, r *record.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10), StartsAt: now, EndsAt: now.Add(time.Hour)}
	s := auction.New(cfg)
	var all []auction.Event
	for i, who := range []string{"a", "b", "a", "c"} {
		evs, err := s.Bid(auction.Bid{Bidder: who, Max: int64(200 + 100*i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	if _, err := r.Result(ctx, "lot"); !errors.Is(err, record.ErrNoResult) {
		t.Fatalf("result before the end: %v", err)
	}
	var wg sync.WaitGroup
	for range 4 { // the same batch delivered four times at once
		wg.Go(func() {
			if err := r.Record(ctx, "lot", s, all); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	closed := s.CloseIfDue(now.Add(time.Hour))
	if err := r.Record(ctx, "lot", s, closed); err != nil {
		t.Fatal(err)
	}
	fake := []auction.Event{{Seq: closed[0].Seq, Kind: auction.EventClosed, Bidder: "mallory", Price: 1}}
	if err := r.Record(ctx, "lot", s, fake); err != nil { // a replay with the same seq cannot rewrite it
		t.Fatal(err)
	}
	got, err := r.Events(ctx, "lot")
	if err != nil || len(got) != len(all)+1 {
		t.Fatalf("%d recorded events, want %d: %v", len(got), len(all)+1, err)
	}
	for i, ev := range got {
		if ev.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d", i, ev.Seq)
		}
	}
	res, err := r.Result(ctx, "lot")
	if err != nil || res.Winner != s.Winner || res.FinalPrice != s.Final || res.Status != "closed" {
		t.Fatalf("result %+v %v; want %s at %d", res, err, s.Winner, s.Final)
	}
	other := []auction.Event{{Seq: 99, Kind: auction.EventSold, Bidder: "late", Price: 5}}
	_ = r.Record(ctx, "lot", s, other)
	if again, _ := r.Result(ctx, "lot"); again != res {
		t.Fatalf("settled twice: %+v then %+v", res, again)
	}
	saved, err := r.Load(ctx)
	if err != nil || saved["lot"].State.Winner != s.Winner || saved["lot"].State.LeaderMax != s.LeaderMax || len(saved["lot"].Events) != len(got)+1 { // + the late seq-99 replay above
		t.Fatalf("loaded %+v, %v", saved["lot"], err)
	}
}

func TestClaimsIdempotent(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		claims := []drop.Claim{{ID: "d.1", Seq: 1, Code: "A", Visitor: "x", ClaimedAt: time.Now(), Key: "order-1"}, {ID: "d.2", Seq: 2, Code: "B", Visitor: "y", ClaimedAt: time.Now()}}
		for range 3 {
			if err := r.RecordClaims(ctx, "d", claims); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Claims(ctx, "d")
		if err != nil || len(got) != 2 || got[1].Code != "B" || got[0].Key != "order-1" || got[1].Key != "" {
			t.Fatalf("claims %+v %v", got, err)
		}
		// A crowd's worth in one call spans several statements (on PostgreSQL too: arrayRows a
		// statement); a redelivery that overlaps it adds only what is new.
		many := func(from, to int) []drop.Claim {
			var out []drop.Claim
			for i := from; i <= to; i++ {
				out = append(out, drop.Claim{ID: fmt.Sprintf("e.%d", i), Seq: int64(i), Code: fmt.Sprint("C", i), Visitor: fmt.Sprint("v", i), ClaimedAt: time.Now()})
			}
			return out
		}
		if err := r.RecordClaims(ctx, "e", many(1, 2450)); err != nil {
			t.Fatal(err)
		}
		if err := r.RecordClaims(ctx, "e", many(2401, 2520)); err != nil {
			t.Fatal(err)
		}
		got, err = r.Claims(ctx, "e")
		if err != nil || len(got) != 2520 {
			t.Fatalf("%d claims recorded of 2520: %v", len(got), err)
		}
		for i, c := range got {
			if c.Seq != int64(i+1) || c.Code != fmt.Sprint("C", i+1) || c.Visitor != fmt.Sprint("v", i+1) || c.ID != fmt.Sprintf("e.%d", i+1) {
				t.Fatalf("claim %d recorded as %+v", i+1, c)
			}
		}
	})
}

// TestEventsInMany: a crowd's bids in one call span several statements; a redelivery that overlaps
// them adds only what is new, and a sale among them settles the result once.
func TestEventsInMany(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
		st := auction.New(auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 1, Increment: auction.Fixed(1), StartsAt: now, EndsAt: now.Add(time.Hour)})
		many := func(from, to int) []auction.Event {
			var out []auction.Event
			for i := from; i <= to; i++ {
				ev := auction.Event{Seq: int64(i), Kind: auction.EventBid, Bidder: fmt.Sprint("b", i), Price: int64(i), At: now, EndsAt: now.Add(time.Hour)}
				if i == 300 || i == 310 {
					ev.Kind = auction.EventSold
				}
				out = append(out, ev)
			}
			return out
		}
		if err := r.Record(ctx, "hot", st, many(1, 333)); err != nil {
			t.Fatal(err)
		}
		if err := r.Record(ctx, "hot", st, many(300, 400)); err != nil {
			t.Fatal(err)
		}
		got, err := r.Events(ctx, "hot")
		if err != nil || len(got) != 400 {
			t.Fatalf("%d events recorded of 400: %v", len(got), err)
		}
		for i, ev := range got {
			if ev.Seq != int64(i+1) || ev.Bidder != fmt.Sprint("b", i+1) || ev.Price != int64(i+1) {
				t.Fatalf("row %d: %+v", i, ev)
			}
		}
		if res, err := r.Result(ctx, "hot"); err != nil || res.Winner != "b300" || res.FinalPrice != 300 || res.Status != "sold" {
			t.Fatalf("result %+v %v: the first sale should settle it", res, err)
		}
	})
}

// TestMigrateClaimKeys opens a record made before claims kept their idempotency keys: the column is
// added, the old claims load with no key, and new claims keep theirs.
func TestMigrateClaimKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	makeOldClaims(t, db)
	db.Close()
	ctx := context.Background()
	for range 2 { // the second open finds the column there
		r, err := record.OpenSQLite(ctx, path, record.FsyncAlways)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RecordClaims(ctx, "d", []drop.Claim{{ID: "d.2", Seq: 2, Code: "B", Visitor: "y", ClaimedAt: time.Now(), Key: "k"}}); err != nil {
			t.Fatal(err)
		}
		got, err := r.Claims(ctx, "d")
		if err != nil || len(got) != 2 || got[0].Key != "" || got[1].Key != "k" {
			r.Close()
			t.Fatalf("claims after migration: %+v %v", got, err)
		}
		if err := r.Append(ctx, rushgate.Entry{At: time.Now(), Kind: "room", ID: "r", Action: rushgate.ActionDelete, By: "mina"}); err != nil {
			r.Close()
			t.Fatal(err)
		}
		entries, err := r.Entries(ctx, rushgate.AuditFilter{Kind: "room", ID: "r"}, 3)
		r.Close()
		if err != nil || len(entries) < 2 || entries[0].By != "mina" || entries[len(entries)-1].By != "" {
			t.Fatalf("audit after migration: %+v %v", entries, err)
		}
	}
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var table string
	var indexes int
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'drop_claims'`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'drop_claims'`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table, "UNIQUE") || indexes != 1 {
		t.Fatalf("after migration drop_claims has %d indexes and is %s; want the primary key's alone", indexes, table)
	}
}

// TestMigrateCodeIndexPostgres: a PostgreSQL record made before loses the unique index of claim codes,
// keeping its claims.
func TestMigrateCodeIndexPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	makeOldClaims(t, db)
	r, err := record.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var unique int
	if err := db.QueryRow(`SELECT count(*) FROM pg_constraint WHERE conrelid = 'drop_claims'::regclass AND contype = 'u'`).Scan(&unique); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Claims(context.Background(), "d"); unique != 0 || err != nil || len(got) != 1 {
		t.Fatalf("after migration: %d unique constraints, claims %+v %v", unique, got, err)
	}
}

// TestRooms records, replaces and forgets room configs on both databases: what is loaded back is the
// latest config of each room still there, field for field.
func TestRooms(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		opens := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
		full := room.Config{Capacity: 50, Rate: &room.Rate{Admits: 10, Per: rushgate.Duration(time.Minute)},
			SessionTTL: rushgate.Duration(10 * time.Minute), Grace: rushgate.Duration(time.Minute),
			IdleTimeout: rushgate.Duration(2 * time.Minute), OpensAt: &opens, Paused: true, SiteURL: "https://shop.example"}
		for id, cfg := range map[string]room.Config{"a": {Capacity: 1}, "b": full, "c": {Capacity: 3}} {
			if err := r.RecordRoom(ctx, id, cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.RecordRoom(ctx, "a", room.Config{Capacity: 2}); err != nil {
			t.Fatal(err)
		}
		if err := r.ForgetRoom(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		got, err := r.LoadRooms(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["a"].Capacity != 2 || !reflect.DeepEqual(got["b"], full) {
			t.Fatalf("loaded %+v, want a with capacity 2 and b as %+v", got, full)
		}
	})
}

// TestLoadRefusesAnUnreadableConfig: a config row that no longer decodes (edited by hand, or written by
// a version that meant something else) fails the load with the row named, instead of resuming the room
// or drop with a zero config.
func TestLoadRefusesAnUnreadableConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		table string
		put   func(r *record.DB) error
		load  func(r *record.DB) error
	}{
		{"rooms", func(r *record.DB) error { return r.RecordRoom(ctx, "sale", room.Config{Capacity: 2}) },
			func(r *record.DB) error { _, err := r.LoadRooms(ctx); return err }},
		{"drops", func(r *record.DB) error { return r.RecordDrop(ctx, "sale", drop.Config{Stock: 5, PerVisitor: 1}) },
			func(r *record.DB) error { _, err := r.LoadDrops(ctx); return err }},
	} {
		t.Run(c.table, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.db")
			r, err := record.OpenSQLite(ctx, path, record.FsyncAlways)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.put(r); err != nil {
				t.Fatal(err)
			}
			if err := c.load(r); err != nil {
				t.Fatalf("the row as written: %v", err)
			}
			r.Close()
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(`UPDATE ` + c.table + ` SET config = '{"capacity": "many", "stock": "many"}' WHERE id = 'sale'`)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			r, err = record.OpenSQLite(ctx, path, record.FsyncAlways)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := c.load(r); err == nil || !strings.Contains(err.Error(), c.table+" sale") {
				t.Fatalf("loading an unreadable config: %v; want an error naming %s sale", err, c.table)
			}
		})
	}
}

// eachDatabase runs test on a fresh SQLite record and on a fresh PostgreSQL one, each as a subtest.
func eachDatabase(t *testing.T, test func(t *testing.T, r *record.DB)) {
	for _, db := range []struct {
		name string
		open func(t *testing.T) (*record.DB, error)
	}{
		{"sqlite", func(t *testing.T) (*record.DB, error) {
			return record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
		}},
		{"postgres", func(t *testing.T) (*record.DB, error) {
			return record.OpenPostgres(context.Background(), pgtest.Database(t))
		}},
	} {
		t.Run(db.name, func(t *testing.T) {
			r, err := db.open(t)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			test(t, r)
		})
	}
}

// TestNoWinnerCloseGivesWay: an auction that closed without bids and was then replaced goes on with a
// higher sequence; its later result replaces the empty one, while a result with a winner stays settled.
func TestNoWinnerCloseGivesWay(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		recordEvent := func(ev auction.Event) {
			t.Helper()
			if err := r.Record(ctx, "lot", auction.State{}, []auction.Event{ev}); err != nil {
				t.Fatal(err)
			}
		}
		recordEvent(auction.Event{Seq: 1, Kind: auction.EventClosed, At: at})
		recordEvent(auction.Event{Seq: 1, Kind: auction.EventClosed, Bidder: "replay", Price: 9, At: at})
		if res, _ := r.Result(ctx, "lot"); res.Winner != "" {
			t.Fatalf("a replay of the same close rewrote the result: %+v", res)
		}
		recordEvent(auction.Event{Seq: 3, Kind: auction.EventClosed, Bidder: "alice", Price: 500, At: at.Add(time.Hour)})
		if res, err := r.Result(ctx, "lot"); err != nil || res.Winner != "alice" || res.FinalPrice != 500 {
			t.Fatalf("the corrected auction's result: %+v %v", res, err)
		}
		recordEvent(auction.Event{Seq: 4, Kind: auction.EventSold, Bidder: "mallory", Price: 1, At: at.Add(2 * time.Hour)})
		if res, _ := r.Result(ctx, "lot"); res.Winner != "alice" {
			t.Fatalf("a settled result was rewritten: %+v", res)
		}
	})
}

// TestParseFsync reads the three policies and refuses anything else.
func TestParseFsync(t *testing.T) {
	for s, want := range map[string]record.Fsync{"always": record.FsyncAlways, "everysec": record.FsyncEverySec, "no": record.FsyncNo} {
		if got, err := record.ParseFsync(s); err != nil || got != want {
			t.Fatalf("ParseFsync(%q) = %v, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "Always", "1s"} {
		if _, err := record.ParseFsync(bad); err == nil {
			t.Fatalf("ParseFsync(%q) accepted", bad)
		}
	}
}

// makeOldClaims makes the drop_claims table as the first versions did (no idempotency keys, a unique
// index of codes) in db, with one claim, and the audit table without who made each change.
func makeOldClaims(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, stmt := range []string{
		`CREATE TABLE drop_claims (drop_id TEXT NOT NULL, seq BIGINT NOT NULL, claim_id TEXT NOT NULL, visitor TEXT NOT NULL,
			code TEXT NOT NULL, claimed_at TEXT NOT NULL, PRIMARY KEY (drop_id, seq), UNIQUE (drop_id, code))`,
		`INSERT INTO drop_claims VALUES ('d', 1, 'd.1', 'x', 'A', '2026-12-01T00:00:00Z')`,
		`CREATE TABLE audit (seq BIGINT PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, entity TEXT NOT NULL,
			action TEXT NOT NULL, changes TEXT NOT NULL)`,
		`INSERT INTO audit VALUES (1, '2026-12-01T00:00:00Z', 'room', 'r', 'create', '[]')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConflictingClaimsAreKept: a claim under a number the record holds for another claim (Redis came
// back behind the record and numbered a claim again) is not dropped: it goes to drop_claim_conflicts,
// once however often it is delivered, and is logged. The same claim again is a redelivery and no
// conflict.
func TestConflictingClaimsAreKept(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		var logged strings.Builder
		r.LogTo(slog.New(slog.NewTextHandler(&logged, nil)))
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Millisecond)
		claim := func(seq int, code, visitor string) drop.Claim {
			return drop.Claim{ID: fmt.Sprintf("d.%d", seq), Seq: int64(seq), Code: code, Visitor: visitor, ClaimedAt: at}
		}
		first := []drop.Claim{claim(1, "A1", "a"), claim(2, "A2", "b"), claim(3, "A3", "c")}
		again := []drop.Claim{claim(2, "B2", "x"), claim(3, "A3", "c"), claim(4, "B4", "y")}
		for _, batch := range [][]drop.Claim{first, first, again, again} {
			if err := r.RecordClaims(ctx, "d", batch); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Claims(ctx, "d")
		if err != nil || len(got) != 4 || got[1].Code != "A2" || got[3].Code != "B4" {
			t.Fatalf("claims %+v %v", got, err)
		}
		conflicts, err := r.ClaimConflicts(ctx, "d")
		if err != nil || len(conflicts) != 1 || conflicts[0].Code != "B2" || conflicts[0].Visitor != "x" || !conflicts[0].ClaimedAt.Equal(at) {
			t.Fatalf("conflicts %+v %v", conflicts, err)
		}
		if n := strings.Count(logged.String(), "conflicts with a recorded one"); n != 1 {
			t.Fatalf("%d conflicts logged:\n%s", n, logged.String())
		}
	})
}

// TestConflictingEventsAreKept: an auction event under a number the record holds for another event
// (Redis came back behind the record and numbered a bid again) is not dropped: it goes to
// auction_event_conflicts, once however often it is delivered, and is logged. The same event again
// is a redelivery and no conflict.
func TestConflictingEventsAreKept(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		var logged strings.Builder
		r.LogTo(slog.New(slog.NewTextHandler(&logged, nil)))
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Millisecond)
		bid := func(seq int, bidder string, price int64) auction.Event {
			return auction.Event{Seq: int64(seq), Kind: auction.EventBid, Bidder: bidder, Price: price, At: at, EndsAt: at.Add(time.Hour)}
		}
		first := []auction.Event{bid(1, "a", 100), bid(2, "b", 110), bid(3, "a", 120)}
		again := []auction.Event{bid(2, "x", 105), bid(3, "a", 120), bid(4, "y", 130)}
		for _, batch := range [][]auction.Event{first, first, again, again} {
			if err := r.Record(ctx, "a1", auction.State{}, batch); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Events(ctx, "a1")
		if err != nil || len(got) != 4 || got[1].Bidder != "b" || got[3].Bidder != "y" {
			t.Fatalf("events %+v %v", got, err)
		}
		conflicts, err := r.EventConflicts(ctx, "a1")
		if err != nil || len(conflicts) != 1 || conflicts[0].Bidder != "x" || conflicts[0].Price != 105 || !conflicts[0].At.Equal(at) {
			t.Fatalf("conflicts %+v %v", conflicts, err)
		}
		if n := strings.Count(logged.String(), "conflicts with a recorded one"); n != 1 {
			t.Fatalf("%d conflicts logged:\n%s", n, logged.String())
		}
		// Deleted, its state goes and its events stay, for one created again under its id to go on from.
		if err := r.ForgetAuction(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
		if saved, err := r.Load(ctx); err != nil || len(saved) != 0 {
			t.Fatalf("loaded after the auction was forgotten: %+v %v", saved, err)
		}
		if _, _, err := r.Auction(ctx, "a1"); !errors.Is(err, auction.ErrNotFound) {
			t.Fatalf("the forgotten auction read: %v", err)
		}
		if evs, err := r.Events(ctx, "a1"); err != nil || len(evs) != 4 || evs[3].Seq != 4 {
			t.Fatalf("the forgotten auction's events: %+v %v, want its four", evs, err)
		}
	})
}

// TestStalledDatabaseFailsInTime: a PostgreSQL that takes a connection but answers nothing (here its
// tables are locked by another transaction; a network partition or a stopped server looks the same)
// fails the record's writes and reads at their bound rather than holding them for as long as TCP
// takes to give up, and Check says so, within its probe's bound. Once it answers, both recover.
func TestStalledDatabaseFailsInTime(t *testing.T) {
	record.SetTimeouts(t, 300*time.Millisecond, 200*time.Millisecond)
	dsn := pgtest.Database(t)
	r, err := record.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	claims := []drop.Claim{{ID: "d.1", Seq: 1, Code: "A1", Visitor: "a", ClaimedAt: time.Now()}}
	lock, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback() //nolint:errcheck // rolled back below, or at a failure
	if _, err := lock.Exec(`LOCK TABLE drop_claims, record_health IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		if took := time.Since(start); err == nil || took > 3*time.Second {
			t.Fatalf("%s on a stalled database: %v after %v; want an error at its bound", what, err, took)
		}
		t.Logf("%s: %v after %v", what, err, time.Since(start).Round(time.Millisecond))
	}
	timed("a write", func() error { return r.RecordClaims(ctx, "d", claims) })
	timed("a read", func() error { _, err := r.Claims(ctx, "d"); return err })
	timed("the health check", func() error { return r.Check(ctx) })
	if err := r.Check(ctx); !errors.Is(err, record.ErrWrites) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("Check while stalled: %v; want ErrWrites saying the database did not answer in time", err)
	}

	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	// The database may take a moment to clear what the stall left (the cancelled statements) on a busy
	// machine, and the recorders try again: a write soon goes through.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := r.RecordClaims(ctx, "d", claims)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a write once the database answers: %v", err)
		}
	}
	if err := r.Check(ctx); err != nil {
		t.Fatalf("Check once writes succeed: %v", err)
	}
}

// TestSQLiteInUseSaysWhy: a SQLite record that another rushgate holds (two instances given the same
// --data) is refused with an error that says so and what to do, not SQLite's "database is locked".
func TestSQLiteInUseSaysWhy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.db")
	first, err := record.OpenSQLite(context.Background(), path, record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := record.OpenSQLite(context.Background(), path, record.FsyncAlways)
	if err == nil {
		second.Close()
		t.Fatal("a second open of a held SQLite record succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "in use by another process") || !strings.Contains(msg, "--data") || !strings.Contains(msg, path) {
		t.Fatalf("error %q: want it to say the file is in use, and to name it and --data", msg)
	}
}

// TestRecordID: a record keeps its id across opens, and two records have different ids; instances
// compare them to find a record split between them.
func TestRecordID(t *testing.T) {
	dir := t.TempDir()
	ids := func(path string) string {
		r, err := record.OpenSQLite(context.Background(), path, record.FsyncAlways)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return r.ID()
	}
	a, again, b := ids(filepath.Join(dir, "a.db")), ids(filepath.Join(dir, "a.db")), ids(filepath.Join(dir, "b.db"))
	if a == "" || a != again || a == b {
		t.Fatalf("ids %q, %q after reopening, %q of another file: want the first two equal, the third different", a, again, b)
	}
}

// TestOpenPostgresLater: a PostgreSQL record that refuses connections at the start is returned
// unopened: Check and writes fail, and it has no id yet. It opens by itself once the database takes
// connections; one closed before that stops trying (goleak checks that nothing keeps running).
func TestOpenPostgresLater(t *testing.T) {
	record.SetRetryOpen(t, 50*time.Millisecond)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	dsn := pgtest.Database(t)
	pgtest.Refuse(t, dsn, true)
	never, err := record.OpenPostgresLater(ctx, dsn, log)
	if err != nil {
		t.Fatal(err)
	}
	never.Close() // stops trying

	r, err := record.OpenPostgresLater(ctx, dsn, log)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	claims := []drop.Claim{{ID: "d.1", Seq: 1, Code: "A1", Visitor: "a", ClaimedAt: time.Now()}}
	if err := r.Check(ctx); !errors.Is(err, record.ErrWrites) || r.ID() != "" {
		t.Fatalf("unopened: Check %v, id %q; want ErrWrites and no id", err, r.ID())
	}
	if err := r.RecordClaims(ctx, "d", claims); err == nil {
		t.Fatal("a write to an unopened record succeeded")
	}
	pgtest.Refuse(t, dsn, false)
	until := time.Now().Add(5 * time.Second)
	for r.Check(ctx) != nil && time.Now().Before(until) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Check(ctx); err != nil || r.ID() == "" {
		t.Fatalf("once the database takes connections: Check %v, id %q; want it open", err, r.ID())
	}
	if err := r.RecordClaims(ctx, "d", claims); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresHosts: a DSN may list several hosts (a primary and its standbys, with
// target_session_attrs=read-write in production): the record opens on the first that takes
// connections, here past one that refuses them, and writes there.
func TestPostgresHosts(t *testing.T) {
	dsn := pgtest.Database(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = dead + "," + u.Host
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	r, err := record.OpenPostgres(context.Background(), u.String())
	if err != nil {
		t.Fatalf("opening %s: %v", u.Redacted(), err)
	}
	defer r.Close()
	if err := r.RecordClaims(context.Background(), "d", []drop.Claim{{ID: "d.1", Seq: 1, Code: "A1", Visitor: "a", ClaimedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Claims(context.Background(), "d"); err != nil || len(got) != 1 {
		t.Fatalf("claims %+v %v", got, err)
	}
}

// TestBiddersNoEventNames: a bidder added on its own (outbid at once, so no event names it) is loaded
// with its auction, once however often it is added, on either database.
func TestBiddersNoEventNames(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Millisecond)
		for range 2 {
			var b record.Batch
			b.AddAuction("a1", auction.State{Seq: 1}, []auction.Event{{Seq: 1, Kind: auction.EventBid, Bidder: "lead", Price: 100, At: at, EndsAt: at}})
			b.AddBidder("a1", "outbid")
			if err := r.Commit(ctx, &b); err != nil {
				t.Fatal(err)
			}
		}
		saved, err := r.Load(ctx)
		if err != nil || !slices.Equal(saved["a1"].Bidders, []string{"outbid"}) {
			t.Fatalf("loaded %+v %v, want the bidder no event names", saved["a1"], err)
		}
	})
}
