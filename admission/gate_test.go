package admission

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestGateRedirectStaysOnSite: after adopting a token from the query, the Gate redirects to a path on
// its own site, whatever the request path looked like; "//evil.example/x" once became a Location that
// browsers read as another host, reachable through the waiting room's return_to.
func TestGateRedirectStaysOnSite(t *testing.T) {
	tok := mustSign(t, "k1", seed1, claims("sale", time.Now().Add(time.Hour)))
	for _, path := range []string{
		"//evil.example/x", "///evil.example/x", "/\\evil.example/x", "/\\/evil.example", "//\\evil.example",
		"/%2F%2Fevil.example", "/%5Cevil.example", "/shop/checkout", "/",
	} {
		if !redirectStaysOnSite(t, gateOnSite(), path, tok) {
			t.Fatalf("%s: refused as a request line", path)
		}
	}
}

// FuzzGateRedirect: whatever a request's path and query, the Gate's redirect after adopting a token
// is a path on its own site, without the token and with the rest of the query.
func FuzzGateRedirect(f *testing.F) {
	for _, s := range []string{"//evil.example/x", "/\\evil.example", "/%2F%2Fevil.example", "/a/../..//b", "/\t/x", "/x#frag"} {
		f.Add(s, "a=1&b")
	}
	tok := mustSign(f, "k1", seed1, claims("sale", time.Now().Add(time.Hour)))
	h := gateOnSite()
	f.Fuzz(func(t *testing.T, path, query string) {
		if strings.ContainsAny(path, "?#") || strings.ContainsAny(query, "#") || strings.Contains(query, "rg_") {
			return // not one path and one query, or one that names the test's own parameters
		}
		redirectStaysOnSite(t, h, path+"?"+query+"&", tok)
	})
}

func gateOnSite() http.Handler {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale"}
	return g.Wrap(http.NotFoundHandler())
}

// redirectStaysOnSite sends h the request line target with rg_keep=1 and the token added to its query and
// checks the redirect; it reports false for a target net/http would refuse as a request line.
func redirectStaysOnSite(t *testing.T, h http.Handler, target, tok string) bool {
	t.Helper()
	if !strings.Contains(target, "?") {
		target += "?"
	}
	u, err := url.ParseRequestURI(target + "rg_keep=1&rg_admission=" + tok)
	if err != nil || !strings.HasPrefix(target, "/") {
		return false
	}
	req := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	req.URL = u // as net/http parses a request line, not an absolute URL
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("%s: %d, want 303", target, rec.Code)
	}
	back, err := url.Parse(loc)
	if err != nil || back.Host != "" || back.Scheme != "" || !strings.HasPrefix(loc, "/") ||
		strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") || strings.Contains(loc, "rg_admission") ||
		strings.ContainsAny(loc, "\t\r\n") {
		t.Fatalf("%s: Location %q leaves the site or keeps the token", target, loc)
	}
	if back.Query().Get("rg_keep") != "1" {
		t.Fatalf("%s: Location %q lost the query", target, loc)
	}
	// As a browser resolves it: on the site still.
	if abs, err := url.Parse("https://shop.example/x"); err != nil || abs.ResolveReference(back).Host != "shop.example" {
		t.Fatalf("%s: Location %q resolves off the site", target, loc)
	}
	return true
}

