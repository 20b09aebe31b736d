package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestSentinelFailover: two instances on a master and its replica, watched by two Sentinels, with one
// PostgreSQL record. The master dies (kill -9) between a drop's claims and during a room's line; the
// Sentinels promote the replica and both instances follow it without a restart. Claims go on from the
// last number: every visitor gets one, no number or code twice, and the claims answered before the
// master died are there (the replica had them). An auction ending about then closes for its leader and
// refuses later bids. A waiting visitor's stream, held on across the failover, shows its admission when
// the admitted visitor leaves, and /healthz says ok on both. Then a planned switchover back to the old
// master, revived as a replica: the claims go on.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("failover test skipped in -short mode")
	}
	s := redistest.StartSentinel(t)
	in := startInstances(t, buildBinary(t), s.URL, 2, "--postgres", pgtest.Database(t))
	tokens := openSale(t, in, 35)
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/rooms/line", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, b)
	}
	sale := claimer{t: t, in: in, tokens: tokens, codes: map[string]int{}}
	for i := range 10 {
		sale.claim(i)
	}
	// An auction with a bid, ending while the master is dead or just after: it closes once, for its
	// leader, and takes no bid after its end.
	opens := time.Now().Add(-time.Minute).Format(time.RFC3339)
	ends := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/auctions/lot", testAdminKey, fmt.Sprintf(`{"title": "Lot", "currency": "EUR",
		"start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q}`, opens, ends)); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, b)
	}
	code, bid := tryDo(in[1].base+"/v1/auctions/lot/bids", tokens[0], `{"amount": 1500}`)
	if code != 201 {
		t.Fatalf("bid: %d %v", code, bid)
	}
	leader := bid["auction"].(map[string]any)["leader"]

	_, first, _ := do(t, "POST", in[0].base+"/v1/rooms/line/join", "", "")
	waitAdmitted(t, in[0].base, "line", first["visitor_token"].(string))
	_, second, _ := do(t, "POST", in[1].base+"/v1/rooms/line/join", "", "")
	if second["state"] != "waiting" {
		t.Fatalf("a second visitor in a room for one: %v", second)
	}
	admitted := make(chan error, 1)
	go func() {
		admitted <- streamAdmitted(t.Context(), in[1].base+"/v1/rooms/line/events", second["visitor_token"].(string))
	}()

	killed := time.Now()
	s.KillMaster(t)
	sale.claimFrom(10, 30, "the master died", killed)
	_, page, _ := do(t, "GET", in[1].base+"/v1/drops/sale/claims?limit=100", testAdminKey, "")
	list, _ := page["claims"].([]any)
	if len(list) != 30 {
		t.Fatalf("the drop holds %d claims, want the 30 answered 201: %v", len(list), page)
	}
	for n, c := range list {
		m := c.(map[string]any)
		if m["seq"] != float64(n+1) || sale.codes[m["code"].(string)] != n {
			t.Fatalf("claim %d after the failover: %v", n+1, m)
		}
	}
	if _, d, _ := do(t, "GET", in[0].base+"/v1/drops/sale", "", ""); d["remaining"] != 10.0 {
		t.Fatalf("after 30 claims of 40: %v", d)
	}

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, a, _ := do(t, "GET", in[0].base+"/v1/auctions/lot", "", "")
		if a["status"] == "sold" || a["status"] == "closed" {
			if a["winner"] != leader || a["final_price"] != 1500.0 {
				t.Fatalf("the auction closed across the failover: %v; want %v the winner at 1500", a, leader)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the auction did not close within 10s of its end: %v", a)
		}
	}
	if code, b := tryDo(in[1].base+"/v1/auctions/lot/bids", tokens[1], `{"amount": 5000}`); code != 409 || b["error"].(map[string]any)["code"] != "auction_closed" {
		t.Fatalf("a bid after the end: %d %v", code, b)
	}
	if code, b := tryDo(in[0].base+"/v1/rooms/line/leave", first["visitor_token"].(string), ""); code != 200 {
		t.Fatalf("leave: %d %v", code, b)
	}
	select {
	case err := <-admitted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting visitor's stream did not show its admission within 15s of the leave")
	}
	for _, i := range in {
		if code, b, _ := do(t, "GET", i.base+"/healthz", "", ""); code != 200 {
			t.Fatalf("%s /healthz after the failover: %d %v", i.base, code, b)
		}
	}

	// A planned switchover: the old master back as a replica, then handed the master's role while the
	// other runs on and becomes its replica. The instances follow it too (by the Sentinels' word, or by
	// asking them again every 5 s), and the claims go on numbered.
	s.Revive(t)
	s.Switchover(t)
	sale.claimFrom(30, 35, "the switchover", time.Now())
	_, page, _ = do(t, "GET", in[0].base+"/v1/drops/sale/claims?limit=100", testAdminKey, "")
	if list, _ := page["claims"].([]any); len(list) != 35 || list[34].(map[string]any)["seq"] != 35.0 {
		t.Fatalf("after the switchover the drop holds %d claims: %v", len(list), page)
	}
}

