package drop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/memstore"
	sqlrecord "github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/storetest"
)

// gate is a waiting room as a drop sees it: which admissions are live, and releases that fail while
// it is told the room's store is down.
type gate struct {
	mu       sync.Mutex
	live     map[string]bool // admission id -> live
	down     int             // how many more calls fail as unavailable
	downRel  int             // how many more releases fail as unavailable
	released []string
	downRes  int      // how many more restocks fail as unavailable
	restocks []string // "room drop stock left", as told
	follows  string   // the drop every room follows, "" for none
}

func (g *gate) Active(_ context.Context, room, visitor, id string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down > 0 {
		g.down--
		return false, fmt.Errorf("%w: down", rushgate.ErrUnavailable)
	}
	return g.live[id], nil
}

func (g *gate) Release(ctx context.Context, room, visitor, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.downRel > 0 {
		g.downRel--
		return fmt.Errorf("%w: down", rushgate.ErrUnavailable)
	}
	g.released = append(g.released, id)
	delete(g.live, id)
	return nil
}

// Hold checks the admission as the room service does; this room follows no drop.
func (g *gate) Hold(ctx context.Context, room, _, visitor, id string) (bool, error) {
	live, err := g.Active(ctx, room, visitor, id)
	if err == nil && !live {
		err = rushgate.ErrAdmissionRequired
	}
	return false, err
}

func (g *gate) Follows(_ context.Context, _, drop string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.follows != "" && g.follows == drop, nil
}

func (g *gate) Unhold(context.Context, string, string) error  { return nil }
func (g *gate) SoldOut(context.Context, string, string) error { return nil }

func (g *gate) Restock(_ context.Context, room, drop string, l rushgate.Level) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.downRes > 0 {
		g.downRes--
		return fmt.Errorf("%w: down", rushgate.ErrUnavailable)
	}
	g.restocks = append(g.restocks, fmt.Sprintf("%s %s %d %d", room, drop, l.Stock, l.Left))
	return nil
}

func (g *gate) told() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.restocks...)
}

func (g *gate) set(f func()) { g.mu.Lock(); defer g.mu.Unlock(); f() }

func (g *gate) releasedIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.released...)
}

// TestServiceGuards: the drop service, not the transport, decides who may claim: a site identity, an
// admission of the drop's room that is live, for that visitor; a room store that cannot tell answers
// unavailable rather than a refusal.
func TestServiceGuards(t *testing.T) {
	g := &gate{live: map[string]bool{"adm-1": true}}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Gate: g})
	defer svc.Stop()
	ctx := context.Background()
	opens := time.Now().Add(-time.Minute)
	for id, cfg := range map[string]drop.Config{
		"site": {Stock: 5, PerVisitor: 1, OpensAt: opens, Identity: "site"},
		"room": {Stock: 5, PerVisitor: 1, OpensAt: opens, Room: "line"},
	} {
		if _, err := svc.Put(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id, visitor string, a *rushgate.Admission) error {
		_, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: id, Visitor: visitor, Admission: a})
		return err
	}
	if err := claim("site", "v_anon", nil); !errors.Is(err, rushgate.ErrIdentityRequired) {
		t.Fatalf("an anonymous visitor on a site drop: %v", err)
	}
	if err := claim("site", "s_alice", nil); err != nil {
		t.Fatalf("a subject on a site drop: %v", err)
	}
	good := &rushgate.Admission{Room: "line", Visitor: "v_a", ID: "adm-1"}
	for name, a := range map[string]*rushgate.Admission{
		"no admission":      nil,
		"another room's":    {Room: "other", Visitor: "v_a", ID: "adm-1"},
		"another visitor's": {Room: "line", Visitor: "v_b", ID: "adm-1"},
		"not live":          {Room: "line", Visitor: "v_a", ID: "adm-2"},
	} {
		if err := claim("room", "v_a", a); !errors.Is(err, rushgate.ErrAdmissionRequired) {
			t.Errorf("%s: %v, want ErrAdmissionRequired", name, err)
		}
	}
	g.set(func() { g.down = 1 })
	if err := claim("room", "v_a", good); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("with the room's store down: %v, want ErrUnavailable", err)
	}
	if err := claim("room", "v_a", good); err != nil {
		t.Fatalf("a live admission: %v", err)
	}
}

