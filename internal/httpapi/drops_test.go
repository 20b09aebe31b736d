package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

func (e *env) dropCfg(extra string) string {
	return fmt.Sprintf(`{"stock": 2, "opens_at": %q%s}`, e.clock.Now().Format(time.RFC3339), extra)
}

func TestDropAPI(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/coupon", "", e.dropCfg("")), 401, "unauthorized")
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, `{"stock": 0}`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg(`, "codes": ["SAVE10", "SAVE20"]`)), 200, "")
	e.want(e.do("GET", "/v1/drops/nope", "", ""), 404, "drop_not_found")
	// The listed codes are the operator's: the whole config (which the console's form edits) has them,
	// in order; the public view and the operator's list do not.
	whole := e.do("GET", "/v1/drops/coupon/config", adminKey, "")
	if codes := fmt.Sprint(whole.body["config"].(map[string]any)["codes"]); codes != "[SAVE10 SAVE20]" || whole.num("listed") != 2 {
		t.Fatalf("the whole config lists codes %s, listed %d", codes, whole.num("listed"))
	}
	if brief := e.do("GET", "/v1/drops/coupon/config?codes=0", adminKey, ""); brief.num("listed") != 2 {
		t.Fatalf("without the codes: %v", brief.body)
	}
	// The public view is every visitor's: a cache in front may answer a crowd's polls for a second.
	if pub, admin := e.do("GET", "/v1/drops/coupon", "", ""), e.do("GET", "/v1/drops/coupon/config", adminKey, ""); pub.header.Get("Cache-Control") != "public, max-age=1" ||
		admin.header.Get("Cache-Control") != "no-store" || e.do("GET", "/v1/drops/nope", "", "").header.Get("Cache-Control") != "no-store" {
		t.Fatalf("Cache-Control: public view %q, operator's %q", pub.header.Get("Cache-Control"), admin.header.Get("Cache-Control"))
	}
	for _, read := range []resp{e.do("GET", "/v1/drops/coupon", "", ""), e.do("GET", "/v1/drops", adminKey, ""),
		e.do("GET", "/v1/drops/coupon/config?codes=0", adminKey, "")} {
		if b, _ := json.Marshal(read.body); read.code != 200 || strings.Contains(string(b), "SAVE") {
			t.Fatalf("a read shows the codes: %d %s", read.code, b)
		}
	}
	a, b, c := e.visitorToken("a"), e.visitorToken("b"), e.visitorToken("c")
	first := e.do("POST", "/v1/drops/coupon/claims", a, "")
	e.want(first, 201, "")
	if first.str("code") != "SAVE10" || first.str("claim_id") == "" || first.str("claimed_at") == "" || first.num("seq") != 1 {
		t.Fatalf("claim %v", first.body)
	}
	again := e.do("POST", "/v1/drops/coupon/claims", a, "")
	e.want(again, 409, "already_claimed")
	if claims := again.body["error"].(map[string]any)["claims"].([]any); len(claims) != 1 || claims[0].(map[string]any)["code"] != "SAVE10" {
		t.Fatalf("already_claimed without the existing claim: %v", again.body)
	}
	// The same Idempotency-Key answers the same; a fresh visitor takes the last unit.
	req := func(tok, key string) resp {
		r, _ := http.NewRequest("POST", e.srv.URL+"/v1/drops/coupon/claims", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Idempotency-Key", key)
		res, err := e.srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out := resp{code: res.StatusCode}
		_ = jsonDecode(res, &out.body)
		return out
	}
	one, two := req(b, "k1"), req(b, "k1")
	if one.code != 201 || two.code != 201 || one.str("claim_id") != two.str("claim_id") || one.str("code") != "SAVE20" || two.num("seq") != 2 {
		t.Fatalf("idempotent repeat: %v / %v", one.body, two.body)
	}
	e.want(e.do("POST", "/v1/drops/coupon/claims", c, ""), 410, "sold_out")
	if v := e.do("GET", "/v1/drops/coupon", "", ""); v.num("remaining") != 0 || v.str("status") != "sold_out" {
		t.Fatalf("view %v", v.body)
	}
	if mine := e.do("GET", "/v1/drops/coupon/claims/mine", b, ""); len(mine.body["claims"].([]any)) != 1 {
		t.Fatalf("mine %v", mine.body)
	}
	e.want(e.do("GET", "/v1/drops/coupon/claims", "", ""), 401, "unauthorized")
	if all := e.do("GET", "/v1/drops/coupon/claims?after=1", adminKey, ""); len(all.body["claims"].([]any)) != 1 || all.num("next_after") != 2 {
		t.Fatalf("admin page %v", all.body)
	}
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 409, "drop_started")

	e.want(e.do("PUT", "/v1/drops/later", adminKey, fmt.Sprintf(`{"stock": 5, "opens_at": %q}`, e.clock.Now().Add(time.Hour).Format(time.RFC3339))), 200, "")
	e.want(e.do("POST", "/v1/drops/later/claims", a, ""), 409, "not_open")
}

