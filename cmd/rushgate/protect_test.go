package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rushgate/rushgate/internal/console"
)

// TestProtect runs rushgate serve --protect in front of an origin: a visitor is sent to the room, joins
// through the proxied site, is admitted, reaches the origin over HTTP and a WebSocket; the origin's
// "Rushgate-Command: release" ends the admission, and the next visitor in line is admitted. An event
// stream and a long poll come through part by part, as the origin writes them.
func TestProtect(t *testing.T) {
	read := make(chan struct{}, 1) // the test read the stream's first part
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/events", "/poll":
			// A stream, and a long poll of unknown length: each part must reach the visitor as the
			// origin writes it, not when the answer ends.
			if r.URL.Path == "/events" {
				w.Header().Set("Content-Type", "text/event-stream")
			}
			fmt.Fprint(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-read:
			case <-time.After(5 * time.Second): // the test failed: end the answer
			}
			fmt.Fprint(w, "data: second\n\n")
		case "/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			typ, msg, err := c.Read(r.Context())
			if err == nil {
				_ = c.Write(r.Context(), typ, append([]byte("echo: "), msg...))
			}
			_ = c.Close(websocket.StatusNormalClosure, "")
		case "/checkout":
			w.Header().Set("Rushgate-Command", "release")
			fmt.Fprint(w, "thank you")
		case "/static/cookies":
			fmt.Fprintf(w, "cookies: %s", r.Header.Get("Cookie"))
		default:
			fmt.Fprintf(w, "origin: %s", r.URL.Path)
		}
	}))
	defer origin.Close()
	base, addr := serveInProcess(t, "--protect", origin.URL, "--room", "sale", "--open-paths", "/static/,/favicon.ico")
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/sale", testAdminKey, `{"capacity": 1, "site_url": "`+base+`/"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := getter(t, client, base)
	if code, _, h := get("/shop", ""); code != 302 || !strings.HasPrefix(h.Get("Location"), "/r/sale?return_to=") {
		t.Fatalf("unadmitted: %d %q", code, h.Get("Location"))
	}
	if code, body, _ := get("/static/app.css", ""); code != 200 || body != "origin: /static/app.css" {
		t.Fatalf("an open path: %d %q", code, body)
	}
	// An operator signed in to the console browses the site: the session cookie stays with rushgate.
	req, _ := http.NewRequest("GET", base+"/static/cookies", nil)
	req.Header.Set("Cookie", "cart=3; "+console.SessionCookie+"=operator.session; lang=ko")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(sent) != "cookies: cart=3; lang=ko" {
		t.Fatalf("the origin was sent %q", sent)
	}
	if code, body, _ := get("/r/sale", ""); code != 200 || !strings.Contains(body, `id="room"`) {
		t.Fatalf("the room's page through the proxy: %d", code)
	}

	_, first, _ := do(t, "POST", base+"/v1/rooms/sale/join", "", "")
	_, second, _ := do(t, "POST", base+"/v1/rooms/sale/join", "", "")
	adm := waitAdmitted(t, base, "sale", first["visitor_token"].(string))
	code, _, h := get("/shop?rg_admission="+adm, "")
	if code != 303 || !strings.Contains(h.Get("Set-Cookie"), "rg_admission="+adm) {
		t.Fatalf("back from the room: %d %v", code, h)
	}
	if code, body, _ := get("/shop", adm); code != 200 || body != "origin: /shop" {
		t.Fatalf("admitted: %d %q", code, body)
	}
	// Under rushgate's prefixes, its own paths are its; the site's other paths there (a Rails or Vite
	// /assets/, a /v1/ API) are the site's, behind the gate like the rest.
	for _, c := range []struct{ path, cookie, want string }{
		{"/assets/app-1234.js", adm, "origin: /assets/app-1234.js"},
		{"/v1/products", adm, "origin: /v1/products"},
		{"/r/sale/extra", adm, "origin: /r/sale/extra"},
		{"/assets/room.js", "", "rushgate: javascript"},
		{"/v1/keys", "", "rushgate: json"},
		{"/assets/app-1234.js", "", "the room"},
	} {
		code, body, h := get(c.path, c.cookie)
		var got string
		switch {
		case strings.HasPrefix(body, "origin: "):
			got = body
		case code == 302 && strings.HasPrefix(h.Get("Location"), "/r/sale?return_to="):
			got = "the room"
		case code == 200 && strings.Contains(h.Get("Content-Type"), "javascript"):
			got = "rushgate: javascript"
		case code == 200 && strings.HasPrefix(h.Get("Content-Type"), "application/jwk-set+json"):
			got = "rushgate: json"
		}
		if got != c.want {
			t.Errorf("%s: %d %.60q, want %s", c.path, code, body, c.want)
		}
	}
	if code, body, _ := do(t, "POST", base+"/v1/rooms/sale", "", ""); code != 405 || body["error"] == nil {
		t.Errorf("a wrong method on rushgate's path: %d %v, want its 405", code, body)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	c, _, err := websocket.Dial(wctx, "ws://"+addr+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"rg_admission=" + adm}}})
	if err != nil {
		t.Fatalf("WebSocket through the proxy: %v", err)
	}
	if err := c.Write(wctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.Read(wctx); err != nil || string(msg) != "echo: hi" {
		t.Fatalf("WebSocket echo: %q %v", msg, err)
	}
	c.CloseNow()

	for _, path := range []string{"/events", "/poll"} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Cookie", "rg_admission="+adm)
		first := make([]byte, len("data: first\n\n"))
		var res *http.Response
		got := make(chan error, 1)
		go func() {
			var err error
			if res, err = client.Do(req); err == nil {
				_, err = io.ReadFull(res.Body, first)
			}
			got <- err
		}()
		select {
		case err := <-got:
			if err != nil || string(first) != "data: first\n\n" {
				t.Fatalf("%s: first part %q, %v", path, first, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s: the first part did not come through the proxy before the answer ended", path)
		}
		read <- struct{}{}
		rest, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(rest) != "data: second\n\n" {
			t.Fatalf("%s: the rest %q", path, rest)
		}
	}

	code, body, h := get("/checkout", adm)
	if code != 200 || body != "thank you" || h.Get("Rushgate-Command") != "" || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("checkout: %d %q %v", code, body, h)
	}
	if code, _, _ := get("/shop", adm); code != 302 {
		t.Fatalf("after the release: %d, want the room again", code)
	}
	waitAdmitted(t, base, "sale", second["visitor_token"].(string)) // the freed slot goes to the next in line

	// The metrics count what the proxy did with the requests above, and how long the origin took.
	for name, least := range map[string]float64{
		`rushgate_protect_requests_total{outcome="admitted"}`: 8, // the shop, the site's paths, streams, checkout
		`rushgate_protect_requests_total{outcome="refused"}`:  3, // unadmitted, the site's asset, after the release
		`rushgate_protect_requests_total{outcome="open"}`:     1,
		`rushgate_protect_origin_duration_seconds_count`:      9,
	} {
		if v, ok, err := metricValue(base, name); err != nil || !ok || v < least {
			t.Errorf("%s = %v (found %v, %v), want at least %v", name, v, ok, err, least)
		}
	}
}