// TestReleaseOnClaimRetried: with release_on_claim, a claim made while the room's store cannot be
// reached still hands its admission back, once the store answers again; it was once only logged. Stop
// ends the retries still going.
func TestReleaseOnClaimRetried(t *testing.T) {
	g := &gate{live: map[string]bool{"adm-1": true, "adm-2": true, "adm-3": true}}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Gate: g})
	ctx := context.Background()
	cfg := drop.Config{Stock: 5, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute), Room: "line", ReleaseOnClaim: true}
	if _, err := svc.Put(ctx, "d", cfg); err != nil {
		t.Fatal(err)
	}
	claim := func(v, adm string) {
		t.Helper()
		a := &rushgate.Admission{Room: "line", Visitor: v, ID: adm}
		if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "d", Visitor: v, Admission: a}); err != nil {
			t.Fatalf("claim with %s: %v", adm, err)
		}
	}
	claim("v_a", "adm-1")
	if got := g.releasedIDs(); len(got) != 1 || got[0] != "adm-1" {
		t.Fatalf("released %v after a claim, want adm-1", got)
	}
	g.set(func() { g.downRel = 2 }) // the room's store is away for the release and its first retry
	claim("v_b", "adm-2")
	deadline := time.Now().Add(5 * time.Second)
	for len(g.releasedIDs()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("released %v: the release after the claim was not retried", g.releasedIDs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.set(func() { g.downRel = 1 << 30 }) // away for good: Stop ends the retries
	claim("v_c", "adm-3")
	stopped := make(chan struct{})
	go func() { svc.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end the retries")
	}
	if got := g.releasedIDs(); len(got) != 2 {
		t.Fatalf("released %v", got)
	}
}

// TestReleaseOutlivesTheRequest: the claim is made, so its release goes through even when the client
// stopped waiting (the request's context ended) just as the claim was answered.
func TestReleaseOutlivesTheRequest(t *testing.T) {
	g := &gate{live: map[string]bool{"adm-1": true}}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Gate: g})
	defer svc.Stop()
	cfg := drop.Config{Stock: 5, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute), Room: "line", ReleaseOnClaim: true}
	if _, err := svc.Put(context.Background(), "d", cfg); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	a := &rushgate.Admission{Room: "line", Visitor: "v_a", ID: "adm-1"}
	if _, _, err := svc.Claim(gone, drop.ClaimRequest{Drop: "d", Visitor: "v_a", Admission: a}); err != nil {
		t.Fatal(err)
	}
	if got := g.releasedIDs(); len(got) != 1 {
		t.Fatalf("released %v: the release ended with the request", got)
	}
}

// countingDrops counts the reads of a drop store, which a claim must not need once its config is cached.
type countingDrops struct {
	drop.Store
	gets atomic.Int64
}

