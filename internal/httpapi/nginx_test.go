package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The njs module of Debian's libnginx-mod-http-js, which the release variant needs.
const njsModule = "/usr/lib/nginx/modules/ngx_http_js_module.so"

// startNginx runs Debian's nginx with docs/nginx/rushgate.conf in front of origin and rushgate (each
// host:port), on a free port of its own, and returns its base URL; with release, its release variant
// included (docs/nginx/rushgate-release.conf and rushgate.js, njs). Without nginx (or njs) the test
// skips locally and fails in CI.
func startNginx(t *testing.T, rushgate, origin string, release bool) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("nginx is not installed; .ci/run installs it")
			}
			t.Skip("nginx is not installed (apt-get install -y nginx)")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	docs := map[string]string{"rushgate.conf": ""}
	modules := ""
	if release {
		if _, err := os.Stat(njsModule); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("nginx's njs module is not installed; .ci/run installs libnginx-mod-http-js")
			}
			t.Skip("nginx's njs module is not installed (apt-get install -y libnginx-mod-http-js)")
		}
		docs["rushgate-release.conf"], docs["rushgate.js"] = "", ""
		modules = "load_module " + njsModule + ";"
	}
	for name := range docs {
		b, err := os.ReadFile("../../docs/nginx/" + name)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = string(b)
	}
	site := strings.NewReplacer("127.0.0.1:8080", rushgate, "127.0.0.1:8000", origin,
		"listen 8081;", fmt.Sprintf("listen 127.0.0.1:%d;", port)).Replace(docs["rushgate.conf"])
	if release {
		site = strings.Replace(site, "# include rushgate-release.conf;", "include rushgate-release.conf;", 1)
	}
	docs["rushgate.conf"] = site
	dir := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root root;"
	}
	docs["nginx.conf"] = fmt.Sprintf(`%[1]s
%[3]s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[2]s/rushgate.conf;
}
`, user, dir, modules)
	for name, text := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM, not SIGKILL: nginx's master then stops its worker, which would outlive a killed
		// master, holding its port.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		stopped := make(chan struct{})
		go func() { _ = cmd.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-stopped
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx's error log:\n%s", log)
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return base
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	t.Fatalf("nginx did not start: %s", log)
	return ""
}

// TestNginxAuthRequest runs the ready nginx config in front of an origin and rushgate (under
// --path-prefix /rushgate, as the config asks): an unadmitted request is sent to the room's page, an
// admitted one reaches the origin (the admission coming back in the URL is moved into a cookie), and a
// released one is sent to the room again. Every path but /rushgate/ is the site's.
func TestNginxAuthRequest(t *testing.T) {
	e := setup(t, withBase("/rushgate"))
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin: %s", r.URL.Path)
	}))
	defer origin.Close()
	base := startNginx(t, e.srv.Listener.Addr().String(), origin.Listener.Addr().String(), false)
	e.putRoom("sale", `{"capacity": 1, "grace": "1h", "site_url": "`+base+`/"}`)
	get := func(path, cookie string) (int, string, http.Header) {
		t.Helper()
		return throughNginx(t, "GET", base+path, cookie)
	}

	code, _, h := get("/shop/item?size=9", "")
	want := base + "/rushgate/r/sale?return_to=" + url.QueryEscape(base+"/shop/item?size=9") // nginx makes it absolute
	if code != 302 || h.Get("Location") != want {
		t.Fatalf("unadmitted: %d, Location %q; want 302 to %q", code, h.Get("Location"), want)
	}
	if code, body, _ := get("/rushgate/r/sale", ""); code != 200 || !strings.Contains(body, `src="/rushgate/assets/room.js"`) {
		t.Fatalf("the room's page through nginx: %d", code)
	}
	if code, body, _ := get("/about", ""); code != 200 || body != "origin: /about" {
		t.Fatalf("an open page: %d %q", code, body)
	}
	// The room's files are rushgate's, under its prefix; the site keeps every other path.
	for _, p := range []string{"/rushgate/assets/room.js", "/rushgate/assets/page.js", "/rushgate/assets/pow.js", "/rushgate/assets/room.css"} {
		kind := "javascript"
		if strings.HasSuffix(p, ".css") {
			kind = "css"
		}
		if code, _, h := get(p, ""); code != 200 || !strings.Contains(h.Get("Content-Type"), kind) {
			t.Fatalf("%s through nginx: %d %q", p, code, h.Get("Content-Type"))
		}
	}
	for _, p := range []string{"/assets/site.css", "/assets/room.js", "/v1/products", "/v1/rooms/sale", "/r/sale", "/admin/"} {
		if code, body, _ := get(p, ""); code != 200 || body != "origin: "+p {
			t.Fatalf("the site's %s through nginx: %d %q", p, code, body)
		}
	}

	joined := e.do("POST", "/v1/rooms/sale/join", "", "")
	if _, err := e.svc.Tick(context.Background(), "sale"); err != nil {
		t.Fatal(err)
	}
	tok := e.do("GET", "/v1/rooms/sale/status", joined.str("visitor_token"), "").str("admission_token")
	if tok == "" {
		t.Fatal("not admitted")
	}
	code, body, h := get("/shop/item?rg_admission="+tok, "")
	if code != 200 || body != "origin: /shop/item" || !strings.Contains(h.Get("Set-Cookie"), "rg_admission="+tok) {
		t.Fatalf("back from the room: %d %q, Set-Cookie %q", code, body, h.Get("Set-Cookie"))
	}
	if code, body, _ := get("/shop/cart", tok); code != 200 || body != "origin: /shop/cart" {
		t.Fatalf("admitted: %d %q", code, body)
	}
	e.want(e.do("POST", "/v1/rooms/sale/release", "", `{"admission_token": "`+tok+`"}`), 200, "")
	if code, _, h := get("/shop/cart", tok); code != 302 || !strings.HasPrefix(h.Get("Location"), base+"/rushgate/r/sale?") {
		t.Fatalf("released: %d %q", code, h.Get("Location"))
	}
}

