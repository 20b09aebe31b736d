package httpapi_test

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/console"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/protect"
	"github.com/rushgate/rushgate/internal/room"
)

// withBase mounts the server, console included, under base, as --path-prefix does.
func withBase(base string) option {
	return func(c *httpapi.Config, _ *room.Store) {
		c.Base = base
		c.Console = console.New(console.Config{AdminKey: adminKey, Base: base})
	}
}

// behindProxy puts the protecting proxy, with rushgate under prefix and room "sale", in front of e's
// API and a site that site answers; both stop when the test ends.
func (e *env) behindProxy(prefix string, site http.Handler) *httptest.Server {
	origin := httptest.NewServer(site)
	e.t.Cleanup(origin.Close)
	u, _ := url.Parse(origin.URL)
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", API: e.api, Prefix: prefix,
		Verifier: admission.NewVerifierFunc(e.keys.PublicKeys)}))
	e.t.Cleanup(proxy.Close)
	return proxy
}

func TestCheckBase(t *testing.T) {
	for _, ok := range []string{"", "/rushgate", "/queue/v2", "/a.b_c~d-e"} {
		if err := httpapi.CheckBase(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"/", "rushgate", "/rushgate/", "//rushgate", "/a//b", "/a/./b", "/a/..", "/a b", `/a"b`,
		"/a?b", "/a#b", "/a%20b", "/a<b", "/ä", "/" + strings.Repeat("a", 100)} {
		if err := httpapi.CheckBase(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := httpapi.New(httpapi.Config{Base: "/bad/"}); err == nil {
		t.Error("New took a base with a trailing slash")
	}
}

// FuzzCheckBase: whatever base CheckBase accepts can go in front of a URL's path and into an HTML
// attribute as it is: it is its own clean path, needs no escaping, and cannot lead off the site.
func FuzzCheckBase(f *testing.F) {
	for _, seed := range []string{"", "/rushgate", "/a/b", "/a/../b", "//evil.example", "/a%2fb", "/ä", "/a b", "/.", "/~x.y-z_"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, base string) {
		if httpapi.CheckBase(base) != nil || base == "" {
			return
		}
		u, err := url.Parse(base + "/r/sale")
		switch {
		case path.Clean(base) != base, !strings.HasPrefix(base, "/"), strings.HasPrefix(base, "//"):
			t.Fatalf("%q is not a clean absolute path", base)
		case html.EscapeString(base) != base, url.PathEscape(strings.ReplaceAll(base, "/", "")) != strings.ReplaceAll(base, "/", ""):
			t.Fatalf("%q needs escaping", base)
		case err != nil || u.Host != "" || u.Scheme != "" || u.Path != base+"/r/sale":
			t.Fatalf("%q/r/sale parses as %#v, %v", base, u, err)
		}
	})
}

// TestPagesUnderABase: a server mounted under a base puts it in front of every path it hands a browser
// (its pages' files and calls, the way back from a room to a drop's page, the nginx check's room, the
// console's links and redirects) and scopes its cookies to it, while it routes the paths without it,
// taking it off a path that has it.
func TestPagesUnderABase(t *testing.T) {
	e := setup(t, withBase("/rushgate"))
	e.putRoom("sale", `{"capacity": 1, "site_url": "https://shop.example/"}`)
	e.want(e.do("PUT", "/v1/drops/vip", adminKey, e.dropCfg(`, "room": "sale"`)), 200, "")
	page := func(path string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	has := func(what, body string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s", what, w)
			}
		}
	}
	_, body, _ := page("/r/sale")
	has("the room's page", body, `href="/rushgate/assets/room.css"`, `src="/rushgate/assets/page.js"`,
		`src="/rushgate/assets/room.js"`, `data-base="/rushgate"`, `data-join="/rushgate/v1/rooms/sale/join"`,
		`data-events="/rushgate/v1/rooms/sale/events"`, `data-status="/rushgate/v1/rooms/sale/status"`)
	for returnTo, target := range map[string]string{
		"/rushgate/d/vip":                "/rushgate/d/vip",
		"/d/vip":                         "/rushgate/d/vip",
		"/rushgate/a/hot":                "/rushgate/a/hot",
		"https://shop.example/cart?x=1":  "https://shop.example/cart?x=1",
		"/rushgate//evil.example/d/vip":  "https://shop.example/",
		"https://evil.example/rushgate/": "https://shop.example/",
		"/rushgatex/d/vip":               "https://shop.example/",
	} {
		_, body, _ := page("/r/sale?return_to=" + url.QueryEscape(returnTo))
		has("return_to "+returnTo, body, `data-target="`+target+`"`)
	}
	// A front that passes the base on as the browser sent it (nginx's proxy_pass without a URI) reaches
	// the same routes.
	if _, prefixed, _ := page("/rushgate/r/sale"); prefixed != body {
		t.Error("the room's page under the base differs from the one without it")
	}
	for path, want := range map[string]int{"/rushgate/v1/keys": 200, "/rushgate/%76%31/keys": 200, "/rushgatex/v1/keys": 404,
		"/rushgate": 404, "/x/rushgate/v1/keys": 404, "/rushgate/rushgate/v1/keys": 404} {
		if code, _, _ := page(path); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	_, body, _ = page("/d/vip")
	has("the drop's page", body, `data-base="/rushgate"`, `src="/rushgate/assets/drop.js"`)
	code, body, _ := page("/r/nowhere")
	has("the page of a missing room", body, `href="/rushgate/assets/room.css"`)
	if code != http.StatusNotFound {
		t.Errorf("a missing room's page: %d", code)
	}
	code, _, h := page("/v1/rooms/sale/check")
	if code != http.StatusUnauthorized || h.Get("Location") != "/rushgate/r/sale" {
		t.Errorf("the check sends to %d %q, want the room's page under the base", code, h.Get("Location"))
	}
	j := e.do("POST", "/v1/rooms/sale/join", "", "")
	if c := j.header.Get("Set-Cookie"); !strings.Contains(c, "; Path=/rushgate;") {
		t.Errorf("the visitor cookie %q is not scoped to the base", c)
	}

	_, body, h = page("/admin")
	has("the console's sign-in", body, `href="/rushgate/admin/assets/console.css"`, `action="/rushgate/admin/login"`,
		`src="/rushgate/admin/assets/console.js"`)
	var login string
	for _, c := range h["Set-Cookie"] {
		if strings.HasPrefix(c, "rg_console_login=") {
			login, _, _ = strings.Cut(strings.TrimPrefix(c, "rg_console_login="), ";")
			has("the sign-in cookie", c, "; Path=/rushgate/admin;")
		}
	}
	form := url.Values{"csrf": {login}, "key": {adminKey}}
	req, _ := http.NewRequest("POST", e.srv.URL+"/admin/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "rg_console_login", Value: login})
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var session string
	for _, c := range res.Header["Set-Cookie"] {
		if strings.HasPrefix(c, console.SessionCookie+"=") {
			session = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/rushgate/admin" || !strings.Contains(session, "; Path=/rushgate;") {
		t.Errorf("signed in: %d to %q, session cookie %q; want the console and the session under the base",
			res.StatusCode, res.Header.Get("Location"), session)
	}
}

// TestWaitingUnderAPrefix takes a visitor through the protecting proxy with rushgate under /rushgate in
// a real browser: a drop's page behind a room leads to the room's page under the prefix, whose scripts
// and calls work from there, and back once admitted; the site's page lets the admitted visitor in, and
// the site's own /admin/ is the site's. The operator signs in to the console under the prefix.
func TestWaitingUnderAPrefix(t *testing.T) {
	e := setup(t, withBase("/rushgate"))
	proxy := e.behindProxy("/rushgate", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>shop</title><p id="site">the site at `+r.URL.Path+`</p>`)
	}))
	e.putRoom("sale", `{"capacity": 1, "grace": "1h", "idle_timeout": "1h", "site_url": "`+proxy.URL+`/"}`)
	e.want(e.do("PUT", "/v1/drops/vip", adminKey, e.dropCfg(`, "room": "sale"`)), 200, "")
	ctx := tab(t)
	js := func(expr string) string { return eval[string](t, ctx, expr) }
	if err := chromedp.Do(ctx, chromedp.Navigate(proxy.URL+"/rushgate/d/vip?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "the way to the line", func() bool { return js(`String((document.getElementById('gate') || {}).hidden)`) == "false" })
	if got := js(`document.getElementById('line').getAttribute('href')`); got != "/rushgate/r/sale?return_to=%2Frushgate%2Fd%2Fvip&lang=en" {
		t.Fatalf("the drop's page leads to the line at %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#line"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the room's page under the prefix", func() bool { return js(`location.pathname`) == "/rushgate/r/sale" })
	until(t, "a place in line", func() bool { return js(`(document.getElementById('position') || {}).textContent || ''`) == "#1" })
	// Nobody has been admitted yet: the wait shown is the most it can be (one slot, held up to the
	// room's hour of grace and a 10-minute session), and says so.
	if got := js(`document.getElementById('message').textContent`); got != "Estimated wait: up to about 70 minutes; it will sharpen as the line moves." {
		t.Errorf("the wait before any admission: %q", got)
	}
	screenshot(t, ctx, "prefix-room")
	if _, err := e.svc.Tick(t.Context(), "sale"); err != nil {
		t.Fatal(err)
	}
	e.svc.Broadcast("sale")
	until(t, "back on the drop's page", func() bool { return js(`location.pathname`) == "/rushgate/d/vip" })
	until(t, "the claim button", func() bool { return js(`String((document.getElementById('claim') || {}).disabled)`) == "false" })
	// The site's own page: the gate sends the visitor to the room, which finds them admitted and sends
	// them back with the admission, which the gate keeps in its cookie.
	if err := chromedp.Do(ctx, chromedp.Navigate(proxy.URL+"/shop")); err != nil {
		t.Fatal(err)
	}
	until(t, "the site's page", func() bool {
		return js(`(document.getElementById('site') || {}).textContent || ''`) == "the site at /shop"
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(proxy.URL+"/admin/")); err != nil {
		t.Fatal(err)
	}
	until(t, "the site's /admin/", func() bool {
		return js(`(document.getElementById('site') || {}).textContent || ''`) == "the site at /admin/"
	})

	signIn(t, ctx, proxy.URL+"/rushgate/admin?lang=en", adminKey)
	if got := text(t, ctx, "#rooms tbody a"); got != "sale" {
		t.Fatalf("the console's overview lists %q", got)
	}
	if got := js(`document.querySelector('#rooms tbody a').getAttribute('href')`); got != "/rushgate/admin/rooms/sale" {
		t.Fatalf("the console links a room to %q", got)
	}
	screenshot(t, ctx, "prefix-console")
}

// TestTemplatesUnderABaseAreChecked: a replaced template that loads rushgate's files by their paths at
// the root would break under a path prefix, where those paths are the site's; the server says so in
// its log when it starts, and says nothing of one that puts {{.Base}} in front.
func TestTemplatesUnderABaseAreChecked(t *testing.T) {
	for _, c := range []struct {
		script string
		warned bool
	}{
		{`<script src="/assets/room.js"></script>`, true},
		{`<script src="{{.Base}}/assets/room.js"></script>`, false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "room.html"), []byte(`<main id="room"></main>`+c.script), 0o644); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		api, err := httpapi.New(httpapi.Config{Templates: dir, Base: "/rushgate", Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		api.Drain()
		if warned := strings.Contains(log.String(), "room.html") && strings.Contains(log.String(), "level=WARN"); warned != c.warned {
			t.Errorf("%s: warned %v, want %v; log: %s", c.script, warned, c.warned, log.String())
		}
	}
}

// TestAuctionUnderAPrefix: an auction's page under the protecting proxy's prefix holds its live feed
// (a WebSocket through the proxy), shows another bidder's bid at once, and takes the page's own bid.
func TestAuctionUnderAPrefix(t *testing.T) {
	e := setup(t, withBase("/rushgate"))
	proxy := e.behindProxy("/rushgate", http.NotFoundHandler())
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, fmt.Sprintf(`{"title": "Guitar", "currency": "KRW", "start_price": 10000,
		"increment": 1000, "starts_at": %q, "ends_at": %q}`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))), 200, "")
	ctx := tab(t)
	shown := shownIn(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(proxy.URL+"/rushgate/a/lot?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "the live feed", func() bool { return eval[string](t, ctx, `String(document.getElementById('live').hidden)`) == "false" })
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("other"), `{"amount": 12000}`), 201, "")
	until(t, "the other bidder's bid", func() bool { return strings.Contains(shown("#price"), "12,000") })
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#amount"), "20000"), chromedp.Click(chromedp.CSS("#bid"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the page to lead", func() bool { return shown("#standing") == "You are leading." })
}