func (c *countingDrops) Get(ctx context.Context, id string) (drop.Info, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

// TestCachedConfigFollowsAnotherInstance runs two services over one store, as two instances share
// Redis. A claims with the config it cached, without reading the drop again; B puts the drop behind a
// room; A's next claim is not let through on its outdated config but checked against the new one.
func TestCachedConfigFollowsAnotherInstance(t *testing.T) {
	store := &countingDrops{Store: memstore.NewDrops(nil, nil)}
	g := &gate{live: map[string]bool{"adm-1": true}}
	a, b := drop.NewService(store, drop.Options{Gate: g}), drop.NewService(store, drop.Options{Gate: g})
	defer a.Stop()
	defer b.Stop()
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	if _, err := b.Put(ctx, "d", drop.Config{Stock: 5, PerVisitor: 1, OpensAt: later}); err != nil {
		t.Fatal(err)
	}
	store.gets.Store(0) // the put's own read, for its audit entry, is not a bid's or a claim's
	for range 3 {
		if _, _, err := a.Claim(ctx, drop.ClaimRequest{Drop: "d", Visitor: "v_a"}); !errors.Is(err, drop.ErrNotOpen) {
			t.Fatalf("claim before the opening: %v", err)
		}
	}
	if n := store.gets.Load(); n != 1 {
		t.Fatalf("three claims read the drop %d times, want once", n)
	}
	if _, err := b.Put(ctx, "d", drop.Config{Stock: 5, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute), Room: "line"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Claim(ctx, drop.ClaimRequest{Drop: "d", Visitor: "v_a"}); !errors.Is(err, rushgate.ErrAdmissionRequired) {
		t.Fatalf("claim without an admission after the drop moved behind a room: %v", err)
	}
	adm := &rushgate.Admission{Room: "line", Visitor: "v_a", ID: "adm-1"}
	if c, created, err := a.Claim(ctx, drop.ClaimRequest{Drop: "d", Visitor: "v_a", Admission: adm}); err != nil || !created || c.Seq != 1 {
		t.Fatalf("claim with the admission: %+v %v %v", c, created, err)
	}
}

// record is the durable record as Put sees it: the claims it holds of each drop, or an error.
type record struct {
	claims map[string][]drop.Claim
	err    error
	reads  int
}

func (r *record) Claims(_ context.Context, id string) ([]drop.Claim, error) {
	r.reads++
	return r.claims[id], r.err
}

// audit keeps the entries appended to it.
type audit struct{ entries []rushgate.Entry }

func (a *audit) Append(_ context.Context, e rushgate.Entry) error {
	a.entries = append(a.entries, e)
	return nil
}

func (a *audit) Entries(context.Context, rushgate.AuditFilter, int) ([]rushgate.Entry, error) {
	return a.entries, nil
}

// TestPutRestoresWhatTheStoreLost: a drop the store does not know but the record holds claims of is
// put back with them, audited as a restore; a stock below them is refused, and so is any put while
// the record cannot be read, leaving no drop. A drop the store knows is put as ever, without a read of
// the record.
func TestPutRestoresWhatTheStoreLost(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := &record{claims: map[string][]drop.Claim{"lost": {
		{Seq: 1, ID: "lost.1", Code: "A", Visitor: "v_a", ClaimedAt: now},
		{Seq: 2, ID: "lost.2", Code: "B", Visitor: "v_b", ClaimedAt: now},
	}}}
	store, log := memstore.NewDrops(nil, nil), &audit{}
	svc := drop.NewService(store, drop.Options{Record: rec, Audit: log})
	defer svc.Stop()
	cfg := drop.Config{Stock: 3, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}

	small := cfg
	small.Stock = 1
	var ce *drop.ConfigError
	if _, err := svc.Put(ctx, "lost", small); !errors.As(err, &ce) || ce.Field != "stock" {
		t.Fatalf("a stock below the recorded claims: %v", err)
	}
	rec.err = errors.New("disk gone")
	if _, err := svc.Put(ctx, "lost", cfg); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("with the record unreadable: %v", err)
	}
	if _, err := svc.Get(ctx, "lost"); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("a refused put left a drop: %v", err)
	}
	rec.err = nil
	rec.claims["split"] = rec.claims["lost"][1:] // another instance's record has the first
	if _, err := svc.Put(ctx, "split", cfg); err == nil || !strings.Contains(err.Error(), "misses claims") {
		t.Fatalf("a record that misses claims: %v", err)
	}
	if info, err := svc.Put(ctx, "lost", cfg); err != nil || info.Claimed != 2 || info.Config.Stock != 3 {
		t.Fatalf("put back: %+v %v", info, err)
	}
	if info, err := svc.Get(ctx, "lost"); err != nil || info.Claimed != 2 {
		t.Fatalf("restored: %+v %v", info, err)
	}
	if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "lost", Visitor: "v_a"}); !errors.As(err, new(*drop.AlreadyClaimedError)) {
		t.Fatalf("v_a again: %v", err)
	}
	if c, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "lost", Visitor: "v_c"}); err != nil || c.Seq != 3 {
		t.Fatalf("v_c: %+v %v", c, err)
	}
	if n := len(log.entries); n != 1 || log.entries[0].Action != "restore" || log.entries[0].ID != "lost" {
		t.Fatalf("audit %+v", log.entries)
	}

	reads := rec.reads
	if _, err := svc.Put(ctx, "fresh", cfg); err != nil {
		t.Fatal(err)
	}
	more := cfg
	more.Stock++
	if _, err := svc.Put(ctx, "fresh", more); err != nil { // known: replaced, the record not read
		t.Fatal(err)
	}
	if rec.reads != reads+1 {
		t.Fatalf("%d reads of the record for a create and a replace", rec.reads-reads)
	}
	if got := log.entries[len(log.entries)-2:]; got[0].Action != "create" || got[1].Action != "update" {
		t.Fatalf("audit %+v", got)
	}
}

