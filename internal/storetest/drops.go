package storetest

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
)

// dropTests are the drop checks of the suite.
var dropTests = []check{
	{"Drop/StockAndPerVisitor", testStock},
	{"Drop/OpenWindow", testOpenWindow},
	{"Drop/Codes", testCodes},
	{"Drop/LookupByCode", testLookupByCode},
	{"Drop/Idempotency", testIdempotency},
	{"Drop/Listing", testListing},
	{"Drop/Replace", testReplace},
	{"Drop/Revision", testDropRevision},
	{"Drop/Written", testDropWritten},
	{"Drop/Crowd", testCrowd},
	{"Drop/RestockCrowd", testRestockCrowd},
	{"Drop/Restore", testRestore},
	{"Drop/RestoreRace", testRestoreRace},
}

func dropCfg(h Harness, stock int) drop.Config {
	return drop.Config{Stock: stock, PerVisitor: 1, OpensAt: h.Now().Truncate(time.Millisecond)}
}

func putDrop(t *testing.T, h Harness, id string, c drop.Config) {
	t.Helper()
	if err := h.Drops.Put(ctx, id, c); err != nil {
		t.Fatalf("Put(%s): %v", id, err)
	}
}

func claim(t *testing.T, h Harness, id, visitor string) drop.Claim {
	t.Helper()
	c, created, err := h.Drops.Claim(ctx, id, "", visitor, "")
	if err != nil || !created {
		t.Fatalf("Claim(%s): %+v %v %v", visitor, c, created, err)
	}
	return c
}

func testStock(t *testing.T, h Harness) {
	putDrop(t, h, "d", dropCfg(h, 2))
	a := claim(t, h, "d", "a")
	if a.Seq != 1 || a.Code == "" || a.ID == "" || a.Visitor != "a" {
		t.Fatalf("claim %+v", a)
	}
	_, _, err := h.Drops.Claim(ctx, "d", "", "a", "")
	var already *drop.AlreadyClaimedError
	if !errors.As(err, &already) || len(already.Claims) != 1 || already.Claims[0] != a {
		t.Fatalf("second claim by a: %v", err)
	}
	claim(t, h, "d", "b")
	if _, _, err := h.Drops.Claim(ctx, "d", "", "c", ""); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("past the stock: %v", err)
	}
	if info, _ := h.Drops.Get(ctx, "d"); info.Claimed != 2 || info.Config.Stock != 2 {
		t.Fatalf("info %+v", info)
	}
	c := dropCfg(h, 5)
	c.PerVisitor = 2
	putDrop(t, h, "two", c)
	claim(t, h, "two", "a")
	claim(t, h, "two", "a")
	if _, _, err := h.Drops.Claim(ctx, "two", "", "a", ""); !errors.As(err, &already) || len(already.Claims) != 2 {
		t.Fatalf("third claim with per_visitor 2: %v", err)
	}
	if _, _, err := h.Drops.Claim(ctx, "nope", "", "a", ""); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("unknown drop: %v", err)
	}
}

func testOpenWindow(t *testing.T, h Harness) {
	c := dropCfg(h, 10)
	c.OpensAt = h.Now().Add(time.Minute).Truncate(time.Millisecond)
	closes := c.OpensAt.Add(time.Minute)
	c.ClosesAt = &closes
	putDrop(t, h, "d", c)
	if _, _, err := h.Drops.Claim(ctx, "d", "", "a", ""); !errors.Is(err, drop.ErrNotOpen) {
		t.Fatalf("before opening: %v", err)
	}
	h.Advance(time.Minute)
	claim(t, h, "d", "a")
	h.Advance(time.Minute)
	if _, _, err := h.Drops.Claim(ctx, "d", "", "b", ""); !errors.Is(err, drop.ErrNotOpen) {
		t.Fatalf("after closing: %v", err)
	}
}