// TestNginxRelease runs the release variant of the nginx config (njs): the origin's answer
// "Rushgate-Command: release" on a checkout page ends the visitor's admission at once, without an API
// call of the origin's, and the header never reaches the visitor; the next visitor in line is admitted.
func TestNginxRelease(t *testing.T) {
	e := setup(t, withBase("/rushgate"))
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/shop/checkout/done":
			w.Header().Set("Rushgate-Command", "release")
		case r.URL.Path == "/shop/checkout/pay" && string(body) == "paid=1" && r.URL.Query().Get("step") == "3":
			http.Redirect(w, r, "/shop/checkout/done", http.StatusSeeOther)
			return
		}
		w.Header().Add("Set-Cookie", "cart=1")
		fmt.Fprintf(w, "origin: %s %s", r.Method, r.URL.RequestURI())
	}))
	defer origin.Close()
	base := startNginx(t, e.srv.Listener.Addr().String(), origin.Listener.Addr().String(), true)
	e.putRoom("sale", `{"capacity": 1, "grace": "1h", "site_url": "`+base+`/"}`)
	send := func(method, path, cookie string) (int, string, http.Header) {
		t.Helper()
		return throughNginx(t, method, base+path, cookie)
	}
	admitted := func(visitor string) string {
		t.Helper()
		if _, err := e.svc.Tick(context.Background(), "sale"); err != nil {
			t.Fatal(err)
		}
		return e.do("GET", "/v1/rooms/sale/status", visitor, "").str("admission_token")
	}
	first := e.do("POST", "/v1/rooms/sale/join", "", "").str("visitor_token")
	tok := admitted(first)
	next := e.do("POST", "/v1/rooms/sale/join", "", "").str("visitor_token")
	if tok == "" || admitted(next) != "" {
		t.Fatal("want the first visitor admitted and the next one waiting (capacity 1)")
	}

	if code, _, h := send("GET", "/shop/checkout/pay", ""); code != 302 || !strings.HasPrefix(h.Get("Location"), base+"/rushgate/r/sale?") {
		t.Fatalf("unadmitted at the checkout: %d %q", code, h.Get("Location"))
	}
	code, body, h := send("POST", "/shop/checkout/pay?step=2", tok)
	if code != 200 || body != "origin: POST /shop/checkout/pay?step=2" || h.Get("Set-Cookie") != "cart=1" {
		t.Fatalf("admitted at the checkout: %d %q, Set-Cookie %q", code, body, h.Get("Set-Cookie"))
	}
	code, _, h = send("POST", "/shop/checkout/pay?step=3", tok)
	if code != 303 || !strings.HasSuffix(h.Get("Location"), "/shop/checkout/done") {
		t.Fatalf("the origin's redirect after paying: %d, Location %q", code, h.Get("Location"))
	}
	code, body, h = send("GET", "/shop/checkout/done", tok)
	if code != 200 || body != "origin: GET /shop/checkout/done" || h.Get("Rushgate-Command") != "" {
		t.Fatalf("the page that releases: %d %q, Rushgate-Command %q", code, body, h.Get("Rushgate-Command"))
	}
	if code, _, h := send("GET", "/shop/cart", tok); code != 302 || !strings.HasPrefix(h.Get("Location"), base+"/rushgate/r/sale?") {
		t.Fatalf("released: %d %q", code, h.Get("Location"))
	}
	if admitted(next) == "" {
		t.Fatal("the released place did not go to the next visitor")
	}
}

// throughNginx sends a request (a POST with the body "paid=1") with an rg_admission cookie when given
// one, and returns the answer without following redirects.
func throughNginx(t *testing.T, method, url, cookie string) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("paid=1")
	}
	req, _ := http.NewRequest(method, url, body)
	if cookie != "" {
		req.Header.Set("Cookie", "rg_admission="+cookie)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(answer), res.Header
}