// TestAuditCountsListedCodes: the audit log keeps a drop's listed codes by their number, never the
// codes, which are the drop's secrets: a create says how many, a replace with other codes of the same
// number is no change of them, one with more says so, and a delete says how many went.
func TestAuditCountsListedCodes(t *testing.T) {
	ctx := context.Background()
	log := &audit{}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Audit: log})
	defer svc.Stop()
	cfg := drop.Config{PerVisitor: 1, OpensAt: time.Now().Add(time.Hour), Codes: []string{"SECRET-1", "SECRET-2"}}
	for _, codes := range [][]string{{"SECRET-1", "SECRET-2"}, {"SECRET-3", "SECRET-4"}, {"SECRET-5", "SECRET-6", "SECRET-7"}} {
		cfg.Codes, cfg.Stock = codes, len(codes)
		if _, err := svc.Put(ctx, "coupons", cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Delete(ctx, "coupons"); err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range log.entries {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "SECRET") {
			t.Fatalf("the audit keeps codes: %s", b)
		}
		for _, c := range e.Changes {
			if c.Field == "codes" {
				said = append(said, fmt.Sprintf("%s %s->%s", e.Action, c.Old, c.New))
			}
		}
	}
	if fields := fmt.Sprint(log.entries[0].Changes); !strings.Contains(fields, "stock") || !strings.Contains(fields, "opens_at") {
		t.Fatalf("the creation's entry lacks the rest of the config: %s", fields)
	}
	want := []string{"create null->2", "update 2->3", "delete 3->null"}
	if !slices.Equal(said, want) {
		t.Fatalf("the audit says of the codes %q, want %q", said, want)
	}
}

// countingCodes is a drop store that counts the reads of listed codes.
type countingCodes struct {
	drop.Store
	reads atomic.Int64
}

func (c *countingCodes) Codes(ctx context.Context, id string) ([]string, error) {
	c.reads.Add(1)
	return c.Store.Codes(ctx, id)
}