// claimer presses claims on the drop "sale" for its visitors, each at the instance of its turn.
type claimer struct {
	t      *testing.T
	in     []*instance
	tokens []string
	codes  map[string]int // code -> the visitor it was handed to
}

// claim presses visitor i's claim until it is answered, through an outage's 503s for up to 30 s; any
// other answer, or a code handed out twice, fails the test.
func (c *claimer) claim(i int) {
	c.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, b := tryDo(c.in[i%len(c.in)].base+"/v1/drops/sale/claims", c.tokens[i], "")
		if code == 201 {
			if prev, dup := c.codes[b["code"].(string)]; dup {
				c.t.Fatalf("visitor %d was handed visitor %d's code", i, prev)
			}
			c.codes[b["code"].(string)] = i
			return
		}
		if (code != 503 && code != 0) || time.Now().After(deadline) {
			c.t.Fatalf("claim %d: %d %v", i, code, b)
		}
	}
}

// claimFrom claims for visitors from to to, after what happened at since, and logs how long the first
// waited for its answer.
func (c *claimer) claimFrom(from, to int, what string, since time.Time) {
	c.t.Helper()
	c.claim(from)
	c.t.Logf("the first claim after %s was answered %v after", what, time.Since(since).Round(10*time.Millisecond))
	for i := from + 1; i < to; i++ {
		c.claim(i)
	}
}