func testCodes(t *testing.T, h Harness) {
	c := dropCfg(h, 3)
	c.Codes = []string{"FIRST", "SECOND", "THIRD"}
	putDrop(t, h, "listed", c)
	// A read of the drop tells how many codes it lists but not the codes: they are its secrets, and a
	// page polls the read.
	info, err := h.Drops.Get(t.Context(), "listed")
	if err != nil || info.Listed != 3 || len(info.Config.Codes) != 0 || info.Config.Stock != 3 {
		t.Fatalf("get: %+v %v; want 3 listed, no codes shown", info, err)
	}
	if codes, err := h.Drops.Codes(t.Context(), "listed"); err != nil || !slices.Equal(codes, c.Codes) {
		t.Fatalf("codes: %v %v; want %v", codes, err, c.Codes)
	}
	for i, v := range []string{"a", "b", "c"} {
		if i == 1 { // moving the window, from the config as read, keeps the codes
			if err := h.Drops.Amend(t.Context(), "listed", info.Rev, info.Config); err != nil {
				t.Fatal(err)
			}
		}
		if got := claim(t, h, "listed", v); got.Code != c.Codes[i] {
			t.Fatalf("claim %d got %s, want %s", i, got.Code, c.Codes[i])
		}
	}
	// A coupon partner's batch: more codes than one step of the store writes at a time.
	many := dropCfg(h, 2500)
	for i := range 2500 {
		many.Codes = append(many.Codes, fmt.Sprintf("BATCH-%05d", i))
	}
	putDrop(t, h, "many", many)
	if codes, err := h.Drops.Codes(t.Context(), "many"); err != nil || !slices.Equal(codes, many.Codes) {
		t.Fatalf("codes of a batch of 2500: %d of them, %v", len(codes), err)
	}
	if got := claim(t, h, "many", "a"); got.Code != "BATCH-00000" {
		t.Fatalf("the batch's first claim got %s", got.Code)
	}
	putDrop(t, h, "gen", dropCfg(h, 50))
	if codes, err := h.Drops.Codes(t.Context(), "gen"); err != nil || len(codes) != 0 {
		t.Fatalf("codes of a drop that generates them: %v %v", codes, err)
	}
	if _, err := h.Drops.Codes(t.Context(), "nope"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("codes of no drop: %v", err)
	}
	seen := map[string]bool{}
	for i := range 50 {
		code := claim(t, h, "gen", fmt.Sprint("v", i)).Code
		if len(code) < 16 || seen[code] {
			t.Fatalf("generated code %q is short or repeated", code)
		}
		seen[code] = true
	}
}

// generated is the shape of a generated code: 16 drawn characters, a hyphen and the claim's number.
var generated = regexp.MustCompile(`^[A-HJ-NP-Z2-9]{16}-([1-9][0-9]*)$`)

