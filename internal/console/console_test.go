package console_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/console"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/vault"
)

const key = "console-test-admin-key"

// signIn runs the sign-in form as a browser would and returns the session cookie.
func signIn(t *testing.T, c *console.Console, adminKey string) (*http.Cookie, int) {
	t.Helper()
	form := httptest.NewRecorder()
	c.Handler().ServeHTTP(form, httptest.NewRequest("GET", "/admin", nil))
	var login *http.Cookie
	for _, ck := range form.Result().Cookies() {
		if ck.Name == "rg_console_login" {
			login = ck
		}
	}
	if login == nil || !strings.Contains(form.Body.String(), login.Value) {
		t.Fatalf("the sign-in form carries no login token: %v", form.Result().Cookies())
	}
	body := url.Values{"key": {adminKey}, "csrf": {login.Value}}.Encode()
	req := httptest.NewRequest("POST", "/admin/login", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(login)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == console.SessionCookie && ck.Value != "" {
			return ck, rec.Code
		}
	}
	return nil, rec.Code
}

func csrfOf(t *testing.T, c *console.Console, session *http.Cookie) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/admin", nil)
	req.AddCookie(session)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, req)
	_, after, ok := strings.Cut(rec.Body.String(), `data-csrf="`)
	if !ok {
		t.Fatalf("no CSRF token on the page: %s", rec.Body.String())
	}
	tok, _, _ := strings.Cut(after, `"`)
	return tok
}

func TestSession(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c := console.New(console.Config{AdminKey: key, Clock: func() time.Time { return now }})
	if ck, code := signIn(t, c, "wrong"); ck != nil || code != http.StatusUnauthorized {
		t.Fatalf("a wrong key: cookie %v, %d", ck, code)
	}
	ck, code := signIn(t, c, key)
	if ck == nil || code != http.StatusSeeOther {
		t.Fatalf("the right key: %d", code)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || strings.Contains(ck.Value, key) {
		t.Fatalf("session cookie %+v", ck)
	}
	csrf := csrfOf(t, c, ck)
	req := func(method, csrfHeader string, cookie *http.Cookie) *http.Request {
		r := httptest.NewRequest(method, "/v1/rooms", nil)
		if cookie != nil {
			r.AddCookie(cookie)
		}
		if csrfHeader != "" {
			r.Header.Set(console.CSRFHeader, csrfHeader)
		}
		return r
	}
	tampered := []byte(ck.Value)
	tampered[2] ^= 1 // another expiry or nonce, under the old signature
	cases := []struct {
		name string
		r    *http.Request
		want bool
	}{
		{"read with the session", req("GET", "", ck), true},
		{"change with its CSRF token", req("PATCH", csrf, ck), true},
		{"change without a CSRF token", req("POST", "", ck), false},
		{"change with another token", req("PUT", csrf+"x", ck), false},
		{"no session", req("GET", "", nil), false},
		{"a tampered session", req("GET", "", &http.Cookie{Name: console.SessionCookie, Value: string(tampered)}), false},
	}
	for _, tc := range cases {
		if op, got, err := c.Authorized(tc.r); err != nil || got != tc.want || got && op != operator.Admin {
			t.Errorf("%s: authorized %v, want %v", tc.name, got, tc.want)
		}
	}
	other := console.New(console.Config{AdminKey: key + "-rotated", Clock: func() time.Time { return now }})
	if _, ok, _ := other.Authorized(req("GET", "", ck)); ok {
		t.Error("a session outlived a change of the admin key")
	}
	now = now.Add(console.SessionTTL + time.Second)
	if _, ok, _ := c.Authorized(req("GET", "", ck)); ok {
		t.Error("an expired session was accepted")
	}
}

func TestLoginRefusals(t *testing.T) {
	c := console.New(console.Config{AdminKey: key})
	// Without the login token of the form (a cross-site form post), the right key signs nobody in.
	body := url.Values{"key": {key}, "csrf": {"guess"}}.Encode()
	r := httptest.NewRequest("POST", "/admin/login", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || len(rec.Result().Cookies()) == 0 || rec.Result().Cookies()[0].Name == console.SessionCookie {
		t.Fatalf("login without its token: %d %v", rec.Code, rec.Result().Cookies())
	}
	// The key is never taken from a URL.
	rec = httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/login?key="+key, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /admin/login: %d", rec.Code)
	}
	// Signing out needs the session's CSRF token: a cross-site post changes nothing.
	ck, _ := signIn(t, c, key)
	r = httptest.NewRequest("POST", "/admin/logout", strings.NewReader("csrf=nope"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(ck)
	rec = httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, r)
	if len(rec.Result().Cookies()) != 0 {
		t.Fatalf("a logout without the CSRF token cleared cookies: %v", rec.Result().Cookies())
	}
	page := httptest.NewRecorder()
	c.Handler().ServeHTTP(page, httptest.NewRequest("GET", "/admin/rooms/a%20b", nil))
	if page.Code != http.StatusNotFound {
		t.Fatalf("a page for an invalid id: %d", page.Code)
	}
	if csp := page.Header().Get("Content-Security-Policy"); csp != "" && strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP allows inline script: %s", csp)
	}
}

