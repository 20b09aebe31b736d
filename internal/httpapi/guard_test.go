package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushgate/rushgate/internal/captcha"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/room"
)

// solve finds a nonce for a challenge answer, as a client in any language would from the README.
func solve(t *testing.T, r resp) string {
	t.Helper()
	tok, _ := r.body["challenge"].(string)
	d, _ := r.body["difficulty"].(float64)
	if tok == "" || r.body["algorithm"] != "sha256" || r.body["expires_at"] == nil {
		t.Fatalf("no challenge in %v", r.body)
	}
	for n := 0; ; n++ {
		if challenge.Solves(tok, strconv.Itoa(n), int(d)) {
			return tok + ":" + strconv.Itoa(n)
		}
	}
}

// joinWith joins with a solution header and an optional visitor token.
func (e *env) joinWith(room, solution, token string) resp {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/rooms/"+room+"/join", nil)
	if solution != "" {
		req.Header.Set("Rushgate-Challenge", solution)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

func TestChallenge(t *testing.T) {
	e := setup(t)
	e.putRoom("pow", `{"capacity": 1, "challenge": {"difficulty": 10}}`)
	e.putRoom("other", `{"capacity": 1, "challenge": {"difficulty": 10}}`)
	e.want(e.do("PUT", "/v1/rooms/bad", adminKey, `{"capacity": 1, "challenge": {"difficulty": 40}}`), 400, "invalid_config")

	first := e.joinWith("pow", "", "")
	e.want(first, 401, "challenge_required")
	if first.body["difficulty"] != 10.0 {
		t.Fatalf("difficulty %v", first.body["difficulty"])
	}
	sol := solve(t, first)
	tok, _, _ := strings.Cut(sol, ":")
	wrong := "0"
	for challenge.Solves(tok, wrong, 10) {
		wrong += "0"
	}
	e.want(e.joinWith("pow", tok+":"+wrong, ""), 401, "challenge_unsolved")
	e.want(e.joinWith("other", sol, ""), 401, "challenge_other_room")
	e.want(e.joinWith("pow", "nonsense:1", ""), 401, "challenge_invalid")

	joined := e.joinWith("pow", sol, "")
	e.want(joined, 200, "")
	e.want(e.joinWith("pow", sol, ""), 401, "challenge_used")

	// The visitor that took a place needs no challenge to come back to it (a reload).
	again := e.joinWith("pow", "", joined.str("visitor_token"))
	if again.code != 200 || again.str("state") == "" {
		t.Fatalf("a reload: %d %v", again.code, again.body)
	}
	// A challenge issued to an address is not the challenge of a known visitor.
	other := e.do("POST", "/v1/visitors", adminKey, `{"subject": "s-9"}`).str("visitor_token")
	e.want(e.joinWith("pow", solve(t, e.joinWith("pow", "", "")), other), 401, "challenge_invalid")
	mine := e.joinWith("pow", "", other)
	e.want(mine, 401, "challenge_required")
	e.want(e.joinWith("pow", solve(t, mine), other), 200, "")

	// One that expires before it is used.
	late := e.joinWith("pow", "", "")
	e.clock.Advance(challenge.TTL + time.Second)
	e.want(e.joinWith("pow", solve(t, late), ""), 401, "challenge_expired")
}

func TestInvites(t *testing.T) {
	secret := []byte("site-enqueue-secret")
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.EnqueueSecret = secret })
	e.putRoom("presale", `{"capacity": 1, "entry": "invite"}`)
	e.want(e.do("POST", "/v1/rooms/presale/invites", "", `{"codes": ["K-1"]}`), 401, "unauthorized")
	if r := e.do("POST", "/v1/rooms/presale/invites", adminKey, `{"codes": ["K-1", "K-2", "K-1"]}`); r.code != 200 || r.body["added"] != 2.0 {
		t.Fatalf("upload: %d %v", r.code, r.body)
	}
	e.want(e.do("POST", "/v1/rooms/presale/invites", adminKey, `{"codes": []}`), 400, "invalid_request")
	invited := func(code, token string) resp {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/rooms/presale/join", nil)
		if code != "" {
			req.Header.Set("Rushgate-Invite", code)
		}
		if token != "" {
			req.Header.Set("Rushgate-Enqueue", token)
		}
		return e.send(req)
	}
	e.want(invited("", ""), 403, "invite_required")
	e.want(invited("nope", ""), 403, "invite_invalid")
	first := invited("K-1", "")
	e.want(first, 200, "")
	e.want(invited("K-1", ""), 403, "invite_invalid") // used once
	// The invited visitor comes back without the code.
	e.want(e.joinWith("presale", "", first.str("visitor_token")), 200, "")

	sign := func(claims jwt.MapClaims, key []byte) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := e.clock.Now().Add(time.Hour).Unix()
	tok := sign(jwt.MapClaims{"sub": "user-77", "room": "presale", "exp": exp}, secret)
	a := invited("", tok)
	e.want(a, 200, "")
	b := invited("", tok) // the same subject: the same one place
	e.want(b, 200, "")
	if a.str("visitor_token") != b.str("visitor_token") {
		t.Fatal("a subject got two visitors")
	}
	stats := e.do("GET", "/v1/rooms/presale", adminKey, "").body["stats"].(map[string]any)
	if stats["joined_total"] != 2.0 {
		t.Fatalf("places: %v, want one by code and one by token", stats)
	}
	for name, bad := range map[string]string{
		"other room":   sign(jwt.MapClaims{"sub": "u", "room": "other", "exp": exp}, secret),
		"other secret": sign(jwt.MapClaims{"sub": "u", "room": "presale", "exp": exp}, []byte("guess")),
		"expired":      sign(jwt.MapClaims{"sub": "u", "room": "presale", "exp": e.clock.Now().Add(-time.Minute).Unix()}, secret),
		"no expiry":    sign(jwt.MapClaims{"sub": "u", "room": "presale"}, secret),
		"garbage":      "x.y.z",
	} {
		if r := invited("", bad); r.code != 401 || r.errCode() != "invalid_enqueue_token" {
			t.Errorf("%s: %d %v", name, r.code, r.body)
		}
	}
}

