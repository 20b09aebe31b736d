package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/apitest"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// dropCrowd sends 5,000 visitors x 4 presses, 200 at a time, at random live instances, for a stock of
// 1,000, and returns the codes answered 201 by visitor. midway runs once, after 8,000 presses.
func dropCrowd(t *testing.T, in []*instance, midway func()) map[string]string {
	t.Helper()
	base := func() string {
		for {
			if i := in[rand.IntN(len(in))]; !i.dead.Load() {
				return i.base
			}
		}
	}
	if code, b, _ := do(t, "PUT", base()+"/v1/drops/big", testAdminKey, fmt.Sprintf(`{"stock": 1000, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	tokens := make([]string, 5000)
	for i := range tokens {
		_, v, _ := do(t, "POST", base()+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "crowd-%d"}`, i))
		tokens[i] = v["visitor_token"].(string)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	var mu sync.Mutex
	won := map[string]string{}
	var presses atomic.Int64
	var once sync.Once
	sem := make(chan struct{}, 200)
	var wg sync.WaitGroup
	for i := range 20000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if presses.Add(1) == 8000 && midway != nil {
				once.Do(midway)
			}
			tok := tokens[i%5000]
			for attempt := 0; attempt < 50; attempt++ { // a press that meets an outage is pressed again
				req, _ := http.NewRequest("POST", base()+"/v1/drops/big/claims", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				res, err := client.Do(req)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				var body map[string]any
				_ = jsonBody(res, &body)
				switch res.StatusCode {
				case 201:
					mu.Lock()
					if prev, dup := won[tok]; dup {
						t.Errorf("visitor won twice: %s and %v", prev, body["code"])
					}
					won[tok] = body["code"].(string)
					mu.Unlock()
					return
				case 409, 410:
					return
				case 503:
					time.Sleep(50 * time.Millisecond)
				default:
					t.Errorf("claim answered %d %v", res.StatusCode, body)
					return
				}
			}
			t.Error("a press never got an answer")
		})
	}
	wg.Wait()
	return won
}

// checkDrop: every claim answered 201 is in the drop and in SQL, the stock is exactly used, no code
// or visitor twice.
func checkDrop(t *testing.T, in []*instance, dsn string, won map[string]string, exact201 bool) {
	t.Helper()
	var live *instance
	for _, i := range in {
		if !i.dead.Load() {
			live = i
		}
	}
	var claims []any
	for after := 0; ; {
		_, page, _ := do(t, "GET", fmt.Sprintf("%s/v1/drops/big/claims?after=%d&limit=1000", live.base, after), testAdminKey, "")
		list := page["claims"].([]any)
		claims = append(claims, list...)
		if len(list) == 0 {
			break
		}
		after = int(page["next_after"].(float64))
	}
	codes, visitors := map[string]bool{}, map[string]bool{}
	for _, c := range claims {
		m := c.(map[string]any)
		if codes[m["code"].(string)] || visitors[m["visitor"].(string)] {
			t.Fatalf("a code or a visitor twice: %v", m)
		}
		codes[m["code"].(string)], visitors[m["visitor"].(string)] = true, true
	}
	if len(claims) != 1000 {
		t.Fatalf("%d claims in the drop, stock 1000", len(claims))
	}
	// The operator's export of the drop, on Redis: the same claims, in the same order.
	req, _ := http.NewRequest("GET", live.base+"/v1/drops/big/claims.csv", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	res.Body.Close()
	if err != nil || len(rows) != len(claims)+1 {
		t.Fatalf("the export: %d rows, %v; want %d claims", len(rows), err, len(claims))
	}
	for i, c := range claims {
		if m := c.(map[string]any); rows[i+1][1] != m["claim_id"] || rows[i+1][2] != m["code"] {
			t.Fatalf("export row %d is %v; the listing says %v", i+1, rows[i+1], m)
		}
	}
	if exact201 && len(won) != 1000 {
		t.Fatalf("%d claims answered 201, stock 1000", len(won))
	}
	for _, code := range won {
		if !codes[code] {
			t.Fatalf("claim %s answered 201 is lost", code)
		}
	}
	// A checkout finds the claim behind a code through any instance, and every instance's metrics count
	// every claim, whichever instance took it, from their next sample (a second).
	var alive []*instance
	for _, i := range in {
		if !i.dead.Load() {
			alive = append(alive, i)
		}
	}
	for i, c := range claims[:50] {
		m := c.(map[string]any)
		code, got, _ := do(t, "GET", alive[i%len(alive)].base+"/v1/drops/big/codes/"+url.PathEscape(m["code"].(string)), testAdminKey, "")
		if code != 200 || got["claim_id"] != m["claim_id"] || got["visitor"] != m["visitor"] {
			t.Fatalf("the lookup of %s: %d %v; want %v", m["code"], code, got, m)
		}
	}
	for _, i := range alive {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			n, _, err1 := metricValue(i.base, `rushgate_drop_claimed{drop="big"}`)
			left, ok, err2 := metricValue(i.base, `rushgate_drop_remaining{drop="big"}`)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			if n == 1000 && left == 0 && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("an instance's metrics: %v claimed, %v remaining; want 1000 and 0", n, left)
			}
		}
	}
	db, _ := sql.Open("pgx", dsn)
	defer db.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var n int
		_ = db.QueryRowContext(context.Background(), `SELECT count(*) FROM drop_claims WHERE drop_id = 'big'`).Scan(&n)
		if n == 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SQL holds %d claims, want 1000", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d answered 201, 1000 claimed, 1000 rows", len(won))
}

func TestDropOnThreeInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	addr := redistest.Shared(t)
	dsn := pgtest.Database(t)
	in := startInstances(t, buildBinary(t), addr, 3, "--postgres", dsn)
	won := dropCrowd(t, in, nil)
	checkDrop(t, in, dsn, won, true)
	redeemRace(t, in, won)
}

// redeemRace has checkouts on every instance redeem ten of the crowd's codes at once, each for an order
// of its own: each code is redeemed once, and every other checkout is told that redemption.
func redeemRace(t *testing.T, in []*instance, won map[string]string) {
	t.Helper()
	codes := slices.Sorted(maps.Values(won))[:10]
	type answer struct {
		status       int
		at, order    string
		errAt, errOf string
	}
	answers := make([][]answer, len(codes))
	var wg sync.WaitGroup
	for c, code := range codes {
		answers[c] = make([]answer, 30)
		for i := range answers[c] {
			wg.Go(func() {
				url := in[i%len(in)].base + "/v1/drops/big/codes/" + code + "/redeem"
				status, b, _ := do(t, "POST", url, testAdminKey, fmt.Sprintf(`{"order": "order-%d"}`, i))
				a := answer{status: status}
				a.at, _ = b["redeemed_at"].(string)
				a.order, _ = b["order"].(string)
				if e, ok := b["error"].(map[string]any); ok {
					a.errAt, _ = e["redeemed_at"].(string)
					a.errOf, _ = e["order"].(string)
				}
				answers[c][i] = a
			})
		}
	}
	wg.Wait()
	for c, as := range answers {
		var first *answer
		for i := range as {
			if as[i].status == 200 {
				if first != nil {
					t.Fatalf("code %s redeemed twice: for %s and %s", codes[c], first.order, as[i].order)
				}
				first = &as[i]
			}
		}
		if first == nil {
			t.Fatalf("code %s: no checkout redeemed it: %+v", codes[c], as)
		}
		for _, a := range as {
			if a.status != 200 && (a.status != 409 || a.errAt != first.at || a.errOf != first.order) {
				t.Fatalf("code %s: a checkout was answered %+v; the redemption is %s at %s", codes[c], a, first.order, first.at)
			}
		}
	}
}

// TestDropSurvivesKillAndRedisRestart kills one instance (kill -9) and restarts Redis (AOF, fsync
// always) midway through the crowd: no claim that was answered 201 is lost.
func TestDropSurvivesKillAndRedisRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	dsn := pgtest.Database(t)
	in := startInstances(t, buildBinary(t), srv.Addr, 3, "--postgres", dsn)
	won := dropCrowd(t, in, func() {
		in[2].dead.Store(true)
		_ = in[2].cmd.Process.Kill()
		srv.Restart(t)
	})
	checkDrop(t, in, dsn, won, false)
}