// TestClaimOfCode: a site's checkout asks which claim handed out the code a customer presents: the
// claim for a real code (listed or generated, whatever its characters), 404 code_not_found for any
// other, never to a caller without the admin key.
func TestClaimOfCode(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/listed", adminKey, e.dropCfg(`, "codes": ["SAVE 10/20%", "SAVE20"]`)), 200, "")
	e.want(e.do("PUT", "/v1/drops/gen", adminKey, e.dropCfg("")), 200, "")
	a := e.visitorToken("a")
	listed, gen := e.do("POST", "/v1/drops/listed/claims", a, ""), e.do("POST", "/v1/drops/gen/claims", a, "")
	e.want(listed, 201, "")
	e.want(gen, 201, "")
	for _, c := range []struct{ drop, code string }{{"listed", "SAVE 10/20%"}, {"gen", gen.str("code")}} {
		path := "/v1/drops/" + c.drop + "/codes/" + url.PathEscape(c.code)
		e.want(e.do("GET", path, "", ""), 401, "unauthorized")
		e.want(e.do("GET", path, a, ""), 401, "unauthorized")
		got := e.do("GET", path, adminKey, "")
		e.want(got, 200, "")
		if got.str("code") != c.code || got.num("seq") != 1 || got.str("claim_id") != c.drop+".1" || got.str("visitor") == "" || got.str("claimed_at") == "" {
			t.Fatalf("the claim of %q: %v", c.code, got.body)
		}
	}
	for path, code := range map[string]string{
		"/v1/drops/listed/codes/SAVE20":                   "code_not_found", // listed, not handed out yet
		"/v1/drops/gen/codes/SAVE20":                      "code_not_found",
		"/v1/drops/gen/codes/" + gen.str("code") + "0":    "code_not_found", // a later claim's number
		"/v1/drops/gen/codes/ABCDEFGHJKLMNPQR-1":          "code_not_found", // forged
		"/v1/drops/nope/codes/SAVE20":                     "drop_not_found",
		"/v1/drops/gen/codes/" + strings.Repeat("A", 129): "invalid_request",
	} {
		want := map[string]int{"code_not_found": 404, "drop_not_found": 404, "invalid_request": 400}[code]
		e.want(e.do("GET", path, adminKey, ""), want, code)
	}
}