// TestLookupsOfListedCodes: a checkout's lookups of a drop's listed codes, 200 at once, read the list
// once, not once a lookup; each finds its own claim. Lookups of more drops than the service keeps
// indexes of still find theirs.
func TestLookupsOfListedCodes(t *testing.T) {
	now := time.Now()
	store := &countingCodes{Store: memstore.NewDrops(func() time.Time { return now }, nil)}
	svc := drop.NewService(store, drop.Options{Clock: func() time.Time { return now }})
	defer svc.Stop()
	ctx := t.Context()
	codes := make([]string, 5000)
	for i := range codes {
		codes[i] = fmt.Sprintf("C%05d", i)
	}
	if _, err := svc.Put(ctx, "big", drop.Config{Stock: len(codes), PerVisitor: 1, OpensAt: now.Add(-time.Minute), Codes: codes}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "big", Visitor: fmt.Sprint("v", i)}); err != nil {
			t.Fatal(err)
		}
	}
	before := store.reads.Load()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			c, err := svc.ClaimOf(ctx, "big", codes[i])
			if err != nil || c.Seq != int64(i+1) || c.Visitor != fmt.Sprint("v", i) {
				t.Errorf("ClaimOf(%s) = %+v, %v; want claim %d of v%d", codes[i], c, err, i+1, i)
			}
		})
	}
	wg.Wait()
	if n := store.reads.Load() - before; n != 1 {
		t.Fatalf("200 lookups read the codes %d times; want once", n)
	}
	for d := range 6 { // more drops than the service keeps indexes of, each looked up twice
		id := fmt.Sprint("d", d)
		if _, err := svc.Put(ctx, id, drop.Config{Stock: 1, PerVisitor: 1, OpensAt: now.Add(-time.Minute), Codes: []string{id + "-code"}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: id, Visitor: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		for d := range 6 {
			id := fmt.Sprint("d", d)
			if c, err := svc.ClaimOf(ctx, id, id+"-code"); err != nil || c.Seq != 1 {
				t.Fatalf("ClaimOf on %s: %+v, %v", id, c, err)
			}
		}
	}
}

// countingGets counts the reads of each drop.
type countingGets struct {
	drop.Store
	storetest.Reads
}

func (c *countingGets) Get(ctx context.Context, id string) (drop.Info, error) {
	c.Add(id)
	return c.Store.Get(ctx, id)
}

// TestSamplingQuietsWhatIsOver: the sampler read every drop ever created every second, forever. A drop
// sold out or closed is read once a minute, and its chart still gets a sample a minute; one its
// operator opens again is read every second from the next sample on, and a deleted one not at all.
func TestSamplingQuietsWhatIsOver(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Second))
	store := &countingGets{Store: memstore.NewDrops(clock.Now, nil)}
	hist := memstore.NewHistory(clock.Now)
	svc := drop.NewService(store, drop.Options{History: hist, Clock: clock.Now})
	defer svc.Stop()
	ctx := t.Context()
	for id, stock := range map[string]int{"open": 10, "gone": 1, "shut": 5} {
		if _, err := svc.Put(ctx, id, drop.Config{Stock: stock, PerVisitor: 1, OpensAt: clock.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "gone", Visitor: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.CloseNow(ctx, "shut"); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	clock.Advance(10 * time.Second) // past the margin for the store's clock
	store.Take()
	for range 120 {
		clock.Advance(time.Second)
		svc.Sample(ctx)
	}
	if got, want := store.Take(), map[string]int{"open": 120, "gone": 2, "shut": 2}; !maps.Equal(got, want) {
		t.Fatalf("reads over two minutes of samples: %v, want %v", got, want)
	}
	for _, id := range []string{"gone", "shut"} {
		if s, err := hist.Since(ctx, "drop:"+id, start); err != nil || len(s) != 2 {
			t.Fatalf("%s's samples: %d (%v), want one a minute", id, len(s), err)
		}
	}
	if err := svc.OpenNow(ctx, "shut"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	store.Take()
	for range 3 {
		clock.Advance(time.Second)
		svc.Sample(ctx)
	}
	// The sold-out drop's minute is up at the first of these samples.
	if got, want := store.Take(), map[string]int{"shut": 3, "gone": 1}; !maps.Equal(got, want) {
		t.Fatalf("reads after the reopening and the deletion: %v, want %v", got, want)
	}

	// The metrics report what the sampler read, reading nothing themselves: the deleted drop is gone.
	got := map[string]string{}
	svc.Latest(func(d drop.Summary) { got[d.ID] = fmt.Sprintf("%d %d %s", d.Claimed, d.Remaining, d.Status) })
	if want := map[string]string{"gone": "1 0 sold_out", "shut": "0 5 open"}; !maps.Equal(got, want) {
		t.Fatalf("latest: %v, want %v", got, want)
	}
	if n := store.Take(); len(n) != 0 {
		t.Fatalf("Latest read the store: %v", n)
	}
}

// TestRedeem: a code is redeemed once. The checkout that redeemed it may ask again for its order (a
// retry after a lost answer) and is answered the same; any other order, or none, is refused with the
// redemption that stands; a lookup shows it. Two instances' services over one store and one record,
// 50 checkouts at once with orders of their own: one redeems.
func TestRedeem(t *testing.T) {
	now := time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	rec, err := sqlrecord.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "r.db"), sqlrecord.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	store := memstore.NewDrops(clock, nil)
	seen := &outcomes{}
	svc := drop.NewService(store, drop.Options{Clock: clock, Redemptions: rec, Observer: seen})
	defer svc.Stop()
	ctx := t.Context()
	if _, err := svc.Put(ctx, "coupons", drop.Config{Stock: 3, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	c, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "coupons", Visitor: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := svc.CodeOf(ctx, "coupons", c.Code); err != nil || got.Claim != c || got.Redemption != nil {
		t.Fatalf("an unused code: %+v %v", got, err)
	}
	want := drop.Redemption{At: now, Order: "order-1"}
	for range 2 { // the checkout's call, then its retry
		if got, err := svc.Redeem(ctx, "coupons", c.Code, "order-1"); err != nil || got.Claim != c || *got.Redemption != want {
			t.Fatalf("redeem for order-1: %+v %v", got, err)
		}
	}
	now = now.Add(time.Minute)
	for _, order := range []string{"order-2", ""} {
		_, err := svc.Redeem(ctx, "coupons", c.Code, order)
		used, ok := errors.AsType[*drop.RedeemedError](err)
		if !ok || !errors.Is(err, drop.ErrRedeemed) || used.Redemption != want {
			t.Fatalf("redeeming again for %q: %v, want the redemption of order-1", order, err)
		}
	}
	if got, err := svc.CodeOf(ctx, "coupons", c.Code); err != nil || got.Redemption == nil || *got.Redemption != want {
		t.Fatalf("a used code: %+v %v", got, err)
	}
	// The order is cancelled: another order cannot hand the code back, its own can, and then anyone
	// may use it.
	if _, err := svc.Unredeem(ctx, "coupons", c.Code, "order-2"); !errors.Is(err, drop.ErrRedeemed) {
		t.Fatalf("another order handing the code back: %v", err)
	}
	if got, err := svc.Unredeem(ctx, "coupons", c.Code, "order-1"); err != nil || got.Redemption != nil || got.Claim != c {
		t.Fatalf("order-1 handing the code back: %+v %v", got, err)
	}
	if got, err := svc.Unredeem(ctx, "coupons", c.Code, "order-1"); err != nil || got.Redemption != nil { // a retry: nothing more to hand back
		t.Fatalf("order-1 handing the code back again: %+v %v", got, err)
	}
	if got, err := svc.CodeOf(ctx, "coupons", c.Code); err != nil || got.Redemption != nil {
		t.Fatalf("a code handed back: %+v %v", got, err)
	}
	if got, err := svc.Redeem(ctx, "coupons", c.Code, "order-3"); err != nil || got.Order != "order-3" || !got.At.Equal(now) {
		t.Fatalf("redeeming a code handed back: %+v %v", got, err)
	}
	if _, err := svc.Redeem(ctx, "coupons", "NOT-A-CODE-1", ""); !errors.Is(err, drop.ErrNoSuchCode) {
		t.Fatalf("an unknown code: %v", err)
	}
	if _, err := svc.Redeem(ctx, "nope", c.Code, ""); !errors.Is(err, drop.ErrNotFound) {
		t.Fatalf("an unknown drop: %v", err)
	}
	bare := drop.NewService(store, drop.Options{Clock: clock})
	defer bare.Stop()
	if _, err := bare.Redeem(ctx, "coupons", c.Code, ""); !errors.Is(err, rushgate.ErrRecordUnavailable) {
		t.Fatalf("without a record: %v", err)
	}

	other := drop.NewService(store, drop.Options{Clock: clock, Redemptions: rec, Observer: seen})
	defer other.Stop()
	c2, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "coupons", Visitor: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	var redeemed, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			s := []*drop.Service{svc, other}[i%2]
			_, err := s.Redeem(ctx, "coupons", c2.Code, fmt.Sprint("order-", i))
			switch {
			case err == nil:
				redeemed.Add(1)
			case errors.Is(err, drop.ErrRedeemed):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if redeemed.Load() != 1 || refused.Load() != 49 {
		t.Fatalf("50 checkouts at once: %d redeemed, %d refused; want 1 and 49", redeemed.Load(), refused.Load())
	}
	// Heard: order-1, order-3 and the race's one redeemed (not order-1's retry), order-2, none and the
	// race's 49 refused, order-1's hand-back returned once (not its retry).
	if got := seen.String(); got != "coupons redeemed 3, coupons refused 51, coupons returned 1" {
		t.Fatalf("the observer heard %s", got)
	}
}

// outcomes counts what an observer hears, by drop and outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) Redemption(id, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[id+" "+outcome]++
}

func (o *outcomes) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(o.n)) {
		out = append(out, fmt.Sprint(k, " ", o.n[k]))
	}
	return strings.Join(out, ", ")
}

// endings is an Ended that notes what it is told, and fails while fail is set.
type endings struct {
	mu   sync.Mutex
	told []string
	fail bool
}

func (e *endings) QueueDropEnded(_ context.Context, id string, cfg drop.Config, status drop.Status, claimed int, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return errors.New("the record fails")
	}
	e.told = append(e.told, fmt.Sprintf("%s %s %d/%d %s", id, status, claimed, cfg.Stock, at.UTC().Format(time.RFC3339Nano)))
	return nil
}

func (e *endings) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.told
	e.told = nil
	slices.Sort(t)
	return t
}