// testLookupByCode: a site's checkout finds the claim behind a code a customer presents, by the number
// a generated code ends with or a listed code's place in the list, and nothing for a code no claim
// handed out: a forged one, one of a later claim, or a listed one not handed out yet.
func testLookupByCode(t *testing.T, h Harness) {
	svc := drop.NewService(h.Drops, drop.Options{})
	defer svc.Stop()
	putDrop(t, h, "gen", dropCfg(h, 5))
	var claims []drop.Claim
	for i := range 3 {
		c, _, err := h.Drops.Claim(ctx, "gen", "", fmt.Sprint("v", i), fmt.Sprint("key", i))
		if err != nil {
			t.Fatal(err)
		}
		if m := generated.FindStringSubmatch(c.Code); m == nil || m[1] != fmt.Sprint(c.Seq) {
			t.Fatalf("claim %d has code %q: want 16 drawn characters, '-', %d", c.Seq, c.Code, c.Seq)
		}
		claims = append(claims, c)
	}
	// A repeat answers the same code.
	if again, _, err := h.Drops.Claim(ctx, "gen", "", "v1", "key1"); err != nil || again.Code != claims[1].Code {
		t.Fatalf("repeat: %+v %v; want code %s", again, err, claims[1].Code)
	}
	for _, c := range claims {
		got, err := svc.ClaimOf(ctx, "gen", c.Code)
		if err != nil || got.ID != c.ID || got.Seq != c.Seq || got.Visitor != c.Visitor || got.Code != c.Code || !got.ClaimedAt.Equal(c.ClaimedAt) {
			t.Fatalf("ClaimOf(%s) = %+v, %v; want %+v", c.Code, got, err, c)
		}
	}
	drawn := claims[0].Code[:16]
	for _, code := range []string{
		drop.GeneratedCode("ABCDEFGHJKLMNPQR", 1), // the right number, a forged drawn part
		drop.GeneratedCode(drawn, 2),              // a real drawn part under another claim's number
		drop.GeneratedCode(drawn, 4),              // a number not claimed yet
		drawn, drawn + "-", drawn + "-0", drawn + "-+1", drawn + "-01", "-1", "",
	} {
		if got, err := svc.ClaimOf(ctx, "gen", code); !errors.Is(err, drop.ErrNoSuchCode) {
			t.Fatalf("ClaimOf(%q) = %+v, %v; want ErrNoSuchCode", code, got, err)
		}
	}

	// Listed codes go by their place, even one that looks like a generated code. A list replaced
	// before any claim is the one looked up.
	c := dropCfg(h, 4)
	c.Codes = []string{"COPPER", "IRON", "ZINC", "LEAD"}
	putDrop(t, h, "listed", c)
	if got, err := svc.ClaimOf(ctx, "listed", "COPPER"); !errors.Is(err, drop.ErrNoSuchCode) {
		t.Fatalf("ClaimOf before any claim = %+v, %v; want ErrNoSuchCode", got, err)
	}
	c.Codes = []string{"GOLD-2", "SILVER", "BRONZE", "TIN"}
	putDrop(t, h, "listed", c)
	first, second := claim(t, h, "listed", "a"), claim(t, h, "listed", "b")
	for _, want := range []drop.Claim{first, second, first} {
		if got, err := svc.ClaimOf(ctx, "listed", want.Code); err != nil || got.ID != want.ID || got.Visitor != want.Visitor {
			t.Fatalf("ClaimOf(%s) = %+v, %v; want %+v", want.Code, got, err, want)
		}
	}
	for _, code := range []string{"BRONZE", "TIN", "COPPER", "gold-2", drop.GeneratedCode("ABCDEFGHJKLMNPQR", 1)} {
		if got, err := svc.ClaimOf(ctx, "listed", code); !errors.Is(err, drop.ErrNoSuchCode) {
			t.Fatalf("ClaimOf(%q) on the listed drop = %+v, %v; want ErrNoSuchCode", code, got, err)
		}
	}
	if _, err := svc.ClaimOf(ctx, "nope", "GOLD-2"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("ClaimOf on no drop: %v", err)
	}
}

func testIdempotency(t *testing.T, h Harness) {
	putDrop(t, h, "d", dropCfg(h, 1))
	first, created, err := h.Drops.Claim(ctx, "d", "", "a", "key-1")
	if err != nil || !created {
		t.Fatal(err)
	}
	again, created, err := h.Drops.Claim(ctx, "d", "", "a", "key-1")
	if err != nil || created || again != first {
		t.Fatalf("repeat with the same key: %+v %v %v", again, created, err)
	}
	if _, _, err := h.Drops.Claim(ctx, "d", "", "b", "key-1"); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("another visitor's key is not a's: %v", err)
	}
}