// TestRedeemCode: a checkout marks a code used, once: the first call redeems it and its retry for the
// same order is answered alike; another order, or none, is refused 409 code_redeemed with the
// redemption that stands, which the lookup shows from then on. Only with the admin key, and a browser's
// navigation to the URL changes nothing.
func TestRedeemCode(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/listed", adminKey, e.dropCfg(`, "codes": ["SAVE 10/20%", "SAVE20"]`)), 200, "")
	a := e.visitorToken("a")
	e.want(e.do("POST", "/v1/drops/listed/claims", a, ""), 201, "")
	path := "/v1/drops/listed/codes/" + url.PathEscape("SAVE 10/20%")
	if got := e.do("GET", path, adminKey, ""); got.code != 200 || got.body["redeemed_at"] != nil {
		t.Fatalf("an unused code: %d %v", got.code, got.body)
	}
	e.want(e.do("GET", path+"/redeem", adminKey, ""), 405, "method_not_allowed")
	e.want(e.do("POST", path+"/redeem", "", `{"order": "o-1"}`), 401, "unauthorized")
	e.want(e.do("POST", path+"/redeem", a, `{"order": "o-1"}`), 401, "unauthorized")
	e.want(e.do("POST", path+"/redeem", adminKey, `{"order": "o-1", "x": 1}`), 400, "invalid_json")
	tooLong := e.do("POST", path+"/redeem", adminKey, `{"order": "`+strings.Repeat("o", 201)+`"}`)
	e.want(tooLong, 400, "invalid_request")
	if f, _ := tooLong.body["error"].(map[string]any)["field"].(string); f != "order" {
		t.Fatalf("a long order: %v", tooLong.body)
	}
	if got := e.do("GET", path, adminKey, ""); got.body["redeemed_at"] != nil {
		t.Fatalf("a refused redemption redeemed: %v", got.body)
	}

	first := e.do("POST", path+"/redeem", adminKey, `{"order": "o-1"}`)
	e.want(first, 200, "")
	at := first.str("redeemed_at")
	if first.str("code") != "SAVE 10/20%" || first.num("seq") != 1 || first.str("order") != "o-1" || at != e.clock.Now().UTC().Format(time.RFC3339) {
		t.Fatalf("redeemed: %v", first.body)
	}
	e.clock.Advance(time.Minute)
	if again := e.do("POST", path+"/redeem", adminKey, `{"order": "o-1"}`); again.code != 200 || again.str("redeemed_at") != at {
		t.Fatalf("the same order's retry: %d %v", again.code, again.body)
	}
	for _, body := range []string{`{"order": "o-2"}`, ""} {
		r := e.do("POST", path+"/redeem", adminKey, body)
		e.want(r, 409, "code_redeemed")
		if er := r.body["error"].(map[string]any); er["redeemed_at"] != at || er["order"] != "o-1" {
			t.Fatalf("refused with %v; want the redemption of o-1 at %s", er, at)
		}
	}
	if got := e.do("GET", path, adminKey, ""); got.str("redeemed_at") != at || got.str("order") != "o-1" {
		t.Fatalf("the lookup of a used code: %v", got.body)
	}
	if n, ok := e.do("GET", "/v1/drops/listed/config?codes=0", adminKey, "").body["redeemed"].(float64); !ok || n != 1 {
		t.Fatalf("the drop's summary counts %v redeemed codes, want 1", n)
	}
	// The visitor sees when its code was used, not the site's order.
	mine := e.do("GET", "/v1/drops/listed/claims/mine", a, "").body["claims"].([]any)[0].(map[string]any)
	if mine["redeemed_at"] != at || mine["order"] != nil || mine["code"] != "SAVE 10/20%" {
		t.Fatalf("the visitor's claim of a used code: %v", mine)
	}
	// The order is cancelled: only its own checkout hands the code back, and then it may be used again.
	e.want(e.do("POST", path+"/unredeem", adminKey, `{"order": "o-2"}`), 409, "code_redeemed")
	e.want(e.do("POST", path+"/unredeem", a, `{"order": "o-1"}`), 401, "unauthorized")
	if back := e.do("POST", path+"/unredeem", adminKey, `{"order": "o-1"}`); back.code != 200 || back.body["redeemed_at"] != nil || back.str("code") != "SAVE 10/20%" {
		t.Fatalf("handing the code back: %d %v", back.code, back.body)
	}
	e.want(e.do("POST", path+"/unredeem", adminKey, `{"order": "o-1"}`), 200, "") // again: nothing to hand back
	if again := e.do("POST", path+"/redeem", adminKey, `{"order": "o-3"}`); again.code != 200 || again.str("order") != "o-3" {
		t.Fatalf("redeeming the code handed back: %d %v", again.code, again.body)
	}
	// The metrics count o-1 and o-3 redeemed, and the two presentations of the code o-1 held refused.
	res := e.adminGet("/metrics")
	scrape, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, line := range []string{`rushgate_drop_redemptions_total{drop="listed",outcome="redeemed"} 2`,
		`rushgate_drop_redemptions_total{drop="listed",outcome="refused"} 2`} {
		if !strings.Contains(string(scrape), line+"\n") {
			t.Fatalf("the metrics lack %s", line)
		}
	}
	e.want(e.do("POST", "/v1/drops/listed/codes/SAVE20/redeem", adminKey, ""), 404, "code_not_found") // not handed out yet
	e.want(e.do("POST", "/v1/drops/listed/codes/SAVE20/unredeem", adminKey, ""), 404, "code_not_found")
	e.want(e.do("POST", "/v1/drops/nope/codes/SAVE20/redeem", adminKey, ""), 404, "drop_not_found")
}

