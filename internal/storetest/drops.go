package storetest

import (
	"errors"
	"fmt"
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
	{"Drop/Idempotency", testIdempotency},
	{"Drop/Listing", testListing},
	{"Drop/Replace", testReplace},
	{"Drop/Revision", testDropRevision},
	{"Drop/Crowd", testCrowd},
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
	for i, v := range []string{"a", "b", "c"} {
		if got := claim(t, h, "listed", v); got.Code != c.Codes[i] {
			t.Fatalf("claim %d got %s, want %s", i, got.Code, c.Codes[i])
		}
	}
	putDrop(t, h, "gen", dropCfg(h, 50))
	seen := map[string]bool{}
	for i := range 50 {
		code := claim(t, h, "gen", fmt.Sprint("v", i)).Code
		if len(code) < 16 || seen[code] {
			t.Fatalf("generated code %q is short or repeated", code)
		}
		seen[code] = true
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
	putDrop(t, h, "d", dropCfg(h, 20)) // nothing claimed: may be replaced
	claim(t, h, "d", "a")
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