// TestDropEndsTold: the samplers of two instances tell each drop's end, sold out at its last claim or
// closed at its closes_at once past the store's margin, each once however often they read it after;
// a drop reopened and closed again ends anew; an end the record refused is told at the next read.
func TestDropEndsTold(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Second))
	store := memstore.NewDrops(clock.Now, nil)
	ended := &endings{}
	quiet := slog.New(slog.DiscardHandler)
	a := drop.NewService(store, drop.Options{Clock: clock.Now, Ended: ended, Logger: quiet})
	b := drop.NewService(store, drop.Options{Clock: clock.Now, Ended: ended, Logger: quiet})
	ctx := t.Context()
	for id, stock := range map[string]int{"open": 10, "gone": 2, "shut": 5} {
		if _, err := a.Put(ctx, id, drop.Config{Stock: stock, PerVisitor: 1, OpensAt: clock.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	var last time.Time
	for _, c := range []struct{ drop, visitor string }{{"open", "x"}, {"shut", "x"}, {"gone", "x"}, {"gone", "y"}} {
		clock.Advance(time.Second)
		cl, _, err := a.Claim(ctx, drop.ClaimRequest{Drop: c.drop, Visitor: c.visitor})
		if err != nil {
			t.Fatal(err)
		}
		last = cl.ClaimedAt
	}
	if err := a.CloseNow(ctx, "shut"); err != nil {
		t.Fatal(err)
	}
	closed := clock.Now().UTC().Truncate(time.Millisecond)
	sample := func() { clock.Advance(time.Second); a.Sample(ctx); b.Sample(ctx) }
	sample()
	soldOut := "gone sold_out 2/2 " + last.UTC().Format(time.RFC3339Nano)
	if got := ended.take(); !slices.Equal(got, []string{soldOut, soldOut}) {
		t.Fatalf("told at the first samples: %q, want the sold-out drop, by each instance", got)
	}
	for range 10 {
		sample()
	}
	shut := "shut closed 1/5 " + closed.Format(time.RFC3339Nano)
	if got := ended.take(); !slices.Equal(got, []string{shut, shut}) {
		t.Fatalf("told past the margin: %q, want the closed drop, by each instance", got)
	}
	for range 130 {
		sample()
	}
	if got := ended.take(); len(got) != 0 {
		t.Fatalf("told again over two minutes: %q", got)
	}

	if err := a.OpenNow(ctx, "shut"); err != nil {
		t.Fatal(err)
	}
	sample()
	ended.mu.Lock()
	ended.fail = true // the record fails as the drop closes again
	ended.mu.Unlock()
	if err := a.CloseNow(ctx, "shut"); err != nil {
		t.Fatal(err)
	}
	again := "shut closed 1/5 " + clock.Now().UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	for range 10 {
		sample()
	}
	ended.mu.Lock()
	ended.fail = false
	ended.mu.Unlock()
	for range 61 {
		sample()
	}
	if got := ended.take(); !slices.Equal(got, []string{again, again}) {
		t.Fatalf("told after the record came back: %q, want the second close", got)
	}
}

// lagging is a store whose claims are listed only once lag reads have passed, as the embedded
// backend lists a claim only once it is committed.
type lagging struct {
	drop.Store
	lag atomic.Int32
}

func (l *lagging) Claims(ctx context.Context, id string, after int64, limit int) ([]drop.Claim, error) {
	if l.lag.Add(-1) >= 0 {
		return nil, nil
	}
	return l.Store.Claims(ctx, id, after, limit)
}

// TestDropEndToldOnceDurable: a drop found sold out while its last claim is still being committed is
// told a second later, once the claim is listed, not at the next minute's read.
func TestDropEndToldOnceDurable(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Second))
	store := &lagging{Store: memstore.NewDrops(clock.Now, nil)}
	ended := &endings{}
	svc := drop.NewService(store, drop.Options{Clock: clock.Now, Ended: ended, Logger: slog.New(slog.DiscardHandler)})
	ctx := t.Context()
	if _, err := svc.Put(ctx, "gone", drop.Config{Stock: 1, PerVisitor: 1, OpensAt: clock.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "gone", Visitor: "v"}); err != nil {
		t.Fatal(err)
	}
	store.lag.Store(1)
	clock.Advance(time.Second)
	svc.Sample(ctx)
	if got := ended.take(); len(got) != 0 {
		t.Fatalf("told before the last claim was listed: %q", got)
	}
	clock.Advance(time.Second)
	svc.Sample(ctx)
	if got := ended.take(); len(got) != 1 || !strings.HasPrefix(got[0], "gone sold_out 1/1 ") {
		t.Fatalf("told a second later: %q", got)
	}
}