func TestDropBehindRoomReleasesOnClaim(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1}`)
	e.want(e.do("PUT", "/v1/drops/d", adminKey, e.dropCfg(`, "room": "sale", "release_on_claim": true`)), 200, "")
	x, y := e.visitorToken("x"), e.visitorToken("y")
	e.want(e.do("POST", "/v1/drops/d/claims", x, ""), 403, "not_admitted")
	e.join("sale", x)
	e.join("sale", y)
	e.tick("sale")
	adm := e.do("GET", "/v1/rooms/sale/status", x, "").str("admission_token")
	e.want(e.do("POST", "/v1/drops/d/claims", x, `{"admission_token": "`+adm+`"}`), 201, "")
	if st := e.do("GET", "/v1/rooms/sale/status", x, ""); st.str("state") != "none" {
		t.Fatalf("the claim did not release the admission: %v", st.body)
	}
	e.tick("sale")
	if st := e.do("GET", "/v1/rooms/sale/status", y, ""); st.str("state") != "admitted" {
		t.Fatalf("the next visitor was not admitted: %v", st.body)
	}
}

// TestDropCrowdOverHTTP: stock 1,000; 5,000 visitors press 4 times each, 200 at a time. Exactly 1,000
// answers are 201, to 1,000 distinct visitors, no code twice, and the SQL record has those 1,000 rows.
func TestDropCrowdOverHTTP(t *testing.T) {
	rec, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	e := setup(t, func(c *httpapi.Config, _ *room.Store) {
		c.Drops = drop.NewService(memstore.NewDrops(nil, rec), drop.Options{})
	})
	e.want(e.do("PUT", "/v1/drops/big", adminKey, fmt.Sprintf(`{"stock": 1000, "opens_at": %q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))), 200, "")
	tokens := make([]string, 5000)
	for i := range tokens {
		tokens[i] = e.visitorToken(fmt.Sprint("crowd-", i))
	}
	var mu sync.Mutex
	won := map[string]string{} // visitor token -> code
	codes := map[string]bool{}
	sem := make(chan struct{}, 200)
	var wg sync.WaitGroup
	for i := range 20000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tok := tokens[i%5000]
			r, _ := http.NewRequest("POST", e.srv.URL+"/v1/drops/big/claims", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			res, err := e.srv.Client().Do(r)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var body map[string]any
			_ = jsonDecode(res, &body)
			switch res.StatusCode {
			case 201:
				mu.Lock()
				defer mu.Unlock()
				code := body["code"].(string)
				if _, dup := won[tok]; dup || codes[code] {
					t.Errorf("second win or repeated code %s", code)
				}
				won[tok], codes[code] = code, true
			case 409, 410:
			default:
				t.Errorf("claim answered %d %v", res.StatusCode, body)
			}
		})
	}
	wg.Wait()
	rows, _ := rec.Claims(context.Background(), "big")
	if len(won) != 1000 || len(rows) != 1000 {
		t.Fatalf("%d claims answered 201, %d rows recorded; stock 1000", len(won), len(rows))
	}
	for _, r := range rows {
		if !codes[r.Code] {
			t.Fatalf("recorded code %s was never answered", r.Code)
		}
	}
}