func testListing(t *testing.T, h Harness) {
	putDrop(t, h, "d", dropCfg(h, 10))
	for i := range 5 {
		claim(t, h, "d", fmt.Sprint("v", i))
	}
	page, err := h.Drops.Claims(ctx, "d", 2, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 3 || page[1].Visitor != "v3" {
		t.Fatalf("page %+v %v", page, err)
	}
	for _, after := range []int64{5, math.MaxInt64} { // nothing after the last, nor after the largest number
		if page, err := h.Drops.Claims(ctx, "d", after, 2); err != nil || len(page) != 0 {
			t.Fatalf("after %d: %+v %v", after, page, err)
		}
	}
	mine, _ := h.Drops.Mine(ctx, "d", "v4")
	if len(mine) != 1 || mine[0].Seq != 5 {
		t.Fatalf("mine %+v", mine)
	}
	if none, _ := h.Drops.Mine(ctx, "d", "stranger"); len(none) != 0 {
		t.Fatalf("a stranger's claims %+v", none)
	}
}

func testReplace(t *testing.T, h Harness) {
	putDrop(t, h, "d", dropCfg(h, 10))
	second := dropCfg(h, 20)
	second.Title = "Second batch, ボックス"
	putDrop(t, h, "d", second) // nothing claimed: may be replaced
	claim(t, h, "d", "a")
	if info, err := h.Drops.Get(ctx, "d"); err != nil || info.Config.Title != second.Title || info.Config.Stock != 20 {
		t.Fatalf("the replaced drop reads %+v %v", info.Config, err)
	}
	if err := h.Drops.Put(ctx, "d", dropCfg(h, 30)); !errors.Is(err, drop.ErrStarted) {
		t.Fatalf("replacing after a claim: %v", err)
	}
	if err := h.Drops.Delete(ctx, "d"); !errors.Is(err, drop.ErrStarted) {
		t.Fatalf("deleting after a claim: %v", err)
	}
	if info, err := h.Drops.Get(ctx, "d"); err != nil || info.Claimed != 1 {
		t.Fatalf("a refused delete changed the drop: %+v %v", info, err)
	}
	putDrop(t, h, "e", dropCfg(h, 5))
	if err := h.Drops.Delete(ctx, "e"); err != nil {
		t.Fatalf("deleting a drop without claims: %v", err)
	}
	if _, err := h.Drops.Get(ctx, "e"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if _, _, err := h.Drops.Claim(ctx, "e", "", "a", ""); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("Claim after Delete: %v", err)
	}
	if err := h.Drops.Delete(ctx, "e"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	putDrop(t, h, "e", dropCfg(h, 5))
	claim(t, h, "e", "a")
}

// testDropRevision: a claim that names a revision other than the drop's config's is refused with
// ErrStale and takes nothing, whether the drop was replaced or deleted and created again.
func testDropRevision(t *testing.T, h Harness) {
	rev := func(id string) string {
		t.Helper()
		info, err := h.Drops.Get(ctx, id)
		if err != nil || info.Rev == "" {
			t.Fatalf("Get(%s): %+v %v, want a revision", id, info, err)
		}
		return info.Rev
	}
	putDrop(t, h, "d", dropCfg(h, 5))
	old := rev("d")
	putDrop(t, h, "d", dropCfg(h, 5))
	cur := rev("d")
	if cur == old {
		t.Fatal("a replaced drop kept its revision")
	}
	if _, _, err := h.Drops.Claim(ctx, "d", old, "a", "k"); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("claim at the replaced revision: %v, want ErrStale", err)
	}
	if info, _ := h.Drops.Get(ctx, "d"); info.Claimed != 0 {
		t.Fatalf("a stale claim took %d units", info.Claimed)
	}
	if c, created, err := h.Drops.Claim(ctx, "d", cur, "a", "k"); err != nil || !created || c.Seq != 1 {
		t.Fatalf("claim at the current revision: %+v %v %v", c, created, err)
	}
	putDrop(t, h, "e", dropCfg(h, 5))
	old = rev("e")
	if err := h.Drops.Delete(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	putDrop(t, h, "e", dropCfg(h, 5))
	if _, _, err := h.Drops.Claim(ctx, "e", old, "a", ""); !errors.Is(err, rushgate.ErrStale) {
		t.Fatalf("claim at the revision of a drop deleted and created again: %v, want ErrStale", err)
	}
}

// testDropWritten: every write of a drop's config (a Put, an Amend, a Restore) takes a number past
// the one before, also for a drop deleted and made again at once, so that the stocks its room hears of
// are ordered (see rushgate.Level); a read or a claim takes none.
func testDropWritten(t *testing.T, h Harness) {
	var last int64
	next := func(what string) drop.Info {
		t.Helper()
		info, err := h.Drops.Get(ctx, "w")
		if err != nil || info.Written <= last {
			t.Fatalf("after %s: %+v %v, want Written past %d", what, info, err, last)
		}
		last = info.Written
		return info
	}
	c := dropCfg(h, 5)
	putDrop(t, h, "w", c)
	next("a put")
	putDrop(t, h, "w", c)
	info := next("the same put again")
	for range 3 {
		if err := h.Drops.Delete(ctx, "w"); err != nil {
			t.Fatal(err)
		}
		putDrop(t, h, "w", c)
		info = next("a delete and a put")
	}
	if _, _, err := h.Drops.Claim(ctx, "w", info.Rev, "a", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Drops.Get(ctx, "w"); err != nil || got.Written != last {
		t.Fatalf("after a claim: %+v %v, want Written %d still", got, err, last)
	}
	for i := range 3 {
		c.Stock = 6 + i
		if err := h.Drops.Amend(ctx, "w", info.Rev, c); err != nil {
			t.Fatal(err)
		}
		info = next("an amend")
	}
	if err := h.Drops.Delete(ctx, "gone"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("deleting a drop never made: %v", err)
	}
}

// testCrowd has 5,000 visitors press the button 4 times each, 200 at a time, for a stock of 1,000:
// exactly 1,000 claims succeed, for 1,000 distinct visitors, with no code twice.
func testCrowd(t *testing.T, h Harness) {
	const stock, visitors, presses = 1000, 5000, 4
	putDrop(t, h, "d", dropCfg(h, stock))
	info, _ := h.Drops.Get(ctx, "d")
	var mu sync.Mutex
	won := map[string]drop.Claim{}
	sem := make(chan struct{}, 200)
	var wg sync.WaitGroup
	for i := range visitors * presses {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			v := fmt.Sprint("v", i%visitors)
			c, created, err := h.Drops.Claim(ctx, "d", info.Rev, v, "")
			var already *drop.AlreadyClaimedError
			switch {
			case err == nil && created:
				mu.Lock()
				if _, dup := won[v]; dup {
					t.Errorf("%s got two claims", v)
				}
				won[v] = c
				mu.Unlock()
			case errors.Is(err, drop.ErrSoldOut), errors.As(err, &already):
			default:
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if len(won) != stock {
		t.Fatalf("%d claims succeeded, stock %d", len(won), stock)
	}
	codes := map[string]bool{}
	var seqs []int64
	for _, c := range won {
		if codes[c.Code] {
			t.Fatalf("code %s handed out twice", c.Code)
		}
		codes[c.Code] = true
		seqs = append(seqs, c.Seq)
	}
	slices.Sort(seqs)
	if seqs[0] != 1 || seqs[len(seqs)-1] != stock {
		t.Fatalf("claim sequence runs %d..%d", seqs[0], seqs[len(seqs)-1])
	}
	// Each winner was answered with its claim as the drop keeps it, though the answers were built from
	// batches that mixed new claims with refusals.
	kept, err := h.Drops.Claims(ctx, "d", 0, stock)
	if err != nil || len(kept) != stock {
		t.Fatalf("%d claims listed: %v", len(kept), err)
	}
	for _, c := range kept {
		if won[c.Visitor] != c {
			t.Fatalf("%s was answered %+v, the drop keeps %+v", c.Visitor, won[c.Visitor], c)
		}
	}
}

// testRestockCrowd has 3,000 visitors claim, 100 at a time, from a stock of 100 that an operator raises
// by 50 at a time while they do, ten times or until it sells out (a drop sold out takes no new stock). However the
// raises and the claims interleave, the claims are exactly the final stock, numbered 1 to it, for
// distinct visitors: a raise never lets a claim past the stock, nor loses one.
func testRestockCrowd(t *testing.T, h Harness) {
	const visitors = 3000
	putDrop(t, h, "rc", dropCfg(h, 100))
	raised := make(chan int)
	// The first 80 visitors claim while the operator first raises the stock (they cannot sell it out
	// first); the crowd follows, racing the other raises.
	crowd := make(chan struct{})
	let := sync.OnceFunc(func() { close(crowd) })
	go func() { // the operator
		stock := 100
		defer func() { let(); raised <- stock }()
		for i := range 10 {
			if i == 1 {
				let()
			}
			for {
				info, err := h.Drops.Get(ctx, "rc")
				if err != nil {
					t.Error(err)
					return
				}
				c := info.Config
				c.Stock += 50
				err = h.Drops.Amend(ctx, "rc", info.Rev, c)
				if errors.Is(err, rushgate.ErrStale) {
					continue
				}
				if errors.Is(err, drop.ErrSoldOut) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				stock = c.Stock
				break
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var mu sync.Mutex
	won := map[string]drop.Claim{}
	sem := make(chan struct{}, 100)
	var wg sync.WaitGroup
	for i := range visitors {
		if i == 80 {
			<-crowd
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			v := fmt.Sprint("r", i)
			c, created, err := h.Drops.Claim(ctx, "rc", "", v, "")
			switch {
			case err == nil && created:
				mu.Lock()
				won[v] = c
				mu.Unlock()
			case errors.Is(err, drop.ErrSoldOut):
			default:
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	stock := <-raised
	info, err := h.Drops.Get(ctx, "rc")
	if err != nil || info.Config.Stock != stock {
		t.Fatalf("the drop's stock is %d (%v); the operator's last raise took it to %d", info.Config.Stock, err, stock)
	}
	if len(won) != stock || info.Claimed != stock {
		t.Fatalf("%d claims answered, %d counted, for a final stock of %d", len(won), info.Claimed, stock)
	}
	kept, err := h.Drops.Claims(ctx, "rc", 0, stock+1)
	if err != nil || len(kept) != stock {
		t.Fatalf("%d claims listed: %v", len(kept), err)
	}
	for i, c := range kept {
		if c.Seq != int64(i+1) || won[c.Visitor] != c {
			t.Fatalf("claim %d is %+v; %s was answered %+v", i+1, c, c.Visitor, won[c.Visitor])
		}
	}
}

// held is n claims of drop id as the record keeps them, by visitors v1, v2, ..., each with an
// idempotency key.
func held(h Harness, id string, n int) []drop.Claim {
	at := h.Now().UTC().Truncate(time.Millisecond)
	out := make([]drop.Claim, n)
	for i := range out {
		seq := int64(i + 1)
		out[i] = drop.Claim{Seq: seq, ID: drop.ClaimID(id, seq), Code: fmt.Sprint("CODE", seq), Visitor: fmt.Sprint("v", seq),
			ClaimedAt: at.Add(time.Duration(i) * time.Millisecond), Key: fmt.Sprint("key", seq)}
	}
	return out
}

// sameClaims reports whether got are want, but for the idempotency keys, which a store keeps and
// never shows.
func sameClaims(got, want []drop.Claim) bool {
	return slices.EqualFunc(got, want, func(g, w drop.Claim) bool {
		g.Key, w.Key = "", ""
		return g.Seq == w.Seq && g.ID == w.ID && g.Code == w.Code && g.Visitor == w.Visitor && g.ClaimedAt.Equal(w.ClaimedAt)
	})
}

// testRestore: a drop taken back with the claims the record kept goes on from the last of them. Its
// visitors keep what they hold, at their limit, and their repeats answer as before; the numbers and
// the listed codes go on, and the stock ends where it would have.
func testRestore(t *testing.T, h Harness) {
	c := dropCfg(h, 5)
	c.PerVisitor = 2
	c.Codes = []string{"C1", "C2", "C3", "C4", "C5"}
	kept := held(h, "d", 3)
	kept[2].Visitor = "v1" // v1 holds two, its limit
	for i := range kept {
		kept[i].Code = c.Codes[i]
	}
	if err := h.Drops.Restore(ctx, "d", c, kept); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if info, err := h.Drops.Get(ctx, "d"); err != nil || info.Claimed != 3 || info.Config.Stock != 5 {
		t.Fatalf("restored drop: %+v %v", info, err)
	}
	if mine, err := h.Drops.Mine(ctx, "d", "v1"); err != nil || !sameClaims(mine, []drop.Claim{kept[0], kept[2]}) {
		t.Fatalf("v1's claims: %+v %v", mine, err)
	}
	_, _, err := h.Drops.Claim(ctx, "d", "", "v1", "")
	var already *drop.AlreadyClaimedError
	if !errors.As(err, &already) || !sameClaims(already.Claims, []drop.Claim{kept[0], kept[2]}) {
		t.Fatalf("v1 past its limit: %v", err)
	}
	again, created, err := h.Drops.Claim(ctx, "d", "", "v2", "key2")
	if err != nil || created || !sameClaims([]drop.Claim{again}, kept[1:2]) {
		t.Fatalf("v2 repeating its claim: %+v %v %v", again, created, err)
	}
	for i, v := range []string{"x", "y"} {
		if got := claim(t, h, "d", v); got.Seq != int64(4+i) || got.Code != c.Codes[3+i] || got.ID != drop.ClaimID("d", got.Seq) {
			t.Fatalf("claim after the restore: %+v", got)
		}
	}
	if _, _, err := h.Drops.Claim(ctx, "d", "", "z", ""); !errors.Is(err, drop.ErrSoldOut) {
		t.Fatalf("past the stock: %v", err)
	}
	if all, err := h.Drops.Claims(ctx, "d", 0, 10); err != nil || len(all) != 5 || !sameClaims(all[:3], kept) {
		t.Fatalf("claims: %+v %v", all, err)
	}
	if err := h.Drops.Restore(ctx, "d", c, kept); !errors.Is(err, drop.ErrStarted) {
		t.Fatalf("restoring a drop with claims: %v", err)
	}

	// Claims not numbered 1 to n are refused, and leave nothing.
	gap := held(h, "gap", 3)[1:]
	if err := h.Drops.Restore(ctx, "gap", dropCfg(h, 5), gap); err == nil {
		t.Fatal("restored claims numbered from 2")
	}
	if _, err := h.Drops.Get(ctx, "gap"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("a refused restore left a drop: %v", err)
	}

	// A drop without claims is replaced, as Put would; more claims than one script call carries on Redis.
	putDrop(t, h, "big", dropCfg(h, 10))
	many := held(h, "big", 2500)
	if err := h.Drops.Restore(ctx, "big", dropCfg(h, 2600), many); err != nil {
		t.Fatalf("Restore of 2,500 claims: %v", err)
	}
	if got := claim(t, h, "big", "newcomer"); got.Seq != 2501 {
		t.Fatalf("claim by a new visitor after 2,500: %+v", got)
	}
	if all, err := h.Drops.Claims(ctx, "big", 0, 3000); err != nil || !sameClaims(all[:2500], many) {
		t.Fatalf("claims of the big drop: %d %v", len(all), err)
	}
}

// testRestoreRace: restores of one drop at once (operators putting it back) leave it whole: exactly
// its claims, once each. One wins, and the others find it restored: on Redis, where a restore takes
// several calls, racing restores had cleared each other's pieces until all of them gave up.
func testRestoreRace(t *testing.T, h Harness) {
	many := held(h, "d", 2500)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = h.Drops.Restore(ctx, "d", dropCfg(h, 3000), many) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, drop.ErrStarted):
			t.Fatalf("a racing restore: %v (all: %v)", err, errs)
		}
	}
	if won != 1 {
		t.Fatalf("%d restores won: %v", won, errs)
	}
	if info, err := h.Drops.Get(ctx, "d"); err != nil || info.Claimed != 2500 {
		t.Fatalf("after the race: %+v %v", info, err)
	}
	if all, err := h.Drops.Claims(ctx, "d", 0, 3000); err != nil || !sameClaims(all, many) {
		t.Fatalf("claims after the race: %d %v", len(all), err)
	}
	if got := claim(t, h, "d", "new"); got.Seq != 2501 {
		t.Fatalf("claim after the race: %+v", got)
	}
}