// TestProtectOriginDown: when the site behind the proxy does not answer, a person loading a page gets
// a page in their language that tries again by itself, and a script gets the JSON error.
func TestProtectOriginDown(t *testing.T) {
	base, _ := serveInProcess(t, "--protect", "http://"+freeAddr(t), "--room", "sale", "--open-paths", "/static/")
	fetch := func(mode string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/static/app.css", nil)
		req.Header.Set("Sec-Fetch-Mode", mode)
		req.Header.Set("Accept-Language", "ko")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	code, body, h := fetch("navigate")
	if code != 502 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "사이트가 응답하지 않습니다") ||
		!strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("a page, the site down: %d %q %q", code, h.Get("Content-Type"), body)
	}
	if code, body, _ := fetch("cors"); code != 502 || !strings.Contains(body, `"origin_unavailable"`) {
		t.Errorf("a script's call, the site down: %d %q", code, body)
	}
	// Each page waits its own time before it tries again, so that a crowd's reloads do not come in waves.
	waits := map[string]bool{}
	for range 20 {
		_, body, h := fetch("navigate")
		wait := h.Get("Retry-After")
		if n, err := strconv.Atoi(wait); err != nil || n < 3 || n > 7 || !strings.Contains(body, `content="`+wait+`"`) {
			t.Fatalf("a page, the site down: Retry-After %q, the page %q", wait, body)
		}
		waits[wait] = true
	}
	if len(waits) < 3 {
		t.Fatalf("20 pages waited %v seconds before their next try: not spread", waits)
	}
}