// TestDropSurvivesRedisLosingItsData: Redis without persistence restarts empty after 60 claims of 100
// reached the shared SQL record. The drop is gone until an operator puts it again; putting it again
// restores it from the record: the 60 visitors who hold a unit get no second one, exactly 40 more go
// out, and the record ends with the 100 claims answered 201, each once.
func TestDropSurvivesRedisLosingItsData(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	srv := redistest.Start(t) // no AOF, no snapshots: a restart loses everything
	dsn := pgtest.Database(t)
	in := startInstances(t, buildBinary(t), srv.Addr, 2, "--postgres", dsn)
	cfg := fmt.Sprintf(`{"stock": 100, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/drops/sale", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	won := map[string]string{} // code -> visitor token
	claim := func(i int, tok string) (int, map[string]any) {
		code, b, _ := do(t, "POST", in[i%2].base+"/v1/drops/sale/claims", tok, "")
		if code == 201 {
			if _, dup := won[b["code"].(string)]; dup {
				t.Fatalf("code %v answered twice", b["code"])
			}
			won[b["code"].(string)] = tok
		}
		return code, b
	}
	mint := func(n int, name string) []string {
		out := make([]string, n)
		for i := range out {
			_, v, _ := do(t, "POST", in[0].base+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "%s-%d"}`, name, i))
			out[i] = v["visitor_token"].(string)
		}
		return out
	}
	first := mint(60, "first")
	for i, tok := range first {
		if code, b := claim(i, tok); code != 201 {
			t.Fatalf("claim %d: %d %v", i, code, b)
		}
	}
	recordedCodes(t, dsn, 60)

	srv.Restart(t)
	waitHealthy(t, in[0].base)
	if code, b, _ := do(t, "GET", in[1].base+"/v1/drops/sale", "", ""); code != 404 {
		t.Fatalf("the lost drop answered %d %v", code, b)
	}
	code, b, _ := do(t, "PUT", in[1].base+"/v1/drops/sale", testAdminKey, cfg)
	if code != 200 || b["claimed"] != 60.0 || b["remaining"] != 40.0 {
		t.Fatalf("PUT after the loss: %d %v", code, b)
	}
	for i, tok := range first {
		if code, b := claim(i, tok); code != 409 || b["error"].(map[string]any)["code"] != "already_claimed" {
			t.Fatalf("a holder claiming again: %d %v", code, b)
		}
	}
	later, soldOut := mint(50, "later"), 0
	for i, tok := range later {
		switch code, b := claim(i, tok); code {
		case 201:
		case 410:
			soldOut++
		default:
			t.Fatalf("claim after the restore: %d %v", code, b)
		}
	}
	if len(won) != 100 || soldOut != 10 {
		t.Fatalf("%d claims answered 201 in all and %d sold out, want 100 and 10", len(won), soldOut)
	}
	for _, c := range recordedCodes(t, dsn, 100) {
		if _, ok := won[c]; !ok {
			t.Fatalf("recorded code %s was never answered", c)
		}
	}
}