// TestPutAfterClaims: a drop with claims takes a new title, stock and times, and a higher per_visitor,
// and nothing else (a lower per_visitor is refused as a config error); its room
// hears how many units came or went (again, until it can be told), and a stock below the claims, or a
// new stock once sold out, is refused as the stock's fault.
func TestPutAfterClaims(t *testing.T) {
	g := &gate{live: map[string]bool{"adm-1": true}}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Gate: g})
	defer svc.Stop()
	ctx := context.Background()
	cfg := drop.Config{Title: "Sneakers", Stock: 3, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute), Room: "line"}
	if _, err := svc.Put(ctx, "d", cfg); err != nil {
		t.Fatal(err)
	}
	a := &rushgate.Admission{Room: "line", Visitor: "v_a", ID: "adm-1"}
	if _, _, err := svc.Claim(ctx, drop.ClaimRequest{Drop: "d", Visitor: "v_a", Admission: a}); err != nil {
		t.Fatal(err)
	}
	for field, change := range map[string]func(c *drop.Config){
		"room":             func(c *drop.Config) { c.Room = "other" },
		"release_on_claim": func(c *drop.Config) { c.ReleaseOnClaim = true },
		"identity":         func(c *drop.Config) { c.Identity = "site" },
		"codes":            func(c *drop.Config) { c.Codes = []string{"A", "B", "C"} },
	} {
		c := cfg
		change(&c)
		_, err := svc.Put(ctx, "d", c)
		fixed, ok := errors.AsType[*drop.FixedError](err)
		if !ok || fixed.Field != field || !errors.Is(err, drop.ErrStarted) {
			t.Errorf("a change of %s: %v", field, err)
		}
	}
	c := cfg
	c.PerVisitor = 0 // down from 1
	if _, err := svc.Put(ctx, "d", c); err == nil {
		t.Fatal("a lower per_visitor was taken")
	}
	c.PerVisitor = 2   // up: a second claim each
	c.Identity = "any" // the default, named
	c.Title, c.Stock = "Sneakers, restocked", 5
	g.set(func() { g.downRes = 1 }) // the room's store is down at first: told again
	info, err := svc.Put(ctx, "d", c)
	if err != nil || info.Config.Stock != 5 || info.Config.Title != c.Title || info.Config.PerVisitor != 2 || info.Claimed != 1 {
		t.Fatalf("restock: %+v %v", info, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(g.told()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if told := g.told(); !slices.Equal(told, []string{"line d 5 4"}) {
		t.Fatalf("the room was told %q, want a stock of 5 and 4 left", told)
	}
	same, err := svc.Put(ctx, "d", c) // put again as it is: nothing changes, not even the revision
	if err != nil || same.Rev != info.Rev || len(g.told()) != 1 {
		t.Fatalf("put again: %+v %v; the room was told %q", same, err, g.told())
	}
	c.Stock = 0
	if _, err := svc.Put(ctx, "d", c); err == nil {
		t.Fatal("a stock of none was taken")
	}
	c.Stock = 1 // down to the claims: sold out
	if _, err := svc.Put(ctx, "d", c); err != nil {
		t.Fatal(err)
	}
	if told := g.told(); len(told) != 2 || told[1] != "line d 1 0" {
		t.Fatalf("the room was told %q, want a stock of 1 and none left", told)
	}
	c.Stock = 10
	_, err = svc.Put(ctx, "d", c)
	if ce, ok := errors.AsType[*drop.ConfigError](err); !ok || ce.Field != "stock" {
		t.Fatalf("a restock once sold out: %v", err)
	}
}

// TestFollowedDropKeepsItsRoom: while its room follows its stock, a drop is neither deleted nor moved
// from behind the room, and the refusal names the room; other changes go through, and once the room
// stops following, both do. A room that cannot tell refuses nothing it has not said.
func TestFollowedDropKeepsItsRoom(t *testing.T) {
	g := &gate{follows: "d"}
	svc := drop.NewService(memstore.NewDrops(nil, nil), drop.Options{Gate: g})
	defer svc.Stop()
	ctx := context.Background()
	cfg := drop.Config{Stock: 5, PerVisitor: 1, OpensAt: time.Now().Add(time.Hour), Room: "line"}
	if _, err := svc.Put(ctx, "d", cfg); err != nil {
		t.Fatal(err)
	}
	moved := cfg
	moved.Room = ""
	for name, err := range map[string]error{"delete": svc.Delete(ctx, "d"), "move": func() error { _, err := svc.Put(ctx, "d", moved); return err }()} {
		if fe, ok := errors.AsType[*drop.FollowedError](err); !ok || fe.Room != "line" || !errors.Is(err, drop.ErrFollowed) {
			t.Fatalf("%s of a followed drop: %v", name, err)
		}
	}
	if info, err := svc.Get(ctx, "d"); err != nil || info.Config.Room != "line" {
		t.Fatalf("after the refusals: %+v %v", info, err)
	}
	restocked := cfg
	restocked.Stock = 9
	if _, err := svc.Put(ctx, "d", restocked); err != nil {
		t.Fatalf("a restock behind the same room: %v", err)
	}
	g.set(func() { g.follows = "" })
	if _, err := svc.Put(ctx, "d", moved); err != nil {
		t.Fatalf("a move once the room stopped following: %v", err)
	}
	if err := svc.Delete(ctx, "d"); err != nil {
		t.Fatalf("a delete once the room stopped following: %v", err)
	}
}