func TestSitePath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "//a/b": "/a/b", `\/\a`: "/a", "/a//b": "/a//b"} {
		if got := SitePath(in, ""); got != want {
			t.Errorf("SitePath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := SitePath("/a", "x=1"); got != "/a?x=1" {
		t.Errorf("SitePath with a query = %q", got)
	}
}

// TestGateRelease: a site's answer with "Rushgate-Command: release" makes the Gate post the token to
// the room's release endpoint, drop the header and clear the cookie; the revoked admission is refused.
func TestGateRelease(t *testing.T) {
	var got []string
	queue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AdmissionToken string `json:"admission_token"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		got = append(got, r.URL.Path+" "+body.AdmissionToken)
		w.WriteHeader(http.StatusOK)
	}))
	defer queue.Close()
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	revoked := map[string]bool{}
	release := ReleaseVia(queue.URL+"/v1/rooms/sale/release", nil)
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale",
		Release: func(ctx context.Context, tok string) error {
			c, _ := v.VerifySignature(ctx, tok)
			revoked[c.ID] = true
			return release(ctx, tok)
		},
		Revoked: func(id string) bool { return revoked[id] }}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkout" {
			w.Header().Set(CommandHeader, "release")
		}
		_, _ = w.Write([]byte("ok"))
	}))
	c := claims("sale", time.Now().Add(time.Hour))
	c.ID = "adm-1"
	tok := mustSign(t, "k1", seed1, c)
	call := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://shop.example"+path, nil)
		req.AddCookie(&http.Cookie{Name: DefaultCookie, Value: tok})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := call("/cart"); rec.Code != 200 || len(got) != 0 {
		t.Fatalf("an ordinary page: %d, releases %v", rec.Code, got)
	}
	rec := call("/checkout")
	if rec.Code != 200 || rec.Header().Get(CommandHeader) != "" || !strings.Contains(rec.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("checkout: %d %v", rec.Code, rec.Header())
	}
	if len(got) != 1 || got[0] != "/v1/rooms/sale/release "+tok {
		t.Fatalf("releases: %v", got)
	}
	if rec := call("/cart"); rec.Code != http.StatusFound {
		t.Fatalf("the released admission: %d, want the room", rec.Code)
	}
}

// TestGateKeepsALiveAdmission: a link that hands over an admission (anyone may send one) does not
// replace a live one the visitor holds; it is adopted only when the visitor holds none, or one that
// expired or was ended early.
func TestGateKeepsALiveAdmission(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	revoked := map[string]bool{}
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale", Revoked: func(id string) bool { return revoked[id] }}
	h := g.Wrap(http.NotFoundHandler())
	admitted := func(subject, id string, exp time.Time) string {
		c := claims("sale", exp)
		c.Subject, c.ID = subject, id
		return mustSign(t, "k1", seed1, c)
	}
	mine := admitted("v_mine", "e.1", time.Now().Add(time.Hour))
	theirs := admitted("v_theirs", "e.2", time.Now().Add(time.Hour))
	expired := admitted("v_mine", "e.3", time.Now().Add(-time.Minute))
	ended := admitted("v_mine", "e.4", time.Now().Add(time.Hour))
	revoked["e.4"] = true

	for _, c := range []struct {
		name, held, set string
	}{
		{"a live admission", mine, ""},
		{"none", "", theirs},
		{"an expired admission", expired, theirs},
		{"an admission ended early", ended, theirs},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://shop.example/shop?rg_admission="+theirs, nil)
		if c.held != "" {
			req.AddCookie(&http.Cookie{Name: DefaultCookie, Value: c.held})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := ""
		for _, ck := range rec.Result().Cookies() {
			if ck.Name == DefaultCookie {
				got = ck.Value
			}
		}
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/shop" || got != c.set {
			t.Errorf("holding %s: %d to %q, cookie set to %.12q; want 303 to /shop, cookie %.12q",
				c.name, rec.Code, rec.Header().Get("Location"), got, c.set)
		}
	}
}

// TestGateLooksPastTheSitesBearer: a site may use Authorization: Bearer for its own logins; an admitted
// visitor whose requests carry such a header is let through on the admission cookie, with the header
// passed on untouched, rather than sent back to the room.
func TestGateLooksPastTheSitesBearer(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale"}
	var seen string
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Get("Authorization") }))
	adm := mustSign(t, "k1", seed1, claims("sale", time.Now().Add(time.Hour)))
	for _, c := range []struct {
		name, bearer, cookie string
		through              bool
	}{
		{"the site's bearer and an admission cookie", "site-session.abc", adm, true},
		{"an admission as the bearer", adm, "", true},
		{"the site's bearer alone", "site-session.abc", "", false},
	} {
		seen = ""
		req := httptest.NewRequest(http.MethodGet, "http://shop.example/api/cart", nil)
		req.Header.Set("Authorization", "Bearer "+c.bearer)
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: DefaultCookie, Value: c.cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if through := rec.Code == http.StatusOK && seen == "Bearer "+c.bearer; through != c.through {
			t.Errorf("%s: %d, the site saw %q; want through %v", c.name, rec.Code, seen, c.through)
		}
	}
}

// TestGateBehindTLS: with HTTPS set (TLS ends at a balancer in front of the site), the Gate sends
// visitors to the room with an https return_to, so they come back to the page they asked for rather
// than to the site's front page, and the cookie it sets is Secure.
func TestGateBehindTLS(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale", HTTPS: true}
	h := g.Wrap(http.NotFoundHandler())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.example/deep/page?x=1", nil))
	want := "https://queue.example/r/sale?return_to=" + url.QueryEscape("https://shop.example/deep/page?x=1")
	if loc := rec.Header().Get("Location"); loc != want {
		t.Errorf("Location %q, want %q", loc, want)
	}
	tok := mustSign(t, "k1", seed1, claims("sale", time.Now().Add(time.Hour)))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.example/deep/page?rg_admission="+tok, nil))
	if cs := rec.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("the adopted cookie: %v, want one Secure cookie", cs)
	}
}

// TestGateSendsAPostedFormToTheRoom: a form a person posts without a live admission (it ran out during
// checkout) sends them to the room, and back to the page the form was on when that page is on the
// site, instead of showing them JSON; a script's POST still gets 401 not_admitted.
func TestGateSendsAPostedFormToTheRoom(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale"}
	h := g.Wrap(http.NotFoundHandler())
	room := func(back string) string { return "https://queue.example/r/sale?return_to=" + url.QueryEscape(back) }
	for _, c := range []struct {
		name, mode, referer string
		code                int
		location            string
	}{
		{"a form posted from the cart", "navigate", "http://shop.example/cart?step=2", 303, room("http://shop.example/cart?step=2")},
		{"a form posted from elsewhere", "navigate", "https://evil.example/x", 303, room("http://shop.example/")},
		{"a form without a Referer", "navigate", "", 303, room("http://shop.example/")},
		{"a script's POST", "cors", "http://shop.example/cart", 401, ""},
		{"a client that says nothing", "", "", 401, ""},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://shop.example/checkout/pay", strings.NewReader("card=1"))
		if c.mode != "" {
			req.Header.Set("Sec-Fetch-Mode", c.mode)
		}
		if c.referer != "" {
			req.Header.Set("Referer", c.referer)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || rec.Header().Get("Location") != c.location {
			t.Errorf("%s: %d to %q, want %d to %q", c.name, rec.Code, rec.Header().Get("Location"), c.code, c.location)
		}
		if c.code == 401 && !strings.Contains(rec.Body.String(), `"not_admitted"`) {
			t.Errorf("%s: %q", c.name, rec.Body.String())
		}
	}
}

// TestGateReleasesAfterTheRedirect: a checkout's POST answered with a redirect to its thank-you page
// and "Rushgate-Command: release" lets the visitor see that page: the release waits for the redirect's
// request, then happens and clears the cookies, and the visitor's next request goes to the room. A
// redirect off the site releases at once.
func TestGateReleasesAfterTheRedirect(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	revoked := map[string]bool{}
	var released []string
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale",
		Release: func(ctx context.Context, tok string) error {
			c, _ := v.VerifySignature(ctx, tok)
			revoked[c.ID] = true
			released = append(released, c.ID)
			return nil
		},
		Revoked: func(id string) bool { return revoked[id] }}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pay":
			w.Header().Set(CommandHeader, "release")
			http.Redirect(w, r, "/thanks", http.StatusSeeOther)
		case "/pay-elsewhere":
			w.Header().Set(CommandHeader, "release")
			http.Redirect(w, r, "https://bank.example/3ds", http.StatusSeeOther)
		default:
			_, _ = w.Write([]byte("page " + r.URL.Path))
		}
	}))
	// call sends a request with the cookies a browser holds, and keeps what the answer sets.
	call := func(jar map[string]string, method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://shop.example"+path, nil)
		for k, v := range jar {
			req.AddCookie(&http.Cookie{Name: k, Value: v})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			if c.MaxAge < 0 {
				delete(jar, c.Name)
			} else {
				jar[c.Name] = c.Value
			}
		}
		return rec
	}
	admitted := func(id string) map[string]string {
		c := claims("sale", time.Now().Add(time.Hour))
		c.ID = id
		return map[string]string{DefaultCookie: mustSign(t, "k1", seed1, c)}
	}

	jar := admitted("adm-1")
	if rec := call(jar, http.MethodPost, "/pay"); rec.Code != 303 || rec.Header().Get(CommandHeader) != "" || len(released) != 0 ||
		jar[DefaultCookie] == "" || jar[pendingCookie] == "" {
		t.Fatalf("the POST: %d %v, released %v, cookies %v", rec.Code, rec.Header(), released, jar)
	}
	if rec := call(jar, http.MethodGet, "/thanks"); rec.Code != 200 || rec.Body.String() != "page /thanks" ||
		len(released) != 1 || len(jar) != 0 {
		t.Fatalf("the thank-you page: %d %q, released %v, cookies left %v", rec.Code, rec.Body, released, jar)
	}
	if rec := call(jar, http.MethodGet, "/cart"); rec.Code != http.StatusFound {
		t.Fatalf("after the release: %d, want the room", rec.Code)
	}

	jar = admitted("adm-2")
	if rec := call(jar, http.MethodPost, "/pay-elsewhere"); rec.Code != 303 || len(released) != 2 || len(jar) != 0 {
		t.Fatalf("a redirect off the site: %d, released %v, cookies left %v", rec.Code, released, jar)
	}
}

// TestBearer: the scheme's name is matched without regard to case (RFC 9110), so a client that sends
// "bearer" is not treated as sending nothing; other schemes and empty credentials are none.
func TestBearer(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER abc": "abc", "Bearer  abc ": "abc",
		"Basic abc": "", "Bearer": "", "Bearer ": "", "Bearerabc": "", "": "", "abc": "",
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		tok, ok := Bearer(r)
		if tok != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", h, tok, ok, want)
		}
	}
}