// TestDropWithManyCodes: a coupon partner's batch of 50,000 codes (a 700 KB config) is taken and handed
// out in order; the operator's whole config has every code and its brief view none; more codes than
// drop.MaxCodes, or a body past its bound, are refused with their codes, and leave no drop.
func TestDropWithManyCodes(t *testing.T) {
	e := setup(t)
	codes := make([]string, 50_000)
	for i := range codes {
		codes[i] = fmt.Sprintf("PARTNER-%06d", i)
	}
	cfgWith := func(codes []string) string {
		b, _ := json.Marshal(map[string]any{"opens_at": e.clock.Now().Format(time.RFC3339), "codes": codes})
		return string(b)
	}
	e.want(e.do("PUT", "/v1/drops/batch", adminKey, cfgWith(codes)), 200, "")
	for i := range 3 {
		if c := e.do("POST", "/v1/drops/batch/claims", e.visitorToken(fmt.Sprint("v", i)), ""); c.code != 201 || c.str("code") != codes[i] {
			t.Fatalf("claim %d: %d %v", i, c.code, c.body)
		}
	}
	whole := e.do("GET", "/v1/drops/batch/config", adminKey, "")
	if got, _ := whole.body["config"].(map[string]any)["codes"].([]any); len(got) != len(codes) || got[len(got)-1] != codes[len(codes)-1] {
		t.Fatalf("the whole config lists %d codes", len(got))
	}
	if brief := e.do("GET", "/v1/drops/batch/config?codes=0", adminKey, ""); brief.num("listed") != int64(len(codes)) || brief.num("remaining") != int64(len(codes)-3) {
		t.Fatalf("brief view %v", brief.body)
	}

	tooMany := make([]string, drop.MaxCodes+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint(i)
	}
	if r := e.do("PUT", "/v1/drops/more", adminKey, cfgWith(tooMany)); r.code != 400 || r.errCode() != "invalid_config" ||
		!strings.Contains(fmt.Sprint(r.body), "at most 100000 codes") {
		t.Fatalf("too many codes: %d %v", r.code, r.body)
	}
	long := make([]string, 40_000)
	for i := range long {
		long[i] = fmt.Sprintf("%0120d", i)
	}
	e.want(e.do("PUT", "/v1/drops/more", adminKey, cfgWith(long)), 413, "body_too_large") // 5 MB
	e.want(e.do("GET", "/v1/drops/more", "", ""), 404, "drop_not_found")
	e.want(e.do("PUT", "/v1/rooms/big", adminKey, `{"capacity": 1, "x": "`+strings.Repeat("a", 70<<10)+`"}`), 413, "body_too_large")
}