// TestEnqueueTokensForDropsAndAuctions: the site's enqueue token, naming a drop or an auction instead
// of a room, makes a claim or a bid the account's, whatever visitor the browser held, and sets the
// account's visitor as the cookie; it serves only the drop or auction it names.
func TestEnqueueTokensForDropsAndAuctions(t *testing.T) {
	secret := []byte("site-enqueue-secret")
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.EnqueueSecret = secret })
	e.want(e.do("PUT", "/v1/drops/members", adminKey, e.dropCfg(`, "identity": "site"`)), 200, "")
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, fmt.Sprintf(`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": 10,
		"identity": "site", "starts_at": %q, "ends_at": %q}`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))), 200, "")
	sign := func(claims jwt.MapClaims) string {
		claims["exp"] = now.Add(time.Hour).Unix()
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	vouched := func(method, path, token, body string) resp {
		t.Helper()
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Rushgate-Enqueue", token)
		req.AddCookie(&http.Cookie{Name: httpapi.VisitorCookie, Value: e.do("POST", "/v1/rooms/anyroom/join", "", "").str("visitor_token")})
		return e.send(req)
	}
	e.putRoom("anyroom", `{"capacity": 100}`)
	forDrop := sign(jwt.MapClaims{"sub": "user-77", "drop": "members"})
	c := vouched("POST", "/v1/drops/members/claims", forDrop, "")
	e.want(c, 201, "")
	cookie := c.header.Get("Set-Cookie")
	account := e.visitorToken("user-77")
	if !strings.Contains(cookie, httpapi.VisitorCookie+"="+account+";") {
		t.Fatalf("the cookie after a vouched claim: %q, want the account's visitor", cookie)
	}
	// The same account again, from another browser: its one claim is taken.
	e.want(vouched("POST", "/v1/drops/members/claims", forDrop, ""), 409, "already_claimed")
	e.want(vouched("POST", "/v1/auctions/lot/bids", sign(jwt.MapClaims{"sub": "user-77", "auction": "lot"}), `{"amount": 100}`), 201, "")
	if leader := e.do("GET", "/v1/auctions/lot", "", "").body["leader"]; leader == nil || leader == "" {
		t.Fatalf("the vouched bid leads nobody: %v", leader)
	}
	for name, bad := range map[string]struct{ path, token, body string }{
		"a room's token on a drop":     {"/v1/drops/members/claims", sign(jwt.MapClaims{"sub": "u", "room": "members"}), ""},
		"another drop's token":         {"/v1/drops/members/claims", sign(jwt.MapClaims{"sub": "u", "drop": "other"}), ""},
		"a drop's token on an auction": {"/v1/auctions/lot/bids", forDrop, `{"amount": 200}`},
		"a drop's token on buy-now":    {"/v1/auctions/lot/buy-now", forDrop, `{}`},
		"an auction's token on a drop": {"/v1/drops/members/claims", sign(jwt.MapClaims{"sub": "u", "auction": "lot"}), ""},
		"a token without an account":   {"/v1/drops/members/claims", sign(jwt.MapClaims{"drop": "members"}), ""},
	} {
		if r := vouched("POST", bad.path, bad.token, bad.body); r.code != 401 || r.errCode() != "invalid_enqueue_token" {
			t.Errorf("%s: %d %v", name, r.code, r.body)
		}
	}
}

// TestCaptcha joins a room with captcha through a local server that speaks siteverify, as Turnstile and
// hCaptcha do.
func TestCaptcha(t *testing.T) {
	var asked atomic.Int64
	verify := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		_ = r.ParseForm()
		ok := r.PostForm.Get("secret") == "site-secret" && r.PostForm.Get("response") == "good-answer" && r.PostForm.Get("remoteip") != ""
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"success": ok})
	}))
	defer verify.Close()
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.Captcha = captcha.New(verify.URL, "site-secret", nil) })
	e.putRoom("human", `{"capacity": 1, "captcha": true}`)
	answer := func(a string) resp {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/rooms/human/join", nil)
		if a != "" {
			req.Header.Set("Rushgate-Captcha", a)
		}
		return e.send(req)
	}
	e.want(answer(""), 401, "captcha_required")
	e.want(answer("bot-answer"), 401, "captcha_failed")
	ok := answer("good-answer")
	e.want(ok, 200, "")
	e.want(e.joinWith("human", "", ok.str("visitor_token")), 200, "") // its place: no second answer asked
	if asked.Load() != 2 {
		t.Fatalf("the service was asked %d times, want 2", asked.Load())
	}
	verify.Close()
	e.want(answer("good-answer"), 503, "captcha_unavailable")
}