// FuzzSession: no cookie value, however made, panics the check or signs anybody in.
func FuzzSession(f *testing.F) {
	c := console.New(console.Config{AdminKey: key})
	f.Add("")
	f.Add("AAAA.BBBB")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.")
	f.Add("....")
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/v1/rooms", nil)
		r.Header.Set("Cookie", console.SessionCookie+"="+v)
		if _, ok, _ := c.Authorized(r); ok {
			t.Fatalf("cookie %q authorized", v)
		}
	})
}

// TestOperatorSession: an operator signs in with its key, its session says who it is and what role it
// has, the page tells the script, and taking the operator back ends the session.
func TestOperatorSession(t *testing.T) {
	ctx := t.Context()
	roster := operator.New(vault.Dir(t.TempDir()), operator.Options{})
	var logged strings.Builder
	refused := 0
	c := console.New(console.Config{AdminKey: key, Operators: roster, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		ClientAddr: func(*http.Request) string { return "203.0.113.9" }, Refused: func() { refused++ }})
	mina, minaKey, err := roster.Add(ctx, "mina", operator.Viewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ck, code := signIn(t, c, minaKey+"x"); ck != nil || code != http.StatusUnauthorized {
		t.Fatalf("a wrong operator key: %v, %d", ck, code)
	}
	ck, code := signIn(t, c, " "+minaKey+"\n") // pasted with the line's end
	if ck == nil || code != http.StatusSeeOther {
		t.Fatalf("mina's key: %d", code)
	}
	for _, want := range []string{`level=WARN msg="console: a sign-in with a wrong key" client=203.0.113.9`,
		`level=INFO msg="console: signed in" operator=mina role=viewer client=203.0.113.9`} {
		if !strings.Contains(logged.String(), want) {
			t.Fatalf("the log lacks %s:\n%s", want, logged.String())
		}
	}
	if strings.Contains(logged.String(), minaKey) {
		t.Fatal("the log shows the key")
	}
	if refused != 1 {
		t.Fatalf("%d refusals counted; want the wrong key's", refused)
	}
	r := httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(ck)
	if op, ok, err := c.Authorized(r); err != nil || !ok || op != mina {
		t.Fatalf("the session is %+v, %v; want %+v", op, ok, mina)
	}
	page := httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/admin", nil)
	r.AddCookie(ck)
	c.Handler().ServeHTTP(page, r)
	if b := page.Body.String(); !strings.Contains(b, `data-role="viewer"`) || !strings.Contains(b, `data-who="mina"`) || strings.Contains(b, `id="operators"`) {
		t.Fatalf("mina's page does not say who she is, or offers the operators: %s", b)
	}
	owner, _ := signIn(t, c, key)
	page = httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/admin", nil)
	r.AddCookie(owner)
	c.Handler().ServeHTTP(page, r)
	if b := page.Body.String(); !strings.Contains(b, `data-role="owner"`) || !strings.Contains(b, `id="operators"`) {
		t.Fatalf("the owner's page does not offer the operators: %s", b)
	}
	if _, err := roster.Remove(ctx, "mina"); err != nil {
		t.Fatal(err)
	}
	r = httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(ck)
	if _, ok, _ := c.Authorized(r); ok {
		t.Fatal("the session of an operator taken back still opens")
	}
	// Without a roster, an operator's key signs nobody in.
	plain := console.New(console.Config{AdminKey: key})
	if ck, code := signIn(t, plain, minaKey); ck != nil || code != http.StatusUnauthorized {
		t.Fatalf("an operator key without operators: %v, %d", ck, code)
	}
}

// downVault is a vault that stops answering when told.
type downVault struct {
	vault.Dir
	down atomic.Bool
}

func (v *downVault) LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	if v.down.Load() {
		return nil, false, errors.New("the vault does not answer")
	}
	return v.Dir.LoadOrCreate(ctx, name, create)
}

// TestSessionWhileOperatorsCannotBeRead: while the roster cannot be read, an operator's session is
// neither taken nor thrown away: the API hears an error (a 503, not a 401 that signs the page out) and
// the page asks for a moment; the owner's session goes on.
func TestSessionWhileOperatorsCannotBeRead(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	v := &downVault{Dir: vault.Dir(t.TempDir())}
	roster := operator.New(v, operator.Options{Clock: clock})
	c := console.New(console.Config{AdminKey: key, Operators: roster, Clock: clock})
	_, minaKey, err := roster.Add(t.Context(), "mina", operator.Editor, 0)
	if err != nil {
		t.Fatal(err)
	}
	mina, _ := signIn(t, c, minaKey)
	owner, _ := signIn(t, c, key)
	v.down.Store(true)
	now = now.Add(operator.Fresh)
	r := httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(mina)
	if _, ok, err := c.Authorized(r); ok || !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("mina's session while the vault is down: %v, %v", ok, err)
	}
	page := httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/admin", nil)
	r.AddCookie(mina)
	c.Handler().ServeHTTP(page, r)
	if page.Code != http.StatusServiceUnavailable || !strings.Contains(page.Body.String(), `data-error="unavailable"`) {
		t.Fatalf("mina's page while the vault is down: %d", page.Code)
	}
	r = httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(owner)
	if op, ok, err := c.Authorized(r); !ok || err != nil || op != operator.Admin {
		t.Fatalf("the owner's session while the vault is down: %v, %v", ok, err)
	}
	v.down.Store(false)
	r = httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(mina)
	if op, ok, err := c.Authorized(r); !ok || err != nil || op.Name != "mina" {
		t.Fatalf("mina's session once the vault is back: %+v, %v, %v", op, ok, err)
	}
}
