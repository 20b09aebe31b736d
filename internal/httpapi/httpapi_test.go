package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
	"github.com/rushgate/rushgate/internal/vault"
	"github.com/rushgate/rushgate/internal/visitor"
)

const adminKey = "test-admin-key"

type env struct {
	t     testing.TB
	srv   *httptest.Server
	api   http.Handler // what srv serves
	svc   *room.Service
	clock *storetest.Clock
	keys  *keyring.Keyring

	auctions *auction.Service
	drops    *drop.Service
}

type option func(*httpapi.Config, *room.Store)

func setup(t testing.TB, opts ...option) *env {
	t.Helper()
	c := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	var store room.Store = memstore.NewRooms(memstore.Options{Clock: c.Now})
	keys, err := keyring.Open(context.Background(), vault.Dir(t.TempDir()), keyring.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	issuer, _ := visitor.NewIssuer(bytes.Repeat([]byte("s"), 32))
	cfg := httpapi.Config{Keys: keys, Visitors: issuer, AdminKey: adminKey, Clock: c.Now,
		Challenges: challenge.NewIssuer([]byte("challenge-secret"), c.Now), Spent: memstore.NewSpent(c.Now)}
	for _, o := range opts {
		o(&cfg, &store)
	}
	cfg.Metrics = metrics.New()
	cfg.Logger = slog.New(slog.DiscardHandler)
	hist := memstore.NewHistory(c.Now)
	if cfg.Audit == nil {
		cfg.Audit = newAudit(t)
	}
	drops := memstore.NewDrops(c.Now, nil)
	svc := room.NewService(store, room.Options{Clock: c.Now, Manual: true, Observer: cfg.Metrics, Logger: cfg.Logger,
		History: hist, Audit: cfg.Audit, Stock: drop.StockOf(drops)})
	cfg.Metrics.WatchRooms(svc)
	cfg.Rooms = svc
	cfg.Auctions = auction.NewService(memstore.NewAuctions(c.Now, nil), auction.ServiceOptions{Gate: svc, History: hist,
		Audit: cfg.Audit, Clock: c.Now})
	if cfg.Drops == nil {
		redemptions, _ := cfg.Audit.(drop.Redemptions) // the SQL record, unless a test audits elsewhere
		cfg.Drops = drop.NewService(drops, drop.Options{Gate: svc, Logger: cfg.Logger, History: hist,
			Audit: cfg.Audit, Clock: c.Now, Redemptions: redemptions, Observer: cfg.Metrics})
	}
	cfg.Metrics.WatchSales(cfg.Drops, cfg.Auctions)
	api, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	srv.Config.RegisterOnShutdown(api.Drain)
	t.Cleanup(func() {
		api.Drain()
		api.Wait()
		srv.Close()
		cfg.Drops.Stop()
		svc.Stop()
	})
	return &env{t: t, srv: srv, api: api.Handler(), svc: svc, clock: c, keys: keys, auctions: cfg.Auctions, drops: cfg.Drops}
}

type resp struct {
	code   int
	body   map[string]any
	header http.Header
}

func (r resp) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (r resp) str(k string) string { s, _ := r.body[k].(string); return s }
func (r resp) num(k string) int64  { f, _ := r.body[k].(float64); return int64(f) }

// do sends a request; auth is a bearer token (admin or visitor) or empty.
func (e *env) do(method, path, auth, body string) resp {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	return e.send(req)
}

// send sends a prepared request and reads its JSON answer.
func (e *env) send(req *http.Request) resp {
	e.t.Helper()
	method, path := req.Method, req.URL.Path
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	out := resp{code: res.StatusCode, header: res.Header}
	data, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(data, &out.body); err != nil {
		e.t.Fatalf("%s %s: non-JSON response %d %q", method, path, res.StatusCode, data)
	}
	return out
}

func (e *env) want(r resp, code int, errCode string) {
	e.t.Helper()
	if r.code != code || r.errCode() != errCode {
		e.t.Fatalf("got %d %q (%v), want %d %q", r.code, r.errCode(), r.body, code, errCode)
	}
}

func (e *env) putRoom(id, cfg string) {
	e.t.Helper()
	e.want(e.do("PUT", "/v1/rooms/"+id, adminKey, cfg), 200, "")
}

func (e *env) join(id, tok string) resp {
	e.t.Helper()
	r := e.do("POST", "/v1/rooms/"+id+"/join", tok, "")
	e.want(r, 200, "")
	return r
}

// admitOne creates a room with cfg and has one visitor join and be admitted, returning its visitor
// token and admission token.
func (e *env) admitOne(id, cfg string) (tok, adm string) {
	e.t.Helper()
	e.putRoom(id, cfg)
	tok = e.join(id, "").str("visitor_token")
	e.tick(id)
	adm = e.do("GET", "/v1/rooms/"+id+"/status", tok, "").str("admission_token")
	if adm == "" {
		e.t.Fatalf("%s: the visitor was not admitted", id)
	}
	return tok, adm
}

func (e *env) tick(id string) room.Tick {
	e.t.Helper()
	tk, err := e.svc.Tick(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

func TestRoomAdmin(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/rooms/sale", "", `{"capacity": 5}`), 401, "unauthorized")
	e.want(e.do("PUT", "/v1/rooms/sale", "wrong", `{"capacity": 5}`), 401, "unauthorized")
	e.want(e.do("PUT", "/v1/rooms/sale", adminKey, `{"capacity": 5`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/rooms/sale", adminKey, `{}`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/rooms/sale", adminKey, `{"capacity": 5, "colour": "red"}`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/rooms/bad%20id", adminKey, `{"capacity": 5}`), 400, "invalid_room_id")
	e.want(e.do("PUT", "/v1/rooms/sale", adminKey, strings.Repeat(" ", 70<<10)), 413, "body_too_large")
	r := e.do("PUT", "/v1/rooms/sale", adminKey, `{"capacity": 5, "rate": {"admits": 2, "per": "1s"}, "session_ttl": "5m"}`)
	e.want(r, 200, "")
	if r.num("capacity") != 5 || r.str("session_ttl") != "5m0s" || r.str("grace") != "1m0s" {
		t.Fatalf("PUT echoed %v", r.body)
	}
	e.join("sale", "")
	r = e.do("GET", "/v1/rooms/sale", adminKey, "")
	e.want(r, 200, "")
	stats := r.body["stats"].(map[string]any)
	if stats["waiting"].(float64) != 1 || stats["active"].(float64) != 0 {
		t.Fatalf("stats %v", stats)
	}
	e.want(e.do("GET", "/v1/rooms/nope", adminKey, ""), 404, "room_not_found")
	e.want(e.do("GET", "/v1/rooms/sale", "", ""), 401, "unauthorized")
	e.want(e.do("DELETE", "/v1/rooms/sale", adminKey, ""), 200, "")
	e.want(e.do("DELETE", "/v1/rooms/sale", adminKey, ""), 404, "room_not_found")
	e.want(e.do("GET", "/v1/nothing", "", ""), 404, "not_found")
	r = e.do("GET", "/v1/rooms/sale/join", "", "")
	e.want(r, 405, "method_not_allowed")
	if r.header.Get("Allow") != "POST" {
		t.Fatalf("Allow = %q", r.header.Get("Allow"))
	}
}

func TestJoinStatusAdmitRelease(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1, "session_ttl": "10m"}`)
	e.want(e.do("POST", "/v1/rooms/nope/join", "", ""), 404, "room_not_found")
	a := e.join("sale", "")
	b := e.join("sale", "")
	tokA, tokB := a.str("visitor_token"), b.str("visitor_token")
	if tokA == "" || tokA == tokB || a.num("position") != 1 || b.num("position") != 2 || a.str("state") != "waiting" {
		t.Fatalf("joins: %v / %v", a.body, b.body)
	}
	if _, ok := b.body["eta_seconds"]; !ok {
		t.Fatal("join without eta_seconds")
	}
	if again := e.join("sale", tokB); again.num("position") != 2 || again.str("visitor_token") != tokB {
		t.Fatalf("rejoin: %v", again.body)
	}
	e.want(e.do("GET", "/v1/rooms/sale/status", "", ""), 401, "visitor_token_required")
	e.want(e.do("GET", "/v1/rooms/sale/status", "v1.v_forged.sig", ""), 401, "invalid_visitor_token")
	e.want(e.do("POST", "/v1/rooms/sale/join", "v1.v_forged.sig", ""), 401, "invalid_visitor_token")

	e.tick("sale")
	st := e.do("GET", "/v1/rooms/sale/status", tokA, "")
	e.want(st, 200, "")
	adm := st.str("admission_token")
	if st.str("state") != "admitted" || adm == "" || st.str("expires_at") == "" {
		t.Fatalf("admitted status: %v", st.body)
	}
	if again := e.do("GET", "/v1/rooms/sale/status", tokA, ""); again.str("admission_token") != adm {
		t.Fatal("polling an admission minted a different token")
	}
	// The protected site verifies offline with the published keys.
	keys := e.do("GET", "/v1/keys", "", "")
	raw, _ := json.Marshal(keys.body)
	pub, err := admission.ParseKeySet(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := admission.NewVerifier(pub).WithClock(e.clock.Now).Verify(context.Background(), adm, "sale")
	if err != nil || c.Room != "sale" {
		t.Fatalf("offline verify: %+v, %v", c, err)
	}
	v := e.do("POST", "/v1/verify", "", `{"token": "`+adm+`"}`)
	if v.body["valid"] != true || v.str("room") != "sale" || v.str("visitor") != c.Subject || v.str("expires_at") == "" {
		t.Fatalf("verify: %v", v.body)
	}
	if v := e.do("POST", "/v1/verify", "", `{"token": "`+adm+`", "room": "other"}`); v.body["valid"] != false || v.str("reason") != "wrong_room" {
		t.Fatalf("verify wrong room: %v", v.body)
	}
	if v := e.do("POST", "/v1/verify", "", `{"token": "x.y.z"}`); v.body["valid"] != false || v.str("reason") != "malformed" {
		t.Fatalf("verify garbage: %v", v.body)
	}
	e.want(e.do("POST", "/v1/verify", "", `{"token": 5}`), 400, "invalid_json")
	e.want(e.do("POST", "/v1/verify", "", `{}`), 400, "invalid_request")

	// The site's backend releases with the admission token; b is admitted next.
	e.want(e.do("POST", "/v1/rooms/sale/release", "", `{"admission_token": "forged"}`), 401, "invalid_admission_token")
	e.want(e.do("POST", "/v1/rooms/other/release", "", `{"admission_token": "`+adm+`"}`), 401, "invalid_admission_token")
	e.want(e.do("POST", "/v1/rooms/sale/release", "", `{"admission_token": "`+adm+`"}`), 200, "")
	e.want(e.do("POST", "/v1/rooms/sale/release", "", `{"admission_token": "`+adm+`"}`), 409, "not_admitted")
	if v := e.do("POST", "/v1/verify", "", `{"token": "`+adm+`"}`); v.str("reason") != "released" {
		t.Fatalf("verify after release: %v", v.body)
	}
	e.want(e.do("POST", "/v1/rooms/sale/release", tokB, ""), 409, "not_admitted")
	e.tick("sale")
	if st := e.do("GET", "/v1/rooms/sale/status", tokB, ""); st.str("state") != "admitted" {
		t.Fatalf("b after release: %v", st.body)
	}
	e.want(e.do("POST", "/v1/rooms/sale/release", tokB, ""), 200, "")
	if st := e.do("GET", "/v1/rooms/sale/status", tokA, ""); st.str("state") != "none" {
		t.Fatalf("a after release: %v", st.body)
	}
}

// TestKeyRotation rotates the signing keys under an admitted visitor: the new key is published at once
// and signs only after keyring.PublishAhead, and the token signed before still verifies.
func TestKeyRotation(t *testing.T) {
	e := setup(t)
	tok, before := e.admitOne("sale", `{"capacity": 1, "session_ttl": "1h"}`)
	oldKid := kidOf(t, before)

	e.want(e.do("POST", "/v1/keys/rotate", "", ""), 401, "unauthorized")
	e.want(e.do("POST", "/v1/keys/rotate", "wrong", ""), 401, "unauthorized")
	r := e.do("POST", "/v1/keys/rotate", adminKey, "")
	e.want(r, 200, "")
	newKid := r.str("kid")
	if want := e.clock.Now().Add(keyring.PublishAhead).UTC().Format(time.RFC3339); r.str("signs_from") != want || newKid == "" || newKid == oldKid {
		t.Fatalf("rotate answered %v; want a new kid signing from %s", r.body, want)
	}
	keys := e.do("GET", "/v1/keys", "", "")
	if got := published(t, keys); !slices.Equal(got, []string{newKid, oldKid}) {
		t.Fatalf("published keys %v, want %v", got, []string{newKid, oldKid})
	}
	if cc := keys.header.Get("Cache-Control"); cc != "public, max-age=60" {
		t.Fatalf("keys Cache-Control %q", cc)
	}

	if again := e.do("GET", "/v1/rooms/sale/status", tok, "").str("admission_token"); again != before {
		t.Fatal("the new key signed before its time")
	}
	e.clock.Advance(keyring.PublishAhead)
	after := e.do("GET", "/v1/rooms/sale/status", tok, "").str("admission_token")
	if kidOf(t, after) != newKid {
		t.Fatalf("after %v the token is signed by %s, want %s", keyring.PublishAhead, kidOf(t, after), newKid)
	}
	for _, adm := range []string{before, after} {
		if v := e.do("POST", "/v1/verify", "", `{"token": "`+adm+`", "room": "sale"}`); v.body["valid"] != true {
			t.Fatalf("verify %s-signed token after rotation: %v", kidOf(t, adm), v.body)
		}
	}
	e.want(e.do("POST", "/v1/rooms/sale/release", "", `{"admission_token": "`+before+`"}`), 200, "")
}

// kidOf returns the key id in a token's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(token, &admission.Claims{})
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	kid, _ := parsed.Header["kid"].(string)
	return kid
}

// published returns the key ids of a GET /v1/keys answer, in its order.
func published(t *testing.T, r resp) []string {
	t.Helper()
	var out []string
	list, _ := r.body["keys"].([]any)
	for _, k := range list {
		m, _ := k.(map[string]any)
		kid, _ := m["kid"].(string)
		out = append(out, kid)
	}
	return out
}

func TestExpiredAdmissionToken(t *testing.T) {
	e := setup(t)
	tok, adm := e.admitOne("sale", `{"capacity": 1, "session_ttl": "1m"}`)
	e.clock.Advance(time.Minute)
	if v := e.do("POST", "/v1/verify", "", `{"token": "`+adm+`"}`); v.str("reason") != "expired" {
		t.Fatalf("verify after expiry: %v", v.body)
	}
	if st := e.do("GET", "/v1/rooms/sale/status", tok, ""); st.str("state") != "none" {
		t.Fatalf("status after expiry: %v", st.body)
	}
}

func TestCookieIdentity(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1}`)
	res, err := e.srv.Client().Post(e.srv.URL+"/v1/rooms/sale/join", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == httpapi.VisitorCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly {
		t.Fatalf("no HttpOnly %s cookie: %v", httpapi.VisitorCookie, res.Cookies())
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/sale/status", nil)
	req.AddCookie(cookie)
	res, err = e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if body["state"] != "waiting" || body["position"].(float64) != 1 {
		t.Fatalf("status by cookie: %v", body)
	}
}

func TestLeaveAndOneRoom(t *testing.T) {
	e := setup(t)
	e.putRoom("x", `{"capacity": 1, "paused": true}`)
	e.putRoom("y", `{"capacity": 1, "paused": true}`)
	tok := e.join("x", "").str("visitor_token")
	// Joining another room does not give up the place by itself: it names the room waited in...
	r := e.do("POST", "/v1/rooms/y/join", tok, "")
	e.want(r, 409, "waiting_elsewhere")
	if room, _ := r.body["error"].(map[string]any)["room"].(string); room != "x" {
		t.Fatalf("waiting_elsewhere names %q, want x", room)
	}
	if st := e.do("GET", "/v1/rooms/x/status", tok, ""); st.str("state") != "waiting" {
		t.Fatalf("a refused join moved the visitor out of x: %v", st.body)
	}
	e.want(e.do("POST", "/v1/rooms/y/join", tok, `{"switch": "yes"}`), 400, "invalid_json")
	// ...and moves only when asked to.
	e.want(e.do("POST", "/v1/rooms/y/join", tok, `{"switch": true}`), 200, "")
	if st := e.do("GET", "/v1/rooms/x/status", tok, ""); st.str("state") != "none" {
		t.Fatalf("still in x after switching to y: %v", st.body)
	}
	e.want(e.do("POST", "/v1/rooms/y/leave", tok, ""), 200, "")
	if st := e.do("GET", "/v1/rooms/y/status", tok, ""); st.str("state") != "none" {
		t.Fatalf("after leave: %v", st.body)
	}
	e.want(e.do("POST", "/v1/rooms/y/leave", "", ""), 401, "visitor_token_required")
}

// entrants records what joins tell the store about their visitors.
type entrants struct {
	room.Store
	mu   sync.Mutex
	seen []room.Entrant
}

func (s *entrants) Join(ctx context.Context, id string, e room.Entrant) (room.Status, error) {
	s.mu.Lock()
	s.seen = append(s.seen, e)
	s.mu.Unlock()
	return s.Store.Join(ctx, id, e)
}

// TestJoinNamesOrigin checks what a join tells the store: a visitor without a token is new and its
// origin is the room it joins (its token says so from then on), and a subject's token names no origin.
func TestJoinNamesOrigin(t *testing.T) {
	rec := &entrants{}
	e := setup(t, func(_ *httpapi.Config, s *room.Store) { rec.Store = *s; *s = rec })
	e.putRoom("x", `{"capacity": 1, "paused": true}`)
	e.putRoom("y", `{"capacity": 1, "paused": true}`)
	first := e.join("x", "")
	tok := first.str("visitor_token")
	e.want(e.do("POST", "/v1/rooms/y/join", tok, `{"switch": true}`), 200, "")
	e.want(e.do("POST", "/v1/rooms/x/join", tok, `{"switch": true}`), 200, "")
	subject := e.do("POST", "/v1/visitors", adminKey, `{"subject": "user-1"}`)
	e.join("y", subject.str("visitor_token"))
	id, sid := rec.seen[0].Visitor, subject.str("visitor_id")
	want := []room.Entrant{{Visitor: id, Origin: "x", New: true}, {Visitor: id, Origin: "x", Switch: true}, {Visitor: id, Origin: "x", Switch: true}, {Visitor: sid}}
	if !slices.Equal(rec.seen, want) || id == "" {
		t.Fatalf("joins told the store %+v, want %+v", rec.seen, want)
	}
	if st := e.do("GET", "/v1/rooms/y/status", tok, ""); st.str("state") != "none" {
		t.Fatalf("still in y after joining x again: %v", st.body)
	}
}

func TestMintVisitor(t *testing.T) {
	e := setup(t)
	e.want(e.do("POST", "/v1/visitors", "", `{"subject": "user-123"}`), 401, "unauthorized")
	e.want(e.do("POST", "/v1/visitors", adminKey, `{}`), 400, "invalid_request")
	e.want(e.do("POST", "/v1/visitors", adminKey, `{"subject": 7}`), 400, "invalid_json")
	a := e.do("POST", "/v1/visitors", adminKey, `{"subject": "user-123"}`)
	e.want(a, 201, "")
	b := e.do("POST", "/v1/visitors", adminKey, `{"subject": "user-123"}`)
	if a.str("visitor_id") != b.str("visitor_id") || a.str("visitor_token") == "" {
		t.Fatalf("mint not stable: %v vs %v", a.body, b.body)
	}
	e.putRoom("sale", `{"capacity": 1, "paused": true}`)
	e.join("sale", a.str("visitor_token"))
	if st := e.join("sale", b.str("visitor_token")); st.num("position") != 1 {
		t.Fatalf("the same user got a second place: %v", st.body)
	}
}

func TestRateLimitedNewVisitors(t *testing.T) {
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.NewVisitorsPerMinute = 2 })
	e.putRoom("sale", `{"capacity": 1}`)
	tok := e.join("sale", "").str("visitor_token")
	e.join("sale", "")
	r := e.do("POST", "/v1/rooms/sale/join", "", "")
	e.want(r, 429, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	e.join("sale", tok) // known visitors are not limited
}

// downStore fails every call as an unreachable backend would.
type downStore struct{ room.Store }

func (downStore) Ping(context.Context) error { return rushgate.ErrUnavailable }
func (downStore) Join(context.Context, string, room.Entrant) (room.Status, error) {
	return room.Status{}, rushgate.ErrUnavailable
}

func TestStoreUnavailable(t *testing.T) {
	e := setup(t, func(_ *httpapi.Config, s *room.Store) { *s = downStore{*s} })
	e.putRoom("sale", `{"capacity": 1}`)
	r := e.do("POST", "/v1/rooms/sale/join", "", "")
	e.want(r, 503, "store_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if h := e.do("GET", "/healthz", "", ""); h.code != 503 || h.str("status") != "unavailable" {
		t.Fatalf("healthz: %d %v", h.code, h.body)
	}
}

// TestHealthSaysHowTheStoreFares: /healthz tells a store that is down from one that answers but refuses
// writes (503 all the same, since no join, claim or bid goes through), from replicas that do not
// confirm claims and bids in time (200 degraded: joins go on), and from a Redis Cluster with one master
// down (200 degraded: the rooms, drops and auctions of the others go on, and every instance sees it
// alike, so a 503 would take the working part out of a load balancer too). Only the admin reads which
// masters.
func TestHealthSaysHowTheStoreFares(t *testing.T) {
	for _, c := range []struct {
		err                  error
		code                 int
		status, store, admin string
	}{
		{rushgate.ErrUnavailable, 503, "unavailable", "unreachable", ""},
		{rushgate.ErrWritesRefused, 503, "unavailable", "refuses writes", ""},
		{fmt.Errorf("%w (0 of 1 replicas)", rushgate.ErrUnconfirmed), 200, "degraded", "replicas behind", ""},
		{fmt.Errorf("%w: 1 of 3 masters: 10.0.0.7:6379: connection refused", rushgate.ErrPartlyUnavailable),
			200, "degraded", "partly unreachable", "1 of 3 masters: 10.0.0.7:6379: connection refused"},
	} {
		var fails atomic.Pointer[error]
		fails.Store(&c.err)
		e := setup(t, func(_ *httpapi.Config, s *room.Store) { *s = switchStore{*s, &fails} })
		if h := e.do("GET", "/healthz", "", ""); h.code != c.code || h.str("status") != c.status || h.str("store") != c.store || h.body["reason"] != nil {
			t.Errorf("healthz with the store saying %v: %d %v; want %d, %s, %s, no reason", c.err, h.code, h.body, c.code, c.status, c.store)
		}
		if h := e.do("GET", "/healthz", adminKey, ""); c.admin != "" && h.str("reason") != c.admin {
			t.Errorf("healthz for the admin with the store saying %v: %d %v; want the reason %q", c.err, h.code, h.body, c.admin)
		}
	}
}

func TestHealthAndMetrics(t *testing.T) {
	e := setup(t)
	if h := e.do("GET", "/healthz", "", ""); h.code != 200 || h.str("status") != "ok" {
		t.Fatalf("healthz: %v", h.body)
	}
	e.putRoom("sale", `{"capacity": 1}`)
	e.join("sale", "")
	e.join("sale", "")
	e.tick("sale")
	// Drops and auctions, whichever instance took their claims and bids.
	e.want(e.do("PUT", "/v1/drops/gift", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/drops/later", adminKey, fmt.Sprintf(`{"stock": 5, "opens_at": %q}`, e.clock.Now().Add(time.Hour).Format(time.RFC3339))), 200, "")
	e.want(e.do("POST", "/v1/drops/gift/claims", e.visitorToken("a"), ""), 201, "")
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("b"), `{"amount": 1500}`), 201, "")
	lot := e.do("GET", "/v1/auctions/lot", "", "")
	endsAt, _ := time.Parse(time.RFC3339Nano, lot.str("ends_at"))
	// Metrics name every room with live counts: only the admin reads them here (--metrics-addr serves
	// them without the key on a private listener).
	e.want(e.do("GET", "/metrics", "", ""), 401, "unauthorized")
	ctx := context.Background()
	sample := func(d time.Duration) { // the services' samplers, which the sales' figures come from
		e.clock.Advance(d)
		e.drops.Sample(ctx)
		e.auctions.Sample(ctx)
	}
	sample(0)
	data := e.metrics()
	for _, want := range []string{
		`rushgate_room_waiting{room="sale"} 1`, `rushgate_room_active{room="sale"} 1`,
		`rushgate_room_joins_total{room="sale"} 2`, `rushgate_room_admitted_total{room="sale"} 1`,
		`rushgate_http_request_duration_seconds_count{code="200",route="POST /v1/rooms/{room}/join"} 2`,
		`rushgate_drop_claimed{drop="gift"} 1`, `rushgate_drop_remaining{drop="gift"} 1`, `rushgate_drop_open{drop="gift"} 1`,
		`rushgate_drop_claimed{drop="later"} 0`, `rushgate_drop_remaining{drop="later"} 5`, `rushgate_drop_open{drop="later"} 0`,
		`rushgate_auction_bids{auction="lot"} 1`, fmt.Sprintf(`rushgate_auction_price{auction="lot",currency="EUR"} %d`, lot.num("price")),
		`rushgate_auction_open{auction="lot"} 1`, `rushgate_auction_ends_at_seconds{auction="lot"} ` + strconv.FormatFloat(float64(endsAt.Unix()), 'g', -1, 64),
	} {
		if !strings.Contains(data, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// A sale over for an hour leaves the metrics (its past stays in Prometheus), one deleted at once;
	// the others stay, whatever their state.
	e.want(e.do("POST", "/v1/drops/gift/close", adminKey, ""), 200, "")
	e.want(e.do("PUT", "/v1/drops/gone", adminKey, e.dropCfg("")), 200, "")
	sample(10 * time.Second) // the first read that finds gift over
	if data := e.metrics(); !strings.Contains(data, `rushgate_drop_open{drop="gift"} 0`) || !strings.Contains(data, `rushgate_drop_remaining{drop="gone"} 2`) {
		t.Fatalf("after gift closed and gone was created:\n%s", grepLines(data, "rushgate_drop_"))
	}
	e.want(e.do("DELETE", "/v1/drops/gone", adminKey, ""), 200, "")
	for range 61 {
		sample(time.Minute)
	}
	data = e.metrics()
	if strings.Contains(data, `drop="gift"`) || strings.Contains(data, `drop="gone"`) || !strings.Contains(data, `rushgate_drop_open{drop="later"} 1`) {
		t.Errorf("an hour later, the drops' metrics:\n%s", grepLines(data, "rushgate_drop_"))
	}
	// A deleted room's series go too, its counts of joins and admissions with it.
	e.want(e.do("DELETE", "/v1/rooms/sale", adminKey, ""), 200, "")
	if data := e.metrics(); strings.Contains(data, `room="sale"`) {
		t.Errorf("after the room's deletion:\n%s", grepLines(data, "rushgate_room_"))
	}
}

// metrics scrapes the metrics as the admin.
func (e *env) metrics() string {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return string(data)
}

// grepLines returns the lines of text that start with prefix.
func grepLines(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// failingRecord is a durable record that fails every write, as a full disk or a stopped database does.
type failingRecord struct{}

func (failingRecord) Check(context.Context) error { return errors.New("record: disk full") }

// TestHealthReportsTheRecord: a record that fails writes makes /healthz answer 503 where claims and
// bids wait for it (the embedded backend), and 200 "degraded" where an outbox keeps them until it is
// back (Redis): every instance shares that record, and a 503 would take them all out of rotation. Only
// the admin reads why it fails.
func TestHealthReportsTheRecord(t *testing.T) {
	for _, c := range []struct {
		outbox bool
		code   int
		status string
	}{{false, 503, "unavailable"}, {true, 200, "degraded"}} {
		e := setup(t, func(cfg *httpapi.Config, _ *room.Store) {
			cfg.Record, cfg.Outbox = failingRecord{}, c.outbox
			if c.outbox {
				cfg.Backlog = func(context.Context) (int64, int64, error) { return 7, 3, nil }
			}
		})
		// The reason, a driver's message, is the operator's: anyone else learns what fails, not why.
		h := e.do("GET", "/healthz", "", "")
		if h.code != c.code || h.str("status") != c.status || h.str("record") != "failing writes" || h.body["reason"] != nil || h.body["waiting"] != nil {
			t.Errorf("outbox %v: healthz %d %v; want %d %q without a reason", c.outbox, h.code, h.body, c.code, c.status)
		}
		if h := e.do("GET", "/healthz", adminKey, ""); h.code != c.code || !strings.Contains(h.str("reason"), "disk full") {
			t.Errorf("outbox %v: healthz for the admin %d %v; want %d with the record's reason", c.outbox, h.code, h.body, c.code)
		} else if waiting := fmt.Sprint(h.body["waiting"]); c.outbox != (waiting == "map[claims:7 events:3]") {
			t.Errorf("outbox %v: the admin is told %s waits", c.outbox, waiting)
		}
	}
}

// TestHealthSaysRedisMayEvict: while a node of the state store may evict keys once full, /healthz
// answers 200 "degraded" (everything works until Redis fills up), naming the nodes to the admin only.
func TestHealthSaysRedisMayEvict(t *testing.T) {
	var nodes atomic.Pointer[[]string]
	nodes.Store(&[]string{"10.0.0.7:6379 (allkeys-lru)"})
	e := setup(t, func(cfg *httpapi.Config, _ *room.Store) { cfg.Evicting = func() []string { return *nodes.Load() } })
	h := e.do("GET", "/healthz", "", "")
	if h.code != 200 || h.str("status") != "degraded" || h.str("store") != "may evict keys" || h.body["reason"] != nil {
		t.Fatalf("healthz %d %v; want 200 degraded, may evict keys, no reason", h.code, h.body)
	}
	if h := e.do("GET", "/healthz", adminKey, ""); h.str("reason") != "maxmemory-policy: 10.0.0.7:6379 (allkeys-lru)" {
		t.Fatalf("healthz for the admin %v", h.body)
	}
	nodes.Store(&[]string{})
	if h := e.do("GET", "/healthz", "", ""); h.code != 200 || h.str("status") != "ok" || len(h.body) != 1 {
		t.Fatalf("healthz under noeviction %d %v", h.code, h.body)
	}
}

// TestHealthNamesMastersWithoutAOF: masters that keep no append-only file are named to the admin, and
// so to the console, while /healthz stays "ok" (many run so on purpose, relying on replicas) and tells
// a load balancer nothing of them.
func TestHealthNamesMastersWithoutAOF(t *testing.T) {
	var masters, evicting atomic.Pointer[[]string]
	masters.Store(&[]string{"10.0.0.7:6379", "10.0.0.8:6379"})
	evicting.Store(&[]string{})
	e := setup(t, func(cfg *httpapi.Config, _ *room.Store) {
		cfg.Unlogged = func() []string { return *masters.Load() }
		cfg.Evicting = func() []string { return *evicting.Load() }
	})
	if h := e.do("GET", "/healthz", "", ""); h.code != 200 || h.str("status") != "ok" || len(h.body) != 1 {
		t.Fatalf("healthz %d %v; want 200 ok and nothing else", h.code, h.body)
	}
	named := func(h resp) bool {
		got, _ := h.body["unlogged"].([]any)
		return len(got) == 2 && got[0] == "10.0.0.7:6379" && got[1] == "10.0.0.8:6379"
	}
	if h := e.do("GET", "/healthz", adminKey, ""); h.code != 200 || h.str("status") != "ok" || !named(h) {
		t.Fatalf("healthz for the admin %d %v; want ok, naming both masters", h.code, h.body)
	}
	evicting.Store(&[]string{"10.0.0.7:6379 (allkeys-lru)"})
	if h := e.do("GET", "/healthz", adminKey, ""); h.str("status") != "degraded" || h.str("store") != "may evict keys" || !named(h) {
		t.Fatalf("healthz for the admin, a node evicting too: %v", h.body)
	}
	evicting.Store(&[]string{})
	masters.Store(&[]string{})
	if h := e.do("GET", "/healthz", adminKey, ""); h.str("status") != "ok" || h.body["unlogged"] != nil {
		t.Fatalf("healthz for the admin with every master keeping its file: %v", h.body)
	}
}

// stream reads SSE status events from the events endpoint.
type stream struct {
	events chan map[string]any
	cancel context.CancelFunc
}

func (e *env) stream(id, tok string) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/rooms/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		e.t.Fatalf("events: %d %s", res.StatusCode, ct)
	}
	s := &stream{events: make(chan map[string]any, 16), cancel: cancel}
	go func() {
		defer close(s.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				_ = json.Unmarshal([]byte(data), &m)
				s.events <- m
			}
		}
	}()
	e.t.Cleanup(cancel)
	return s
}

func (s *stream) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-s.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}

// TestRejoinWakesItsStream: a visitor who leaves and joins again while an event stream of its is still
// open (a page that just closed it, which the server notices only at its next write; another tab) is
// told it waits again. The stream read "not in line" at the leave and went on saying so: the page then
// showed "your place has lapsed" to a visitor in line.
func TestRejoinWakesItsStream(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1, "paused": true}`)
	e.join("sale", "")
	v := e.join("sale", "").str("visitor_token")
	s := e.stream("sale", v)
	if m := s.next(t); m["state"] != "waiting" || m["position"].(float64) != 2 {
		t.Fatalf("first event: %v", m)
	}
	e.want(e.do("POST", "/v1/rooms/sale/leave", v, ""), 200, "")
	if m := s.next(t); m["state"] != "none" {
		t.Fatalf("after leaving: %v", m)
	}
	e.want(e.join("sale", v), 200, "")
	if m := s.next(t); m["state"] != "waiting" || m["position"].(float64) != 2 {
		t.Fatalf("after joining again: %v", m)
	}
}

func TestEvents(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1}`)
	a := e.join("sale", "").str("visitor_token")
	b := e.join("sale", "").str("visitor_token")
	e.want(e.do("GET", "/v1/rooms/sale/events", "", ""), 401, "visitor_token_required")
	e.want(e.do("GET", "/v1/rooms/nope/events", a, ""), 404, "room_not_found")
	sa, sb := e.stream("sale", a), e.stream("sale", b)
	if m := sa.next(t); m["state"] != "waiting" || m["position"].(float64) != 1 {
		t.Fatalf("first event: %v", m)
	}
	if m := sb.next(t); m["position"].(float64) != 2 {
		t.Fatalf("b first event: %v", m)
	}
	e.tick("sale")
	if m := sa.next(t); m["state"] != "admitted" || m["admission_token"] == "" {
		t.Fatalf("admission event: %v", m)
	}
	e.svc.Broadcast("sale") // the pacing loop's room-wide refresh
	if m := sb.next(t); m["position"].(float64) != 1 {
		t.Fatalf("b after a's admission: %v", m)
	}
	e.want(e.do("DELETE", "/v1/rooms/sale", adminKey, ""), 200, "")
	if m := sb.next(t); m["state"] != "none" {
		t.Fatalf("after delete: %v", m)
	}
	if _, ok := <-sb.events; ok {
		t.Fatal("stream continued after its room was deleted")
	}
}

// statusCounter counts the store's status reads per visitor.
type statusCounter struct {
	room.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *statusCounter) Status(ctx context.Context, id, v string) (room.Status, error) {
	c.mu.Lock()
	c.reads[v]++
	c.mu.Unlock()
	return c.Store.Status(ctx, id, v)
}

func (c *statusCounter) count(v string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[v]
}

// TestBroadcastSkipsAdmittedStreams checks that room-wide refreshes re-read waiting visitors only: an
// admitted visitor's view changes only by what is pushed to it personally, and re-reading it meant
// signing its admission token again on every broadcast.
func TestBroadcastSkipsAdmittedStreams(t *testing.T) {
	counter := &statusCounter{reads: map[string]int{}}
	e := setup(t, func(_ *httpapi.Config, s *room.Store) { counter.Store = *s; *s = counter })
	e.putRoom("sale", `{"capacity": 1}`)
	a := e.join("sale", "").str("visitor_token")
	b := e.join("sale", "").str("visitor_token")
	idOf := func(tok string) string { return strings.Split(tok, ".")[1] }
	e.tick("sale")
	sa, sb := e.stream("sale", a), e.stream("sale", b)
	if m := sa.next(t); m["state"] != "admitted" {
		t.Fatalf("a: %v", m)
	}
	if m := sb.next(t); m["state"] != "waiting" {
		t.Fatalf("b: %v", m)
	}
	before, waitingBefore := counter.count(idOf(a)), counter.count(idOf(b))
	for range 5 {
		e.svc.Broadcast("sale")
		time.Sleep(10 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for counter.count(idOf(b)) == waitingBefore && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if counter.count(idOf(b)) == waitingBefore {
		t.Fatal("the waiting visitor's stream did not refresh on a broadcast")
	}
	time.Sleep(50 * time.Millisecond)
	if got := counter.count(idOf(a)); got != before {
		t.Fatalf("the admitted visitor was re-read %d times by broadcasts", got-before)
	}
}

func TestWaitingRoomPage(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 1, "site_url": "https://shop.example.com/"}`)
	get := func(path string) (int, string) {
		res, err := e.srv.Client().Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/r/sale?return_to=" + url.QueryEscape("https://shop.example.com/checkout"))
	if code != 200 || !strings.Contains(body, `data-target="https://shop.example.com/checkout"`) || !strings.Contains(body, `data-events="/v1/rooms/sale/events"`) {
		t.Fatalf("page: %d\n%s", code, body)
	}
	if _, body := get("/r/sale?return_to=" + url.QueryEscape("https://evil.example.com/")); strings.Contains(body, "evil") {
		t.Fatal("page redirects to a foreign origin")
	}
	if code, _ := get("/r/nope"); code != 404 {
		t.Fatalf("unknown room page: %d", code)
	}
}

func jsonDecode(res *http.Response, v any) error { return json.NewDecoder(res.Body).Decode(v) }