// TestSecretsSurviveRedisLosingItsData: Redis without persistence restarts empty under two running
// instances. Within a watch tick they put back the secrets they share, so a third instance started
// afterwards takes them up: it accepts a visitor token the first minted before the loss, and signs
// with the same keys. Before, it made secrets of its own and refused every visitor of the others.
func TestSecretsSurviveRedisLosingItsData(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	srv := redistest.Start(t)
	bin := buildBinary(t)
	in := startInstances(t, bin, srv.Addr, 2)
	_, v, _ := do(t, "POST", in[0].base+"/v1/visitors", testAdminKey, `{"subject": "early"}`)
	tok := v["visitor_token"].(string)
	_, before, _ := do(t, "GET", in[0].base+"/v1/keys", "", "")

	srv.Restart(t)
	rdb := redistest.Client(t, srv.Addr)
	ctx := context.Background()
	for deadline := time.Now().Add(3 * keyring.ReloadEvery); ; time.Sleep(100 * time.Millisecond) {
		n, _ := rdb.Do(ctx, rdb.B().Exists().Key(prefixOf(t)+":secret:visitor.secret", prefixOf(t)+":secret:"+keyring.Name).Build()).AsInt64()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the running instances did not put the secrets back")
		}
	}
	late := startInstances(t, bin, srv.Addr, 1)[0]
	cfg := fmt.Sprintf(`{"stock": 1, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", late.base+"/v1/drops/after", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	if code, b, _ := do(t, "POST", late.base+"/v1/drops/after/claims", tok, ""); code != 201 {
		t.Fatalf("the new instance refused a visitor minted before the loss: %d %v", code, b)
	}
	_, after, _ := do(t, "GET", late.base+"/v1/keys", "", "")
	if fmt.Sprint(after["keys"]) != fmt.Sprint(before["keys"]) {
		t.Fatalf("the new instance publishes %v, the others published %v", after["keys"], before["keys"])
	}
}

// TestRecordOutageOnRedis: the shared PostgreSQL record refuses every connection for a while under an
// instance on Redis. Claims go on being answered 201 from Redis; /healthz answers 200 "degraded" and
// rushgate_record_up is 0 and rushgate_record_backlog counts the claims waiting; the log says so once,
// not once a pass. When the database takes connections
// again the outbox catches up: every claim answered 201 is recorded, once, and health is ok again.
func TestRecordOutageOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	dsn := pgtest.Database(t)
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 1, "--postgres", dsn, "--log-level", "info")[0]
	cfg := fmt.Sprintf(`{"stock": 100, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", in.base+"/v1/drops/sale", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	won := map[string]bool{}
	claim := func(n int) {
		t.Helper()
		for range n {
			_, v, _ := do(t, "POST", in.base+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "v%d"}`, len(won)))
			code, b, _ := do(t, "POST", in.base+"/v1/drops/sale/claims", v["visitor_token"].(string), "")
			if code != 201 {
				t.Fatalf("claim %d: %d %v", len(won), code, b)
			}
			won[b["code"].(string)] = true
		}
	}
	claim(10)
	recordedCodes(t, dsn, 10)

	// The outage: the record's database takes no connection, and loses the ones it had. The server
	// itself stays up (the package's tests share it), which a refused connection cannot tell apart.
	pgtest.Refuse(t, dsn, true)
	claim(10)
	waitStatus(t, in.base, "degraded")
	// A drop put afresh needs the record to say whether Redis lost it: refused, naming the record.
	code, b, _ := do(t, "PUT", in.base+"/v1/drops/later", testAdminKey, cfg)
	e, _ := b["error"].(map[string]any)
	if msg, _ := e["message"].(string); code != 503 || errorCode(b) != "store_unavailable" || !strings.Contains(msg, "record") {
		t.Errorf("PUT of a new drop while the record is down: %d %v, want 503 store_unavailable naming the record", code, b)
	}
	if up := metric(t, in.base, "rushgate_record_up"); up != 0 {
		t.Errorf("rushgate_record_up is %v while the record refuses connections, want 0", up)
	}
	if n := metric(t, in.base, `rushgate_record_backlog{kind="claims"}`); n != 10 {
		t.Errorf("rushgate_record_backlog of claims is %v while the record refuses connections, want the 10 claimed since", n)
	}
	time.Sleep(2 * time.Second) // twenty passes at the idle pace: each used to log
	if n := strings.Count(in.log.String(), "recording to SQL failed"); n != 1 {
		t.Errorf("the outage was logged %d times in its first seconds, want once", n)
	}

	pgtest.Refuse(t, dsn, false)
	codes := recordedCodes(t, dsn, 20)
	waitStatus(t, in.base, "ok")
	if up := metric(t, in.base, "rushgate_record_up"); up != 1 {
		t.Errorf("rushgate_record_up is %v after the record is back, want 1", up)
	}
	for deadline := time.Now().Add(10 * time.Second); metric(t, in.base, `rushgate_record_backlog{kind="claims"}`) != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the backlog of claims is still %v after the record came back", metric(t, in.base, `rushgate_record_backlog{kind="claims"}`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(in.log.String(), "recording to SQL resumed") {
		t.Errorf("the log does not say that recording resumed:\n%s", in.log)
	}
	for _, c := range codes {
		if !won[c] {
			t.Fatalf("recorded code %s was never answered", c)
		}
	}
}

// recordedCodes waits up to 20 s until the record at dsn holds want claims of the drop "sale", and
// returns their codes.
func recordedCodes(t *testing.T, dsn string, want int) []string {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var codes []string
		rows, err := db.QueryContext(context.Background(), `SELECT code FROM drop_claims WHERE drop_id = 'sale'`)
		if err == nil {
			for rows.Next() {
				var c string
				if rows.Scan(&c) == nil {
					codes = append(codes, c)
				}
			}
			rows.Close()
		}
		if len(codes) == want {
			return codes
		}
		if time.Now().After(deadline) {
			t.Fatalf("SQL holds %d claims (%v), want %d", len(codes), err, want)
		}
	}
}

// waitStatus waits up to 10 s until an instance's /healthz answers 200 with status want.
func waitStatus(t *testing.T, base, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, b, _ := do(t, "GET", base+"/healthz", "", "")
		if code == 200 && b["status"] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz: %d %v, want 200 %q", code, b, want)
		}
	}
}

// TestRecordOpensLater: an instance on Redis starts while its PostgreSQL record refuses connections,
// where it used to stop at its start. Its lines serve meanwhile, /healthz says "degraded", and a new
// drop waits for the record; once the database takes connections the record opens by itself and the
// drop's claims reach it.
func TestRecordOpensLater(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	dsn := pgtest.Database(t)
	pgtest.Refuse(t, dsn, true)
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 1, "--postgres", dsn, "--log-level", "info")[0]
	waitStatus(t, in.base, "degraded")
	// Lines need no record: they serve meanwhile.
	if code, b, _ := do(t, "PUT", in.base+"/v1/rooms/line", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatalf("PUT room while the record is down: %d %v", code, b)
	}
	if code, b, _ := do(t, "POST", in.base+"/v1/rooms/line/join", "", ""); code != 200 {
		t.Fatalf("join while the record is down: %d %v", code, b)
	}
	cfg := fmt.Sprintf(`{"stock": 100, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", in.base+"/v1/drops/sale", testAdminKey, cfg); code != 503 {
		t.Fatalf("PUT of a drop the record cannot vouch for: %d %v, want 503", code, b)
	}

	pgtest.Refuse(t, dsn, false)
	waitStatus(t, in.base, "ok")
	if !strings.Contains(in.log.String(), "the SQL record is open") {
		t.Errorf("the log does not say the record opened:\n%s", in.log)
	}
	if code, b, _ := do(t, "PUT", in.base+"/v1/drops/sale", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT once the record is open: %d %v", code, b)
	}
	won := map[string]bool{}
	for i := range 5 {
		_, v, _ := do(t, "POST", in.base+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "v%d"}`, i))
		code, b, _ := do(t, "POST", in.base+"/v1/drops/sale/claims", v["visitor_token"].(string), "")
		if code != 201 {
			t.Fatalf("claim: %d %v", code, b)
		}
		won[b["code"].(string)] = true
	}
	for _, c := range recordedCodes(t, dsn, 5) {
		if !won[c] {
			t.Fatalf("recorded code %s was never answered", c)
		}
	}
}

// TestSplitRecordIsReported: two instances on one Redis, each recording into a SQLite file of its own,
// split the record of drops and auctions between them. The second one started says so in its log and
// in rushgate_records_in_use; instances sharing one --postgres report one record.
func TestSplitRecordIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	addr, bin := redistest.Shared(t), buildBinary(t)
	// records waits for an instance's first check, which runs as it starts, alongside its first answers.
	records := func(t *testing.T, in *instance, want float64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			n, _, err := metricValue(in.base, "rushgate_records_in_use") // not there before the first check
			if err == nil && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rushgate_records_in_use is %v, want %v", n, want)
			}
		}
	}
	split := startInstances(t, bin, addr, 2)
	records(t, split[1], 2)
	if !strings.Contains(split[1].log.String(), "record into different SQL records") {
		t.Errorf("the second instance does not warn of the split record; it wrote:\n%s", split[1].log)
	}

	t.Run("shared", func(t *testing.T) { // a prefix of its own: the split instances above are not seen
		in := startInstances(t, bin, addr, 2, "--postgres", pgtest.Database(t))
		records(t, in[1], 1)
	})
}

// TestDropFeedAcrossInstances: claims made through one instance reach the live feeds (SSE) that
// visitors hold on another within about two read intervals, down to sold out, where the feeds end.
func TestDropFeedAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	cfg := fmt.Sprintf(`{"stock": 3, "opens_at": %q}`, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339))
	if code, b, _ := do(t, "PUT", in[0].base+"/v1/drops/feed", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT: %d %v", code, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var feeds []chan float64
	for range 5 {
		lines := sseData(ctx, t, in[1].base+"/v1/drops/feed/live")
		got := make(chan float64, 8)
		feeds = append(feeds, got)
		go func() {
			defer close(got)
			for l := range lines {
				var v struct {
					Remaining float64 `json:"remaining"`
				}
				if json.Unmarshal([]byte(l.data), &v) == nil {
					got <- v.Remaining
				}
			}
		}()
	}
	for f, got := range feeds {
		if r := <-got; r != 3 {
			t.Fatalf("feed %d starts at %v remaining", f, r)
		}
	}
	for i := range 3 {
		_, v, _ := do(t, "POST", in[0].base+"/v1/visitors", testAdminKey, fmt.Sprintf(`{"subject": "buyer-%d"}`, i))
		start := time.Now()
		if code, b, _ := do(t, "POST", in[0].base+"/v1/drops/feed/claims", v["visitor_token"].(string), ""); code != 201 {
			t.Fatalf("claim %d: %d %v", i, code, b)
		}
		for f, got := range feeds {
			select {
			case r := <-got:
				if r != float64(2-i) {
					t.Fatalf("feed %d after claim %d: %v remaining", f, i, r)
				}
				if d := time.Since(start); d > 2*time.Second+500*time.Millisecond {
					t.Fatalf("feed %d: claim %d showed after %v", f, i, d)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("feed %d on the other instance: nothing after claim %d", f, i)
			}
		}
	}
	for f, got := range feeds {
		select {
		case _, ok := <-got:
			if ok {
				t.Fatalf("feed %d went on after sold out", f)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("feed %d did not end after sold out", f)
		}
	}
}

// TestRestockAcrossInstances: two instances on one Redis. A room follows a drop of two units; four
// visitors wait through the second instance, two are let in and one claims. The first instance restocks
// the drop to four: the second's line lets two more in at once, its claims (checked against the config
// it cached) take the new units and no more, and its reads show the new stock.
func TestRestockAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	a, b, tokens := lineOfADrop(t, "restock-line", 10, "restock", 2, 4)
	// admitted waits until n of the four hold an admission on the second instance, and returns them by
	// visitor ("" for one that holds none).
	admitted := func(n int) []string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			adm, held := make([]string, len(tokens)), 0
			for i, tok := range tokens {
				if _, v, _ := do(t, "GET", b+"/v1/rooms/restock-line/status", tok, ""); v["state"] == "admitted" {
					adm[i] = v["admission_token"].(string)
					held++
				}
			}
			if held == n {
				return adm
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of four admitted, want %d", held, n)
			}
		}
	}
	claim := func(i int, adm string) {
		t.Helper()
		if code, v, _ := do(t, "POST", b+"/v1/drops/restock/claims", tokens[i], `{"admission_token": "`+adm+`"}`); code != 201 {
			t.Fatalf("visitor %d's claim: %d %v", i, code, v)
		}
	}
	adm := admitted(2)
	first := slices.IndexFunc(adm, func(s string) bool { return s != "" })
	claim(first, adm[first])
	admitted(1) // the claim ended its admission; one unit left, held by the other's
	if code, v, _ := do(t, "PATCH", a+"/v1/drops/restock", testAdminKey, `{"stock": 4}`); code != 200 {
		t.Fatalf("restock: %d %v", code, v)
	}
	for i, s := range admitted(3) {
		if s != "" {
			claim(i, s)
		}
	}
	if _, v, _ := do(t, "GET", b+"/v1/drops/restock", "", ""); v["stock"] != 4.0 || v["remaining"] != 0.0 || v["status"] != "sold_out" {
		t.Fatalf("the drop on the second instance: %v", v)
	}
	if code, v, _ := do(t, "POST", b+"/v1/rooms/restock-line/join", "", ""); code != 410 {
		t.Fatalf("a join once the restock is gone: %d %v", code, v)
	}
}

// TestClosedDropAcrossInstances: two instances on one Redis. A room of one slot follows a drop; three
// visitors wait through the second instance, one is let in. The first instance's operator closes the
// drop: once the second has heard, a slot freed lets nobody in on either instance, and the line hears
// why; opened again, the next visitor goes in, and the second instance's line hears of it within about
// a second.
func TestClosedDropAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	a, b, tokens := lineOfADrop(t, "closing-line", 1, "closing", 10, 3)
	status := func(i int) map[string]any {
		_, v, _ := do(t, "GET", b+"/v1/rooms/closing-line/status", tokens[i], "")
		return v
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
		}
	}
	until("the first admission", func() bool { return status(0)["state"] == "admitted" })
	if code, v, _ := do(t, "POST", a+"/v1/drops/closing/close", testAdminKey, ""); code != 200 {
		t.Fatalf("close: %d %v", code, v)
	}
	until("the second instance to hear of the close", func() bool { return status(1)["drop_closed"] == true })
	if code, v, _ := do(t, "POST", b+"/v1/rooms/closing-line/release", tokens[0], ""); code != 200 {
		t.Fatalf("release: %d %v", code, v)
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if v := status(1); v["state"] != "waiting" || v["position"] != 1.0 || v["drop_closed"] != true {
			t.Fatalf("the next in line while the drop is closed: %v", v)
		}
	}
	if code, v, _ := do(t, "POST", a+"/v1/drops/closing/open", testAdminKey, ""); code != 200 {
		t.Fatalf("open: %d %v", code, v)
	}
	until("the next admission", func() bool { return status(1)["state"] == "admitted" })
	until("the second instance to hear of the reopening", func() bool { return status(2)["drop_closed"] == nil })
	if v := status(2); v["state"] != "waiting" || v["position"] != 1.0 {
		t.Fatalf("the last in line, reopened: %v", v)
	}
}

// lineOfADrop starts two instances on one Redis and, through the first, a room of capacity slots that
// follows a drop of stock units behind it, open since a minute ago; n visitors join the room's line
// through the second. It returns the two instances' addresses and the visitors' tokens in join order.
func lineOfADrop(t *testing.T, room string, capacity int, drop string, stock, n int) (a, b string, tokens []string) {
	t.Helper()
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	a, b = in[0].base, in[1].base
	put := func(path, body string) {
		t.Helper()
		if code, v, _ := do(t, "PUT", a+path, testAdminKey, body); code != 200 {
			t.Fatalf("PUT %s: %d %v", path, code, v)
		}
	}
	put("/v1/rooms/"+room, fmt.Sprintf(`{"capacity": %d}`, capacity))
	put("/v1/drops/"+drop, fmt.Sprintf(`{"stock": %d, "opens_at": %q, "room": %q}`, stock, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), room))
	put("/v1/rooms/"+room, fmt.Sprintf(`{"capacity": %d, "drop": %q}`, capacity, drop))
	for range n {
		code, v, _ := do(t, "POST", b+"/v1/rooms/"+room+"/join", "", "")
		if code != 200 {
			t.Fatalf("join: %d %v", code, v)
		}
		tokens = append(tokens, v["visitor_token"].(string))
	}
	return a, b, tokens
}

// TestRoomLinkRacesTheDropsDepartureOnRedis: two instances on one Redis. The first links a room to a
// drop while the second, at the same instant, deletes the drop or moves it from behind the room; after
// each race a room follows a drop only if the drop exists behind it, and of the two changes at most
// one was answered 200. Each service checks again after its write, so that at least one of two racing
// changes sees the other.
func TestRoomLinkRacesTheDropsDepartureOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	if code, v, _ := do(t, "PUT", in[0].base+"/v1/rooms/racing", testAdminKey, `{"capacity": 2}`); code != 200 {
		t.Fatalf("the room: %d %v", code, v)
	}
	apitest.LinkRaces(t, in[0].base, in[1].base, testAdminKey, "racing", 200)
}

// TestRoomsFollowTheirDropsAcrossInstances: two instances on one Redis take random changes of two rooms
// and the drops behind them (links, new batches, restocks, closings and openings) among a crowd's
// joins, claims on any of the drops and releases, each step on either instance, their gates admitting
// as they do. After each step no drop is claimed past its stock, and a room turns joins away as sold
// out exactly when the drop it follows has nothing left. On a standalone Redis and on a Cluster.
func TestRoomsFollowTheirDropsAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	bin := buildBinary(t)
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) { roomsFollowTheirDrops(t, bin, strings.Join(tp.Addrs, ",")) })
}

// roomsFollowTheirDrops runs TestRoomsFollowTheirDropsAcrossInstances's crowd on the Redis at addrs.
func roomsFollowTheirDrops(t *testing.T, bin, addrs string) {
	in := startInstances(t, bin, addrs, 2)
	r := rand.New(rand.NewPCG(5, 2026))
	at := func() string { return in[r.IntN(2)].base }
	rooms, drops := []string{"fr0", "fr1"}, []string{"fd0", "fd1", "fd2"}
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	putDrop := func(d, rm string, stock int) (int, map[string]any) {
		code, v, _ := do(t, "PUT", at()+"/v1/drops/"+d, testAdminKey, fmt.Sprintf(`{"stock": %d, "opens_at": %q, "room": %q}`, stock, now, rm))
		return code, v
	}
	for i, d := range drops {
		if code, v := putDrop(d, rooms[i%2], 3+i); code != 200 {
			t.Fatalf("drop %s: %d %v", d, code, v)
		}
	}
	for _, rm := range rooms {
		if code, v, _ := do(t, "PUT", at()+"/v1/rooms/"+rm, testAdminKey, `{"capacity": 3, "grace": "1h", "idle_timeout": "1h"}`); code != 200 {
			t.Fatalf("room %s: %d %v", rm, code, v)
		}
	}
	dropOf := func(d string) map[string]any { _, v, _ := do(t, "GET", at()+"/v1/drops/"+d, "", ""); return v }
	num := func(v map[string]any, k string) int64 { f, _ := v[k].(float64); return int64(f) }
	visitors := map[string][]string{}
	counts := map[string]int{}
	batch := len(drops) - 1
	for step := range 1200 {
		rm, d := rooms[r.IntN(2)], drops[r.IntN(3)]
		var code int
		var v map[string]any
		what := ""
		switch n := r.IntN(20); {
		case n < 2:
			target := `null`
			if dropOf(d)["room"] == rm && r.IntN(4) > 0 {
				target = `"` + d + `"`
			}
			what = "link"
			code, v, _ = do(t, "PATCH", at()+"/v1/rooms/"+rm, testAdminKey, `{"drop": `+target+`}`)
		case n < 3:
			what = "restock"
			code, v, _ = do(t, "PATCH", at()+"/v1/drops/"+d, testAdminKey, fmt.Sprintf(`{"stock": %d}`, 1+r.IntN(12)))
		case n < 4:
			what = []string{"close", "open"}[r.IntN(2)]
			code, v, _ = do(t, "POST", at()+"/v1/drops/"+d+"/"+what, testAdminKey, "")
		case n < 5:
			i := r.IntN(3)
			batch++
			drops[i] = fmt.Sprintf("fd%d", batch)
			what = "batch"
			code, v = putDrop(drops[i], rm, 2+r.IntN(6))
		case n < 9:
			what = "join " + rm
			code, v, _ = do(t, "POST", at()+"/v1/rooms/"+rm+"/join", "", "")
			if code == 200 {
				visitors[rm] = append(visitors[rm], v["visitor_token"].(string))
			}
		case n < 17:
			if len(visitors[rm]) == 0 {
				continue
			}
			if r.IntN(4) > 0 {
				for _, behind := range drops {
					if dropOf(behind)["room"] == rm {
						d = behind
					}
				}
			}
			i := r.IntN(min(4, len(visitors[rm])))
			tok := visitors[rm][i]
			_, st, _ := do(t, "GET", at()+"/v1/rooms/"+rm+"/status", tok, "")
			adm, _ := st["admission_token"].(string)
			what = "claim"
			code, v, _ = do(t, "POST", at()+"/v1/drops/"+d+"/claims", tok, `{"admission_token": "`+adm+`"}`)
			if code == 201 {
				do(t, "POST", at()+"/v1/rooms/"+rm+"/release", tok, "")
				visitors[rm] = slices.Delete(visitors[rm], i, i+1)
			}
		default:
			if len(visitors[rm]) == 0 {
				continue
			}
			i := r.IntN(min(4, len(visitors[rm])))
			what = "release"
			if code, v, _ = do(t, "POST", at()+"/v1/rooms/"+rm+"/release", visitors[rm][i], ""); code == 200 {
				visitors[rm] = slices.Delete(visitors[rm], i, i+1)
			}
		}
		if code >= 500 || code == 0 {
			t.Fatalf("step %d, %s: %d %v", step, what, code, v)
		}
		e, _ := v["error"].(map[string]any)
		counts[fmt.Sprintf("%s %d %v", strings.Fields(what)[0], code, e["code"])]++
		for _, d := range drops {
			if dr := dropOf(d); num(dr, "remaining") < 0 || num(dr, "remaining") > num(dr, "stock") {
				t.Fatalf("step %d, %s: drop %s %v", step, what, d, dr)
			}
		}
		if strings.HasPrefix(what, "join ") {
			_, cfg, _ := do(t, "GET", at()+"/v1/rooms/"+rm, testAdminKey, "")
			followed, _ := cfg["drop"].(string)
			left := int64(-1)
			if followed != "" {
				left = num(dropOf(followed), "remaining")
			}
			if soldOut := code == 410 && e["code"] == "sold_out"; soldOut != (left == 0) {
				t.Fatalf("step %d, join %s: %d %v, the room follows %q with %d left", step, rm, code, v, followed, left)
			}
		}
	}
	if counts["claim 201 <nil>"] < 20 || counts["join 410 sold_out"] == 0 {
		t.Fatalf("the crowd did too little to tell: %v", counts)
	}
	t.Log(counts)
}

// TestSoldOutLineAcrossInstances: two instances on one Redis; a visitor far back in a room's line
// holds its event stream on the second. The last unit, claimed through the first, tells the stream
// sold_out at once, however recently it read its status, and linking the room to a second batch
// through the first brings the place back on it at once too: a change to everyone starts an epoch on
// every instance.
func TestSoldOutLineAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	a, b, tokens := lineOfADrop(t, "sold-line", 1, "last", 1, 105)
	var admission string
	for deadline := time.Now().Add(10 * time.Second); admission == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first in line was never admitted")
		}
		_, v, _ := do(t, "GET", b+"/v1/rooms/sold-line/status", tokens[0], "")
		admission, _ = v["admission_token"].(string)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := visitorEvents(ctx, t, b+"/v1/rooms/sold-line/events", tokens[len(tokens)-1])
	defer res.Body.Close()
	states := make(chan string, 16)
	go func() {
		defer close(states)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"state"`) {
				var v struct{ State string }
				_ = json.Unmarshal([]byte(data), &v)
				states <- v.State
			}
		}
	}()
	next := func(what string, want ...string) {
		t.Helper()
		since := time.Now()
		for {
			select {
			case s, ok := <-states:
				if !ok {
					t.Fatalf("the stream ended before %s", what)
				}
				if slices.Contains(want, s) {
					if late := time.Since(since); late > 3*time.Second {
						t.Fatalf("%s after %v; a change to everyone is read at once", what, late)
					}
					return
				}
			case <-ctx.Done():
				t.Fatalf("the stream never told %s", what)
			}
		}
	}
	next("the place", "waiting")
	time.Sleep(300 * time.Millisecond) // the stream has just read its status: a paced read would wait

	if code, v, _ := do(t, "POST", a+"/v1/drops/last/claims", tokens[0], `{"admission_token": "`+admission+`"}`); code != 201 {
		t.Fatalf("the last claim: %d %v", code, v)
	}
	next("the sell-out", "sold_out")
	if code, v, _ := do(t, "GET", b+"/v1/rooms/sold-line/status", "", ""); code != 401 {
		t.Fatalf("a status without a visitor: %d %v", code, v)
	}
	if _, v, _ := do(t, "GET", b+"/v1/rooms/sold-line/status", tokens[0], ""); v["state"] != "sold_out" {
		t.Fatalf("the status of the visitor who claimed, in no line now: %v", v)
	}

	time.Sleep(300 * time.Millisecond)
	put := func(path, body string) {
		t.Helper()
		if code, v, _ := do(t, "PUT", a+path, testAdminKey, body); code != 200 {
			t.Fatalf("PUT %s: %d %v", path, code, v)
		}
	}
	put("/v1/drops/more", fmt.Sprintf(`{"stock": 5, "opens_at": %q, "room": "sold-line"}`, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)))
	if code, v, _ := do(t, "PATCH", a+"/v1/rooms/sold-line", testAdminKey, `{"drop": "more"}`); code != 200 {
		t.Fatalf("the link to a second batch: %d %v", code, v)
	}
	next("the place again", "waiting", "admitted")
}
