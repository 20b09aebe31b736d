package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
)

// dying writes to SQL, then dies before it can move the cursor: the write committed, the move never came.
type dying struct{ *record.DB }

func (d dying) Record(ctx context.Context, id string, st auction.State, evs []auction.Event) error {
	if err := d.DB.Record(ctx, id, st, evs[:len(evs)/2]); err != nil {
		return err
	}
	return errors.New("killed before acknowledging")
}

// TestRecorderSurvivesAConsumerDeath: a recorder records half of what it read and dies without moving
// the cursor; once its lease lapses another takes the auction over from the cursor, and the SQL record
// ends with every event exactly once and the one settlement.
func TestRecorderSurvivesAConsumerDeath(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	a := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("rec")}).Auctions()
	a.RecordLease = 200 * time.Millisecond
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Second)} // room for ten bids on a loaded machine
	if err := a.Put(ctx, "lot", cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: fmt.Sprintf("b%d", i%3), Max: int64(200 + 50*i)}); err != nil && !errors.Is(err, auction.ErrTooLow) {
			t.Fatal(err)
		}
	}
	if err := a.RecordOnce(ctx, "dies", dying{rec}); err == nil {
		t.Fatal("the dying consumer reported success")
	}
	time.Sleep(time.Until(cfg.EndsAt) + 100*time.Millisecond) // the auction ends, and the dead consumer's events go idle
	if _, err := a.Close(ctx, "lot"); err != nil {
		t.Fatal(err)
	}
	want, _ := a.Events(ctx, "lot", 0, 1000)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := a.RecordOnce(ctx, "lives", rec); err != nil {
			t.Fatal(err)
		}
		rows, _ := rec.Events(ctx, "lot")
		if len(rows) == len(want) {
			for i := range rows {
				if rows[i].Seq != want[i].Seq || rows[i].Price != want[i].Price || rows[i].Bidder != want[i].Bidder {
					t.Fatalf("row %d = %+v, event %+v", i, rows[i], want[i])
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %d events after the takeover", len(rows), len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := rec.Result(ctx, "lot")
	if last := want[len(want)-1]; err != nil || last.Kind != auction.EventClosed || res.Winner != last.Bidder || res.FinalPrice != last.Price {
		t.Fatalf("result %+v %v, last event %+v", res, err, last)
	}
}

// TestRecorderRetiresWhatIsOver: the recorders used to poll every auction and drop ever created, every
// 100 ms. Once an auction is closed or sold, or a drop sold out or closed, and all of its events are
// recorded, it leaves the registry they poll; an auction replaced after a close without bids comes
// back, and so does a drop reopened by its operator, and their new events are recorded; an open one
// stays.
func TestRecorderRetiresWhatIsOver(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix("retire")
	b := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	a, d := b.Auctions(), b.Drops()
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx := context.Background()
	registered := func(registry string) []string {
		t.Helper()
		ids, err := rdb.Do(ctx, rdb.B().Smembers().Key(prefix+":"+registry).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	pass := func() {
		t.Helper()
		if err := a.RecordOnce(ctx, "c", rec); err != nil {
			t.Fatal(err)
		}
		if err := d.RecordOnce(ctx, "c", rec); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Truncate(time.Millisecond)
	lot := func(ends time.Time) auction.Config {
		return auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
			BuyNowPrice: ptr(900), StartsAt: now.Add(-time.Minute), EndsAt: ends}
	}
	for id, ends := range map[string]time.Time{"open": now.Add(time.Hour), "sold": now.Add(time.Hour), "ended": now.Add(-time.Second)} {
		if err := a.Put(ctx, id, lot(ends)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.BuyNow(ctx, "sold", "", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Close(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	for id, stock := range map[string]int{"gone": 1, "left": 5, "shut": 5} {
		if err := d.Put(ctx, id, drop.Config{Stock: stock, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.Claim(ctx, id, "", "v", ""); err != nil {
			t.Fatal(err)
		}
	}
	schedule := func(id string, closes *time.Time) {
		t.Helper()
		info, err := d.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		cfg.ClosesAt = closes
		if err := d.Amend(ctx, id, info.Rev, cfg); err != nil {
			t.Fatal(err)
		}
	}
	closed := now.Add(-time.Minute) // closed with stock left, as an operator's Close now does
	schedule("shut", &closed)
	pass() // records the sale, the close and the claims
	pass() // nothing left to record: what is over retires
	if got := registered("auctions"); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("auctions polled: %v, want only the open one", got)
	}
	if got := registered("drops"); !slices.Equal(got, []string{"left"}) {
		t.Fatalf("drops polled: %v, want only the one with stock left", got)
	}
	if res, err := rec.Result(ctx, "sold"); err != nil || res.Winner != "x" {
		t.Fatalf("the retired sale's record: %+v %v", res, err)
	}
	// The auction that ended without bids is corrected: it is polled again, and its bids are recorded.
	if err := a.Put(ctx, "ended", lot(now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bid(ctx, "ended", "", auction.Bid{Bidder: "y", Max: 500}); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := registered("auctions"); !slices.Equal(got, []string{"ended", "open"}) {
		t.Fatalf("auctions polled after the correction: %v", got)
	}
	evs, err := rec.Events(ctx, "ended")
	if err != nil || len(evs) != 2 || evs[1].Kind != auction.EventBid || evs[1].Bidder != "y" {
		t.Fatalf("the corrected auction's record: %+v %v", evs, err)
	}
	// The drop closed with stock left is opened again: it is polled again, and its new claim recorded.
	schedule("shut", nil)
	if got := registered("drops"); !slices.Equal(got, []string{"left", "shut"}) {
		t.Fatalf("drops polled after the reopening: %v", got)
	}
	if _, _, err := d.Claim(ctx, "shut", "", "w", ""); err != nil {
		t.Fatal(err)
	}
	pass()
	if claims, err := rec.Claims(ctx, "shut"); err != nil || len(claims) != 2 || claims[1].Visitor != "w" {
		t.Fatalf("the reopened drop's record: %+v %v", claims, err)
	}
}

// TestRecorderJudgesClosingByTheStoresClock: whether a drop has closed is judged by the clock its
// claims are judged by, which a test (or a restore) may set apart from Redis's own: a drop open by the
// store's clock stays polled, and leaves once that clock passes its closing time.
func TestRecorderJudgesClosingByTheStoresClock(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix("retireclock")
	at := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond) // a day behind Redis's clock
	b := redisstore.New(rdb, redisstore.Options{Prefix: prefix, Clock: func() time.Time { return at }})
	d := b.Drops()
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx := context.Background()
	closes := at.Add(time.Hour)
	if err := d.Put(ctx, "d", drop.Config{Stock: 5, PerVisitor: 1, OpensAt: at.Add(-time.Minute), ClosesAt: &closes}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Claim(ctx, "d", "", "v", ""); err != nil {
		t.Fatal(err)
	}
	polled := func() []string {
		t.Helper()
		for range 2 { // the first records the claim, the second may retire
			if err := d.RecordOnce(ctx, "c", rec); err != nil {
				t.Fatal(err)
			}
		}
		ids, err := rdb.Do(ctx, rdb.B().Smembers().Key(prefix+":drops").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := polled(); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("drops polled while open by the store's clock: %v", got)
	}
	at = closes.Add(time.Minute)
	if got := polled(); len(got) != 0 {
		t.Fatalf("drops polled once closed by the store's clock: %v", got)
	}
}

func ptr(v int64) *int64 { return &v }

// TestRecorderKeepsUpWithACrowd: one pass records every claim a crowd made on one drop since the last
// pass, not one page of them; a recorder that read a page per tick fell ever further behind a drop
// taking more claims a second than that.
func TestRecorderKeepsUpWithACrowd(t *testing.T) {
	rdb := redistest.Client(t, redistest.Shared(t))
	d := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("crowd"), Timeout: 10 * time.Second}).Drops()
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx := context.Background()
	const crowd = 4500
	if err := d.Put(ctx, "d", drop.Config{Stock: crowd, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for i := range crowd {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, _, err := d.Claim(ctx, "d", "", fmt.Sprint("v", i), ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := d.RecordOnce(ctx, "c", rec); err != nil {
		t.Fatal(err)
	}
	if got, err := rec.Claims(ctx, "d"); err != nil || len(got) != crowd {
		t.Fatalf("one pass recorded %d of %d claims: %v", len(got), crowd, err)
	}
}

// TestRecorderLeaseIsExclusive: one recorder at a time copies an auction's stream. Another finds the
// lease held and records nothing; once the holder stops renewing, the other takes over from the cursor,
// writing only what the first had not recorded, and the first, now refused, records nothing more. On a
// standalone Redis and on a Cluster, where the lease shares the auction's slot.
func TestRecorderLeaseIsExclusive(t *testing.T) {
	redistest.EachTopology(t, testLeaseIsExclusive)
}

func testLeaseIsExclusive(t *testing.T, tp redistest.Topology) {
	a := redisstore.New(tp.Client(t), redisstore.Options{Prefix: redistest.Prefix("lease"), Cluster: tp.Cluster}).Auctions()
	a.RecordLease = 300 * time.Millisecond
	ctx := context.Background()
	open := func() *record.DB {
		t.Helper()
		rec, err := record.OpenSQLite(ctx, filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rec.Close() })
		return rec
	}
	first, second := open(), open()
	now := time.Now()
	if err := a.Put(ctx, "lot", auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	bid := func(who string, max int64) {
		t.Helper()
		if _, err := a.Bid(ctx, "lot", "", auction.Bid{Bidder: who, Max: max}); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func(rec *record.DB) []int64 {
		t.Helper()
		evs, err := rec.Events(ctx, "lot")
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	pass := func(name string, rec *record.DB) {
		t.Helper()
		if err := a.RecordOnce(ctx, name, rec); err != nil {
			t.Fatal(err)
		}
	}
	bid("x", 200)
	pass("first", first)
	bid("y", 300)
	pass("second", second) // the first holds the lease
	if got := seqs(second); len(got) != 0 {
		t.Fatalf("a recorder without the lease recorded %v", got)
	}
	recorded := seqs(first)
	time.Sleep(2 * a.RecordLease) // the first stops renewing
	pass("second", second)
	all, _ := a.Events(ctx, "lot", 0, 100)
	var rest []int64
	for _, e := range all[len(recorded):] {
		rest = append(rest, e.Seq)
	}
	if got := seqs(second); len(rest) == 0 || !slices.Equal(got, rest) {
		t.Fatalf("after the takeover the second recorded %v; the first had %v of %d events", got, recorded, len(all))
	}
	bid("x", 400)
	pass("first", first) // the second holds the lease now
	if got := seqs(first); !slices.Equal(got, recorded) {
		t.Fatalf("the first recorded %v after losing the lease, had %v", got, recorded)
	}
}

// TestLostDropIsRestoredFromTheRecord: Redis loses everything (a restart without persistence) after
// three claims reached the SQL record. Putting the drop again takes it back with them: its visitors keep
// their claims and their limit, the stock ends where it would have, and the record ends with each unit
// once, as answered. Before, the drop started again from zero: two more units than its stock went
// out, and the record silently kept the old claims under the numbers of the new.
func TestLostDropIsRestoredFromTheRecord(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix("lost")
	d := redisstore.New(rdb, redisstore.Options{Prefix: prefix}).Drops()
	rec := openRecord(t)
	svc := drop.NewService(d, drop.Options{Record: rec})
	defer svc.Stop()
	ctx := context.Background()
	cfg := drop.Config{Stock: 5, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute).Truncate(time.Millisecond)}
	if _, err := svc.Put(ctx, "sale", cfg); err != nil {
		t.Fatal(err)
	}
	var answered []drop.Claim
	claim := func(v, key string) (drop.Claim, bool, error) {
		return svc.Claim(ctx, drop.ClaimRequest{Drop: "sale", Visitor: v, Key: key})
	}
	for _, v := range []string{"a", "b", "c"} {
		c, _, err := claim(v, "k-"+v)
		if err != nil {
			t.Fatal(err)
		}
		answered = append(answered, c)
	}
	if err := d.RecordOnce(ctx, "c", rec); err != nil {
		t.Fatal(err)
	}

	wipe(t, rdb, prefix) // Redis forgets every key of this instance
	if _, err := svc.Get(ctx, "sale"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("after the loss: %v", err)
	}
	small := cfg
	small.Stock = 2
	var ce *drop.ConfigError
	if _, err := svc.Put(ctx, "sale", small); !errors.As(err, &ce) || ce.Field != "stock" {
		t.Fatalf("a stock below the recorded claims: %v", err)
	}
	if _, err := svc.Put(ctx, "sale", cfg); err != nil {
		t.Fatal(err)
	}
	if info, err := svc.Get(ctx, "sale"); err != nil || info.Claimed != 3 {
		t.Fatalf("restored: %+v %v", info, err)
	}
	var already *drop.AlreadyClaimedError
	if _, _, err := claim("a", ""); !errors.As(err, &already) {
		t.Fatalf("a claiming again: %v", err)
	}
	if again, created, err := claim("b", "k-b"); err != nil || created || again.ID != answered[1].ID || again.Code != answered[1].Code {
		t.Fatalf("b repeating its claim: %+v %v %v", again, created, err)
	}
	for _, v := range []string{"d", "e"} {
		c, _, err := claim(v, "")
		if err != nil {
			t.Fatal(err)
		}
		answered = append(answered, c)
	}
	if _, _, err := claim("f", ""); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("past the stock: %v", err)
	}
	if err := d.RecordOnce(ctx, "c", rec); err != nil {
		t.Fatal(err)
	}
	got, err := rec.Claims(ctx, "sale")
	if err != nil || len(got) != len(answered) {
		t.Fatalf("recorded %d claims (%v), answered %d", len(got), err, len(answered))
	}
	for i, c := range got {
		if w := answered[i]; c.Seq != w.Seq || c.ID != w.ID || c.Code != w.Code || c.Visitor != w.Visitor {
			t.Fatalf("recorded claim %d is %+v, answered %+v", i+1, c, w)
		}
	}
}

// openRecord opens a SQL record of the test's own, closed at its end.
func openRecord(t *testing.T) *record.DB {
	t.Helper()
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

// wipe deletes every key under prefix: Redis losing this instance's data.
func wipe(t *testing.T, rdb rueidis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Do(ctx, rdb.B().Keys().Pattern(prefix+":*").Build()).AsStrSlice()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v %v", keys, err)
	}
	for _, k := range keys {
		if err := rdb.Do(ctx, rdb.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLostAuctionIsRestoredFromTheRecord: Redis loses everything after an auction's three bids and
// another auction's close without bids reached the SQL record. Putting the first again takes it back
// as recorded: its leader's proxy maximum still answers, and its events number on. The second starts
// afresh as put, numbering on past its recorded close. The record ends with each event number once.
func TestLostAuctionIsRestoredFromTheRecord(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix("lostlot")
	a := redisstore.New(rdb, redisstore.Options{Prefix: prefix}).Auctions()
	rec := openRecord(t)
	svc := auction.NewService(a, auction.ServiceOptions{Record: rec})
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 1000, Increment: auction.Fixed(100),
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
	for _, id := range []string{"lot", "empty"} {
		if err := svc.Put(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []auction.Bid{{Bidder: "x", Max: 1500}, {Bidder: "y", Max: 1300}, {Bidder: "z", Max: 1700}} {
		if _, err := svc.Bid(ctx, "lot", b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Reschedule(ctx, "empty", now); err != nil { // ends now, without bids
		t.Fatal(err)
	}
	if err := a.RecordOnce(ctx, "c", rec); err != nil {
		t.Fatal(err)
	}
	before, _ := rec.Events(ctx, "lot")
	closedAt, _ := rec.Events(ctx, "empty")
	if len(before) == 0 || len(closedAt) == 0 {
		t.Fatalf("recorded %d and %d events", len(before), len(closedAt))
	}

	wipe(t, rdb, prefix)
	if _, err := svc.Get(ctx, "lot"); !errors.Is(err, auction.ErrNotFound) {
		t.Fatalf("after the loss: %v", err)
	}
	if err := svc.Put(ctx, "lot", cfg); err != nil {
		t.Fatalf("putting back the recorded config: %v", err)
	}
	st, err := svc.Get(ctx, "lot")
	if err != nil || st.Leader != "z" || st.Price != 1600 || st.Bids != 3 || st.Config.Title != "Lot" {
		t.Fatalf("restored %+v %v", st, err)
	}
	if _, err := svc.Bid(ctx, "lot", auction.Bid{Bidder: "x", Max: 1650}, nil); err == nil {
		t.Fatal("a bid below z's maximum took the lead from the restored proxy")
	}
	o, err := svc.Bid(ctx, "lot", auction.Bid{Bidder: "w", Max: 2000}, nil)
	if err != nil || o.State.Leader != "w" || o.State.Price != 1800 {
		t.Fatalf("w's bid: %+v %v", o.State, err)
	}
	if err := svc.Put(ctx, "empty", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Bid(ctx, "empty", auction.Bid{Bidder: "v", Max: 1000}, nil); err != nil {
		t.Fatal(err)
	}

	if err := a.RecordOnce(ctx, "c", rec); err != nil {
		t.Fatal(err)
	}
	for id, recorded := range map[string][]auction.Event{"lot": before, "empty": closedAt} {
		evs, err := rec.Events(ctx, id)
		if err != nil || len(evs) <= len(recorded) {
			t.Fatalf("%s: %d events recorded after, %d before (%v)", id, len(evs), len(recorded), err)
		}
		if !slices.Equal(evs[:len(recorded)], recorded) {
			t.Fatalf("%s: the recorded events changed: %+v, were %+v", id, evs, recorded)
		}
		last := evs[len(evs)-1]
		if last.Kind != auction.EventBid || (id == "lot" && last.Bidder != "w") || (id == "empty" && last.Bidder != "v") {
			t.Fatalf("%s: the new bid was not recorded: %+v", id, evs)
		}
	}
}

// TestBacklogCountsWhatWaits: the backlog counts the claims and events that the outboxes hold past
// their recorded cursors, on standalone Redis and on a Cluster (entities in different slots), and
// falls to nothing once a recorder has copied them.
func TestBacklogCountsWhatWaits(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		b := redisstore.New(tp.Client(t), redisstore.Options{Prefix: redistest.Prefix("backlog"), Cluster: tp.Cluster})
		ctx := t.Context()
		backlog := func(claims, events int64) {
			t.Helper()
			if gotClaims, gotEvents, err := b.Backlog(ctx); err != nil || gotClaims != claims || gotEvents != events {
				t.Fatalf("backlog: %d claims, %d events, %v; want %d and %d", gotClaims, gotEvents, err, claims, events)
			}
		}
		backlog(0, 0)
		now := time.Now().Truncate(time.Millisecond)
		for i, id := range []string{"a", "b", "c"} {
			if err := b.Drops().Put(ctx, id, drop.Config{Stock: 10, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
			for v := range i + 1 {
				if _, _, err := b.Drops().Claim(ctx, id, "", fmt.Sprint("v", v), ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
			StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
		if err := b.Auctions().Put(ctx, "lot", cfg); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := b.Auctions().Bid(ctx, "lot", "", auction.Bid{Bidder: fmt.Sprint("b", i), Max: int64(200 + 100*i)}); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := b.Auctions().Events(ctx, "lot", 0, 100)
		if err != nil || len(evs) < 2 {
			t.Fatalf("the auction's events: %v %v", evs, err)
		}
		backlog(6, int64(len(evs))) // 1 + 2 + 3 claims; each bid appends one event or more
		rec := openRecord(t)
		if err := b.Drops().RecordOnce(ctx, "r", rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Auctions().RecordOnce(ctx, "r", rec); err != nil {
			t.Fatal(err)
		}
		backlog(0, 0)
	})
}