// TestDropLive: a drop's live feed sends its view at once, the claims that follow within about
// drop.FeedEvery, and the sold-out view, after which it ends; an unknown drop is a 404.
func TestDropLive(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/live", adminKey, e.dropCfg("")), 200, "") // stock 2
	e.want(e.do("GET", "/v1/drops/nope/live", "", ""), 404, "drop_not_found")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/drops/live/live", nil)
	res, err := e.srv.Client().Do(req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live: %v %v", res, err)
	}
	defer res.Body.Close()
	views := make(chan map[string]any, 8)
	go func() {
		defer close(views)
		sc := bufio.NewScanner(res.Body)
		id := ""
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id = v
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				_ = json.Unmarshal([]byte(data), &m)
				m["_id"], id = id, ""
				views <- m
			}
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m, ok := <-views:
			if !ok {
				t.Fatalf("%s: the feed ended", what)
			}
			return m
		case <-time.After(3 * drop.FeedEvery):
			t.Fatalf("%s: nothing within %v", what, 3*drop.FeedEvery)
			return nil
		}
	}
	if m := next("the view"); m["remaining"] != 2.0 || m["status"] != "open" {
		t.Fatalf("first view %v", m)
	}
	e.want(e.do("POST", "/v1/drops/live/claims", e.visitorToken("a"), ""), 201, "")
	if m := next("a claim"); m["remaining"] != 1.0 {
		t.Fatalf("after a claim %v", m)
	}
	e.want(e.do("POST", "/v1/drops/live/claims", e.visitorToken("b"), ""), 201, "")
	if m := next("the last claim"); m["remaining"] != 0.0 || m["status"] != "sold_out" || m["_id"] != "sold_out" {
		t.Fatalf("after the last claim %v", m)
	}
	select {
	case _, ok := <-views:
		if ok {
			t.Fatal("the feed went on after sold out")
		}
	case <-time.After(3 * drop.FeedEvery):
		t.Fatal("the feed did not end after sold out")
	}
	// An EventSource reconnects after the end with the last id: 204 stops it. It read the sold-out
	// view again every 2 s for as long as its page stayed open.
	again, _ := http.NewRequest("GET", e.srv.URL+"/v1/drops/live/live", nil)
	again.Header.Set("Last-Event-ID", "sold_out")
	if res, err := e.srv.Client().Do(again); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("a reconnection after sold out: %v %v, want 204", res, err)
	} else {
		res.Body.Close()
	}
}

// TestClaimKeyIsOne: two Idempotency-Keys are refused rather than one picked, and a refused key sets
// no visitor cookie (before, a claim without a visitor was given a new one before its key was checked).
func TestClaimKeyIsOne(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 200, "")
	claim := func(keys ...string) resp {
		r, _ := http.NewRequest("POST", e.srv.URL+"/v1/drops/coupon/claims", nil)
		r.Header["Idempotency-Key"] = keys
		return e.send(r)
	}
	for _, keys := range [][]string{{"a", "b"}, {"a", "a"}, {strings.Repeat("k", 201)}} {
		if r := claim(keys...); r.code != 400 || r.header.Get("Set-Cookie") != "" {
			t.Errorf("keys %.20q: %d, cookie %q, want 400 and none", keys, r.code, r.header.Get("Set-Cookie"))
		}
	}
	if d := e.do("GET", "/v1/drops/coupon", "", ""); d.num("claimed") != 0 {
		t.Fatalf("a refused key claimed: %v", d.body)
	}
	if r := claim("one"); r.code != 201 || r.header.Get("Set-Cookie") == "" {
		t.Fatalf("one key: %d, cookie %q", r.code, r.header.Get("Set-Cookie"))
	}
}

// TestBearerSchemeAnyCase: "bearer" is the Bearer scheme too; a visitor's claim sent so was made by a
// new anonymous visitor (the header read as no token), an operator's call was refused.
func TestBearerSchemeAnyCase(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 200, "")
	tok := e.visitorToken("alice")
	as := func(method, path, auth string) resp {
		r, _ := http.NewRequest(method, e.srv.URL+path, nil)
		r.Header.Set("Authorization", auth)
		return e.send(r)
	}
	e.want(as("GET", "/v1/drops", "bearer "+adminKey), 200, "")
	if r := as("POST", "/v1/drops/coupon/claims", "BEARER "+tok); r.code != 201 || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("a claim with BEARER: %d, cookie %q (a new visitor)", r.code, r.header.Get("Set-Cookie"))
	}
	if mine := e.do("GET", "/v1/drops/coupon/claims/mine", tok, ""); len(mine.body["claims"].([]any)) != 1 {
		t.Fatalf("the claim is not alice's: %v", mine.body)
	}
}

