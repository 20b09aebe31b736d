package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/room"
)

// get fetches a page with headers and returns its status, header and body.
func (e *env) get(path string, header map[string]string) (int, http.Header, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func TestPageLanguageAndBranding(t *testing.T) {
	e := setup(t)
	e.putRoom("b", `{"capacity": 1, "page": {"title": "<Concert>", "message": "Doors at 7", "logo_url": "https://cdn.example.com/logo.png",
		"brand_color": "#8b2fc9", "language": "ko"}}`)
	cases := []struct {
		name   string
		path   string
		accept string
		want   string
	}{
		{"the room's default", "/r/b", "", "ko"},
		{"the browser's first choice", "/r/b", "fr;q=0.9, en;q=0.8, ko;q=0.1", "en"},
		{"the query above all", "/r/b?lang=ko", "en", "ko"},
		{"a region of a language", "/r/b", "en-GB", "en"},
	}
	for _, tc := range cases {
		code, h, body := e.get(tc.path, map[string]string{"Accept-Language": tc.accept})
		if code != 200 || h.Get("Content-Language") != tc.want || !strings.Contains(body, `<html lang="`+tc.want+`">`) {
			t.Errorf("%s: %d, language %q, want %q", tc.name, code, h.Get("Content-Language"), tc.want)
		}
	}
	_, h, body := e.get("/r/b?lang=en", nil)
	if !strings.Contains(body, "&lt;Concert&gt;") || strings.Contains(body, "<Concert>") || !strings.Contains(body, "Doors at 7") {
		t.Fatalf("branding not shown escaped: %s", body)
	}
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "img-src 'self' https://cdn.example.com;") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'self';") {
		t.Fatalf("CSP %q", csp)
	}
	for _, bad := range []string{`{"brand_color": "red"}`, `{"logo_url": "javascript:alert(1)"}`, `{"logo_url": "https://x.com;script-src *"}`} {
		r := e.do("PUT", "/v1/rooms/bad", adminKey, `{"capacity": 1, "page": `+bad+`}`)
		if e.want(r, 400, "invalid_config"); !strings.HasPrefix(r.body["error"].(map[string]any)["field"].(string), "page.") {
			t.Errorf("%s: %v", bad, r.body)
		}
	}
}

func TestTemplatesOverride(t *testing.T) {
	dir := t.TempDir()
	tmpl := `<!doctype html><html lang="{{.Lang}}"><body><h1 class="mine">{{.Title}} / {{index .Texts "title_waiting"}}</h1>` +
		`<main id="room" data-texts="{{.TextsJSON}}"></main><script src="/assets/page.js"></script><script src="/assets/room.js"></script></body></html>`
	if err := os.WriteFile(filepath.Join(dir, "room.html"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.Templates = dir })
	e.putRoom("t", `{"capacity": 1, "page": {"title": "Sale <b>"}}`)
	_, _, body := e.get("/r/t?lang=ko", nil)
	if !strings.Contains(body, `<h1 class="mine">Sale &lt;b&gt; / 대기 중입니다</h1>`) {
		t.Fatalf("the site's template was not used, or not escaped: %s", body)
	}
	if err := os.WriteFile(filepath.Join(dir, "room.html"), []byte(`{{.Nope`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.New(httpapi.Config{Templates: dir}); err == nil {
		t.Fatal("a template that does not parse was accepted")
	}
}

// TestClaimWithoutToken: a browser that opens a drop's page directly holds no visitor token; its claim
// is made by a new anonymous visitor whose token it keeps as the cookie, so its second claim is its
// own repeat. A drop that counts site identities refuses such a visitor.
func TestClaimWithoutToken(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/open", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/drops/site", adminKey, e.dropCfg(`, "identity": "site"`)), 200, "")
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	claim := func(id string) int {
		res, err := client.Post(e.srv.URL+"/v1/drops/"+id+"/claims", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := claim("open"); code != 201 {
		t.Fatalf("first claim: %d", code)
	}
	if code := claim("open"); code != 409 {
		t.Fatalf("second claim by the same browser: %d, want 409 already_claimed", code)
	}
	if code := claim("site"); code != 403 {
		t.Fatalf("claim on a site-identity drop: %d", code)
	}
	if code, _, _ := e.get("/d/open", nil); code != 200 {
		t.Fatalf("drop page: %d", code)
	}
	if code, _, _ := e.get("/d/nope", nil); code != 404 {
		t.Fatalf("page of an unknown drop: %d", code)
	}
}

// downRooms is a room store whose rooms cannot be read: the store is down.
type downRooms struct{ room.Store }

func (downRooms) Room(context.Context, string) (room.Config, error) {
	return room.Config{}, rushgate.ErrUnavailable
}

// TestPagesOfWhatIsNotThere: a visitor who follows a link to a room, drop or auction that does not
// exist (or has been deleted since) gets a page in their language with the right status, not the API's
// JSON; one who arrives while the store is down gets a page that loads itself again.
func TestPagesOfWhatIsNotThere(t *testing.T) {
	e := setup(t)
	for _, c := range []struct {
		path, lang string
		code       int
		want       string
	}{
		{"/r/gone", "en", 404, "This waiting room does not exist, or it has closed."},
		{"/r/gone", "ko", 404, "이 대기실은 없거나 이미 닫혔습니다."},
		{"/r/bad%20id", "en", 400, "This waiting room does not exist"},
		{"/d/gone", "ko", 404, "이 한정 판매는 없거나 이미 끝났습니다."},
		{"/a/gone", "en", 404, "This auction does not exist, or it has ended."},
	} {
		code, h, body := e.get(c.path, map[string]string{"Accept-Language": c.lang})
		if code != c.code || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, c.want) ||
			!strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || strings.Contains(body, `"error"`) {
			t.Errorf("%s in %s: %d %q, %q; want %d with %q", c.path, c.lang, code, h.Get("Content-Type"), body, c.code, c.want)
		}
	}

	e = setup(t, func(_ *httpapi.Config, s *room.Store) { *s = downRooms{*s} })
	code, h, body := e.get("/r/sale?lang=ko", nil)
	wait := h.Get("Retry-After")
	if n, err := strconv.Atoi(wait); code != 503 || err != nil || n < 3 || n > 7 ||
		!strings.Contains(body, `<meta http-equiv="refresh" content="`+wait+`">`) || !strings.Contains(body, "지금 접속이 많습니다") {
		t.Errorf("the store down: %d, Retry-After %q, %q", code, wait, body)
	}
}