// getter returns get(path, admission): a GET of base+path with the admission as the rg_admission cookie
// (none for ""), which answers the status, the body and the headers.
func getter(t *testing.T, client *http.Client, base string) func(path, admission string) (int, string, http.Header) {
	return func(path, admission string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if admission != "" {
			req.Header.Set("Cookie", "rg_admission="+admission)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
}

// TestProtectUnderAPrefix runs the proxy with --path-prefix: rushgate's pages, API, files, console and
// health live under /rushgate only, and every other path is the site's, behind the gate, even where
// rushgate has a route at the root (a Django /admin/, a /healthz, a /v1/rooms/{id} API of the site's).
func TestProtectUnderAPrefix(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin: %s", r.URL.Path)
	}))
	defer origin.Close()
	base, _ := serveInProcess(t, "--protect", origin.URL, "--room", "sale", "--path-prefix", "/rushgate")
	own := base + "/rushgate"
	if code, body, _ := do(t, "PUT", own+"/v1/rooms/sale", testAdminKey, `{"capacity": 2, "site_url": "`+base+`/"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := getter(t, client, base)
	if code, _, h := get("/admin/", ""); code != 302 || !strings.HasPrefix(h.Get("Location"), "/rushgate/r/sale?return_to=") {
		t.Fatalf("the site's /admin/ without an admission: %d %q, want the room under the prefix", code, h.Get("Location"))
	}
	req, _ := http.NewRequest("POST", own+"/v1/rooms/sale/join", nil)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if c := res.Header.Get("Set-Cookie"); !strings.Contains(c, "rg_visitor=") || !strings.Contains(c, "; Path=/rushgate;") {
		t.Fatalf("the visitor cookie: %q, want it on rushgate's paths only", c)
	}
	_, joined, _ := do(t, "POST", own+"/v1/rooms/sale/join", "", "")
	adm := waitAdmitted(t, own, "sale", joined["visitor_token"].(string))
	for _, c := range []struct{ path, cookie, want string }{
		{"/admin/", adm, "origin: /admin/"},
		{"/healthz", adm, "origin: /healthz"},
		{"/v1/rooms/sale", adm, "origin: /v1/rooms/sale"},
		{"/r/sale", adm, "origin: /r/sale"},
		{"/assets/room.js", adm, "origin: /assets/room.js"},
		{"/rushgates/x", adm, "origin: /rushgates/x"},
		{"/healthz", "", "the room"},
		{"/rushgate/healthz", "", `rushgate: {"status":"ok"}`},
		{"/rushgate/assets/room.js", "", "rushgate: javascript"},
		{"/rushgate/r/sale", "", `rushgate: <script src="/rushgate/assets/room.js">`},
		{"/rushgate/admin", "", `rushgate: <script src="/rushgate/admin/assets/console.js">`},
		{"/rushgate/v1/rooms/sale", "", `rushgate: {"error":{"code":"unauthorized"`},
		{"/rushgate/rushgate/v1/keys", "", `rushgate: {"error":{"code":"not_found"`}, // the prefix is taken off once
	} {
		code, body, h := get(c.path, c.cookie)
		got := fmt.Sprintf("%d %.60q", code, body)
		switch {
		case strings.HasPrefix(body, "origin: "):
			got = body
		case code == 302 && strings.HasPrefix(h.Get("Location"), "/rushgate/r/sale?return_to="):
			got = "the room"
		case strings.Contains(h.Get("Content-Type"), "javascript"):
			got = "rushgate: javascript"
		case strings.HasPrefix(c.want, "rushgate: ") && strings.Contains(body, strings.TrimPrefix(c.want, "rushgate: ")):
			got = c.want
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.path, got, c.want)
		}
	}
}