// openSale puts the drop "sale", open since a minute ago with a stock of 40, on the instances and
// returns n visitors' tokens, minted on them in turn.
func openSale(t *testing.T, in []*instance, n int) []string {
	t.Helper()
	opens := time.Now().Add(-time.Minute).Format(time.RFC3339)
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/drops/sale", testAdminKey, fmt.Sprintf(`{"stock": 40, "opens_at": %q}`, opens)); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, b)
	}
	tokens := make([]string, n)
	for i := range tokens {
		_, v, _ := do(t, "POST", in[i%len(in)].base+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "fan-%d"}`, i))
		tokens[i] = v["visitor_token"].(string)
	}
	return tokens
}

// tryDo POSTs body with a visitor token and returns the status (0 when the request failed) and the
// JSON answer.
func tryDo(url, tok, body string) (int, map[string]any) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, nil
	}
	var b map[string]any
	_ = jsonBody(res, &b)
	return res.StatusCode, b
}

// streamAdmitted follows a visitor's event stream until it says admitted, opening it again when it ends
// (an instance may end it while its store is away), until ctx ends.
func streamAdmitted(ctx context.Context, url, tok string) error {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var st map[string]any
			if ok && json.Unmarshal([]byte(data), &st) == nil && st["state"] == "admitted" {
				res.Body.Close()
				return nil
			}
		}
		res.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("stream: %w", ctx.Err())
}

// TestRedisOptions: --redis names a standalone server, a Cluster (several seeds, or --redis-cluster) or
// Sentinels (master_set, however many of them are listed, asked again every few seconds); Sentinels and
// --redis-cluster together are refused.
func TestRedisOptions(t *testing.T) {
	for _, c := range []struct {
		spec    string
		cluster bool
		kind    string
		addrs   int
		master  string
	}{
		{"redis://127.0.0.1:6379/0", false, "redis", 1, ""},
		{"redis://127.0.0.1:6379/0", true, "redis-cluster", 1, ""},
		{"redis://10.0.0.1:7000,redis://10.0.0.2:7000,redis://10.0.0.3:7000", false, "redis-cluster", 3, ""},
		{"redis://10.0.0.1:26379?master_set=shop", false, "redis-sentinel", 1, "shop"},
		{"redis://10.0.0.1:26379?master_set=shop&addr=10.0.0.2:26379&addr=10.0.0.3:26379", false, "redis-sentinel", 3, "shop"},
		{"redis://10.0.0.1:26379?master_set=shop,redis://10.0.0.2:26379", false, "redis-sentinel", 2, "shop"},
		{"redis://10.0.0.1:26379?master_set=shop", true, "", 0, ""},
	} {
		opt, kind, err := redisOptions(c.spec, c.cluster)
		if c.kind == "" {
			if err == nil || !strings.Contains(err.Error(), "master_set") {
				t.Errorf("%s with --redis-cluster: %v, want it refused", c.spec, err)
			}
			continue
		}
		if err != nil || kind != c.kind || len(opt.InitAddress) != c.addrs || opt.Sentinel.MasterSet != c.master ||
			opt.ForceSingleClient != (kind != "redis-cluster") {
			t.Errorf("%s (cluster %v): %s, %d seeds, master %q, single %v, %v", c.spec, c.cluster, kind, len(opt.InitAddress),
				opt.Sentinel.MasterSet, opt.ForceSingleClient, err)
		}
		if (kind == "redis-sentinel") != (opt.Sentinel.TopologyRefreshInterval > 0) {
			t.Errorf("%s: the Sentinels asked every %v", c.spec, opt.Sentinel.TopologyRefreshInterval)
		}
	}
	// The master's credentials in the URL, the Sentinels' in parameters; TLS to both with rediss://.
	opt, _, err := redisOptions("rediss://app:secret@10.0.0.1:26379?master_set=shop&sentinel_username=watch&sentinel_password=s3"+
		"&addr=10.0.0.2:26379", false)
	if err != nil || opt.Username != "app" || opt.Password != "secret" || opt.Sentinel.Username != "watch" ||
		opt.Sentinel.Password != "s3" || opt.TLSConfig == nil || opt.Sentinel.TLSConfig != opt.TLSConfig {
		t.Errorf("credentials and TLS: %q %q, sentinels %q %q, TLS %v %v: %v", opt.Username, opt.Password, opt.Sentinel.Username,
			opt.Sentinel.Password, opt.TLSConfig != nil, opt.Sentinel.TLSConfig != nil, err)
	}
}

// TestOnADemotedMaster: an instance whose master is demoted under it (a replica promoted, the old
// master made its replica, and nothing, no Sentinel, to tell the instance) answers what would write with
// a fast 503 store_unavailable, never a 500, and /healthz says the store refuses writes; what it only
// reads it still answers.
func TestOnADemotedMaster(t *testing.T) {
	a := redistest.Start(t)
	b := redistest.StartReplica(t, a)
	on := startInstances(t, buildBinary(t), a.Addr, 1)[0]
	if code, body, _ := do(t, "PUT", on.base+"/v1/rooms/r", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	_, joined, _ := do(t, "POST", on.base+"/v1/rooms/r/join", "", "")
	redistest.Swap(t, a, b)
	for _, req := range []struct{ method, path, tok, body string }{
		{"POST", "/v1/rooms/r/join", "", ""},
		{"POST", "/v1/rooms/r/leave", joined["visitor_token"].(string), ""},
		{"PATCH", "/v1/rooms/r", testAdminKey, `{"capacity": 2}`},
		{"PUT", "/v1/drops/d", testAdminKey, `{"stock": 5, "opens_at": "2026-01-01T00:00:00Z"}`},
	} {
		code, body, took := do(t, req.method, on.base+req.path, req.tok, req.body)
		if code != 503 || errorCode(body) != "store_unavailable" || took > 2*time.Second {
			t.Errorf("%s %s on a demoted master: %d %v after %v; want a fast 503 store_unavailable", req.method, req.path, code, body, took)
		}
	}
	if code, body, _ := do(t, "GET", on.base+"/healthz", "", ""); code != 503 || body["store"] != "refuses writes" {
		t.Errorf("/healthz on a demoted master: %d %v; want 503 saying the store refuses writes", code, body)
	}
	if up := metric(t, on.base, "rushgate_store_up"); up != 0 {
		t.Errorf("rushgate_store_up is %v on a demoted master, want 0", up)
	}
	if code, body, _ := do(t, "GET", on.base+"/v1/rooms/r", testAdminKey, ""); code != 200 || body["capacity"] != 1.0 {
		t.Errorf("reading the room on a demoted master: %d %v", code, body)
	}
}

// waitUntil polls ok for up to 15 s.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
	}
}

// TestClusterFailover: two instances on a Cluster of three masters with a replica each. The master that
// serves a drop's slot dies (kill -9) between its claims; the Cluster promotes its replica and both
// instances go on without a restart: every visitor gets a claim, numbered on without a gap or a repeat,
// and a room on another slot keeps its line.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("failover test skipped in -short mode")
	}
	c := redistest.StartReplicatedCluster(t)
	in := startInstances(t, buildBinary(t), c.Seeds, 2, "--postgres", pgtest.Database(t))
	tokens := openSale(t, in, 20)
	sale := claimer{t: t, in: in, tokens: tokens, codes: map[string]int{}}
	for i := range 10 {
		sale.claim(i)
	}
	master, replica := c.KillMasterOf(t, "{drop:sale}")
	killed := time.Now()
	t.Logf("killed %s, the master of the drop's slot", master.Addr)
	// Until the Cluster marks the master failed (cluster-node-timeout, 2 s here), the other masters
	// serve: /healthz hears each master, so it says which part fails rather than "ok" or 503.
	code, health, _ := do(t, "GET", in[0].base+"/healthz", testAdminKey, "")
	reason, _ := health["reason"].(string)
	switch {
	case code == 200 && health["status"] == "degraded" && health["store"] == "partly unreachable" && strings.Contains(reason, master.Addr):
	case time.Since(killed) > 1500*time.Millisecond:
		t.Logf("/healthz answered %d %v %.1f s after the kill, too late to hear one master down alone", code, health, time.Since(killed).Seconds())
	default:
		t.Fatalf("/healthz with the master %s just killed: %d %v; want 200, degraded, partly unreachable, naming it", master.Addr, code, health)
	}
	c.AwaitPromotion(t, "{drop:sale}", replica)
	sale.claimFrom(10, 20, "the master died", killed)
	waitUntil(t, "/healthz to say ok once the replica serves", func() bool {
		code, health, _ := do(t, "GET", in[0].base+"/healthz", "", "")
		return code == 200 && health["status"] == "ok"
	})
	_, page, _ := do(t, "GET", in[1].base+"/v1/drops/sale/claims?limit=100", testAdminKey, "")
	list, _ := page["claims"].([]any)
	if len(list) != 20 {
		t.Fatalf("the drop holds %d claims, want the 20 answered 201: %v", len(list), page)
	}
	for n, x := range list {
		if m := x.(map[string]any); m["seq"] != float64(n+1) || sale.codes[m["code"].(string)] != n {
			t.Fatalf("claim %d after the failover: %v", n+1, m)
		}
	}
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/rooms/hall", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatalf("PUT room after the failover: %d %v", code, b)
	}
	for i := range 2 {
		if code, st, _ := do(t, "POST", in[i].base+"/v1/rooms/hall/join", "", ""); code != 200 || (st["state"] != "admitted" && st["state"] != "waiting") {
			t.Fatalf("join %d after the failover: %d %v", i, code, st)
		}
	}
	if _, r, _ := do(t, "GET", in[1].base+"/v1/rooms/hall", testAdminKey, ""); r["stats"].(map[string]any)["joined_total"] != 2.0 {
		t.Fatalf("the room after two joins: %v", r)
	}
}

// TestRecordThroughPostgresFailover: instances on Redis record into a PostgreSQL primary named with its
// standby in one DSN (target_session_attrs=read-write). The primary dies and the standby is promoted
// between a drop's claims: the claims go on (they wait in Redis meanwhile), and the record on the new
// primary ends with every claim answered 201, each once; /healthz says ok again.
func TestRecordThroughPostgresFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("failover test skipped in -short mode")
	}
	pg := pgtest.StartReplicated(t)
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2, "--postgres", pg.DSN)
	tokens := openSale(t, in, 20)
	recorded := func() (n, top int64) {
		pg.Query(t, `SELECT count(*) FROM drop_claims WHERE drop_id = 'sale'`, &n)
		pg.Query(t, `SELECT coalesce(max(seq), 0) FROM drop_claims WHERE drop_id = 'sale'`, &top)
		return n, top
	}
	claim := func(i int) {
		if code, b := tryDo(in[i%2].base+"/v1/drops/sale/claims", tokens[i], ""); code != 201 {
			t.Fatalf("claim %d: %d %v", i, code, b)
		}
	}
	for i := range 10 {
		claim(i)
	}
	waitUntil(t, "the first claims in the record", func() bool { n, _ := recorded(); return n == 10 })
	pg.Failover(t)
	promoted := time.Now()
	for i := 10; i < 20; i++ {
		claim(i) // Redis answers; the record catches up
	}
	waitUntil(t, "every claim in the promoted standby's record", func() bool { n, top := recorded(); return n == 20 && top == 20 })
	t.Logf("the record had every claim %v after the promotion", time.Since(promoted).Round(10*time.Millisecond))
	for _, i := range in {
		waitUntil(t, "/healthz ok again", func() bool {
			code, b, _ := do(t, "GET", i.base+"/healthz", "", "")
			return code == 200 && b["status"] == "ok"
		})
	}
}

// TestRedisReplicas: with --redis-replicas 1, a claim and a bid are answered once a replica holds them.
// The replica frozen, each is a 503 that says it was made but not confirmed, counted in
// rushgate_redis_unconfirmed_total, and /healthz says the replicas are behind; the claim's retry with
// its Idempotency-Key then answers the claim that was made, once the replica is back.
func TestRedisReplicas(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	on := startInstances(t, buildBinary(t), master.Addr, 1, "--redis-replicas", "1", "--redis-replica-wait", "1s")[0]
	tokens := openSale(t, []*instance{on}, 2)
	opens := time.Now().Add(-time.Minute).Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, b, _ := do(t, "PUT", on.base+"/v1/auctions/lot", testAdminKey, fmt.Sprintf(`{"title": "Lot", "currency": "EUR",
		"start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q}`, opens, ends)); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, b)
	}
	claim := func(tok, key string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", on.base+"/v1/drops/sale/claims", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b map[string]any
		_ = jsonBody(res, &b)
		return res.StatusCode, b
	}
	if code, b := claim(tokens[0], "k0"); code != 201 {
		t.Fatalf("claim with the replica in sync: %d %v", code, b)
	}
	if code, b := tryDo(on.base+"/v1/auctions/lot/bids", tokens[0], `{"amount": 1000}`); code != 201 {
		t.Fatalf("bid with the replica in sync: %d %v", code, b)
	}

	replica.Freeze()
	code, made := claim(tokens[1], "k1")
	bidCode, bid := tryDo(on.base+"/v1/auctions/lot/bids", tokens[1], `{"amount": 1100}`)
	healthCode, health, _ := do(t, "GET", on.base+"/healthz", "", "")
	up := metric(t, on.base, "rushgate_store_up")
	replica.Thaw()
	// Not an outage: joins go on, and the store takes writes.
	if healthCode != 200 || health["status"] != "degraded" || health["store"] != "replicas behind" || up != 1 {
		t.Fatalf("/healthz while the replica is frozen: %d %v, rushgate_store_up %v; want 200, degraded, replicas behind, up", healthCode, health, up)
	}
	if !unconfirmed(code, made) || !unconfirmed(bidCode, bid) {
		t.Fatalf("a claim and a bid while the replica is frozen: %d %v, %d %v; want 503 store_unavailable, not yet confirmed",
			code, made, bidCode, bid)
	}
	if n := metric(t, on.base, "rushgate_redis_unconfirmed_total"); n != 2 {
		t.Fatalf("rushgate_redis_unconfirmed_total = %v, want 2", n)
	}
	redistest.WaitInSync(t, master, replica)
	if code, b := claim(tokens[1], "k1"); code != 201 || b["seq"] != 2.0 { // a new claim would be the 3rd
		t.Fatalf("the retry of the unconfirmed claim: %d %v; want claim 2, made before", code, b)
	}
}

// TestRedisReplicasThroughSentinel: --redis-replicas works through a Sentinel-watched master (the WAIT
// goes to the master the Sentinels name), and after a failover leaves the new master without a
// replica, claims are refused as unconfirmed rather than answered unsafely: the README's advice to
// run one replica more than the flag asks for.
func TestRedisReplicasThroughSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("failover test skipped in -short mode")
	}
	s := redistest.StartSentinel(t)
	on := startInstances(t, buildBinary(t), s.URL, 1, "--redis-replicas", "1", "--redis-replica-wait", "500ms")[0]
	tokens := openSale(t, []*instance{on}, 2)
	if code, b := tryDo(on.base+"/v1/drops/sale/claims", tokens[0], ""); code != 201 {
		t.Fatalf("claim with the replica in sync: %d %v", code, b)
	}
	s.KillMaster(t)
	waitUntil(t, "a claim on the promoted master, which has no replica, to be unconfirmed", func() bool {
		return unconfirmed(tryDo(on.base+"/v1/drops/sale/claims", tokens[1], ""))
	})
	if _, health, _ := do(t, "GET", on.base+"/healthz", "", ""); health["store"] != "replicas behind" {
		t.Fatalf("/healthz on a master without a replica: %v", health)
	}
}