// TestDropRestock: a drop with claims takes a new title, stock and times, and a higher per_visitor, by
// PUT or PATCH (a PATCH needs no copy of its listed codes), refuses any other change as drop_started
// naming the field, and refuses a stock below its claims, or a new one once sold out, as the stock's
// fault, and a lower per_visitor as its own. The audit log says what
// changed.
func TestDropRestock(t *testing.T) {
	e := setup(t)
	field := func(r resp) any { return r.body["error"].(map[string]any)["field"] }
	e.want(e.do("PUT", "/v1/drops/restock", adminKey, e.dropCfg(`, "title": "Tee", "codes": ["A1", "A2", "A3"]`)), 200, "")
	e.want(e.do("POST", "/v1/drops/restock/claims", e.visitorToken("a"), ""), 201, "")
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"stock": 3, "title": "Tee, restocked"}`), 200, "")
	if v := e.do("GET", "/v1/drops/restock", "", ""); v.num("stock") != 3 || v.num("remaining") != 2 || v.str("title") != "Tee, restocked" {
		t.Fatalf("after the restock: %v", v.body)
	}
	refused := e.do("PATCH", "/v1/drops/restock", adminKey, `{"identity": "site"}`)
	e.want(refused, 409, "drop_started")
	if field(refused) != "identity" {
		t.Fatalf("the refusal names no field: %v", refused.body)
	}
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"stock": 4}`), 400, "invalid_config") // three codes listed
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"codes": ["A1", "A2", "A3", "A4"], "stock": 4}`), 409, "drop_started")
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"stock": 3} {}`), 400, "invalid_config")
	e.want(e.do("PATCH", "/v1/drops/nope", adminKey, `{"stock": 3}`), 404, "drop_not_found")
	e.want(e.do("POST", "/v1/drops/restock/claims", e.visitorToken("b"), ""), 201, "")
	low := e.do("PATCH", "/v1/drops/restock", adminKey, `{"stock": 1}`)
	e.want(low, 400, "invalid_config")
	if field(low) != "stock" {
		t.Fatalf("a stock below the claims: %v", low.body)
	}
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"per_visitor": 2}`), 200, "") // a second claim each
	fewer := e.do("PATCH", "/v1/drops/restock", adminKey, `{"per_visitor": 1}`)
	e.want(fewer, 400, "invalid_config")
	if field(fewer) != "per_visitor" {
		t.Fatalf("a lower per_visitor: %v", fewer.body)
	}
	// A PUT of the whole config, codes and all, as the console sends it.
	whole := fmt.Sprintf(`{"title": "Tee", "stock": 3, "per_visitor": 2, "opens_at": %q, "codes": ["A1", "A2", "A3"]}`, e.clock.Now().Format(time.RFC3339))
	e.want(e.do("PUT", "/v1/drops/restock", adminKey, whole), 200, "")
	e.want(e.do("POST", "/v1/drops/restock/claims", e.visitorToken("a"), ""), 201, "")          // a's second
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"stock": 4}`), 400, "invalid_config") // sold out
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"title": "Tee (sold out)", "message": "More on Friday"}`), 200, "")
	if v := e.do("GET", "/v1/drops/restock", "", ""); v.str("message") != "More on Friday" || v.str("status") != "sold_out" {
		t.Fatalf("told once sold out: %v", v.body)
	}
	e.want(e.do("PATCH", "/v1/drops/restock", adminKey, `{"message": "`+strings.Repeat("x", 2001)+`"}`), 400, "invalid_config")
	var stocks []string
	for _, en := range list(e.do("GET", "/v1/audit?kind=drop&id=restock", adminKey, ""), "entries") {
		for _, c := range en["changes"].([]any) {
			if ch := c.(map[string]any); ch["field"] == "stock" {
				stocks = append(stocks, fmt.Sprint(ch["old"], "→", ch["new"]))
			}
		}
	}
	if !slices.Equal(stocks, []string{"2→3", "<nil>→2"}) { // newest first
		t.Fatalf("the audit log's changes of stock: %q", stocks)
	}
}
