package protect_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/protect"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writes counts the writes of every connection a listener accepts.
type writes struct {
	net.Listener
	n atomic.Int64
}

func (l *writes) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// TestAnswersOfUnknownLength proxies answers whose length the origin does not announce: a page rendered
// in one go reaches the visitor in one write (ReverseProxy alone sends its headers, its body and its
// last chunk in three), a long poll and an event stream still come through part by part, and trailers
// still arrive.
func TestAnswersOfUnknownLength(t *testing.T) {
	page := strings.Repeat("<p>a ticket</p>\n", 200) // over net/http's 2 KiB: sent chunked
	held := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page[:len(page)/2])
			io.WriteString(w, page[len(page)/2:])
		case "/poll", "/events":
			if r.URL.Path == "/events" {
				w.Header().Set("Content-Type", "text/event-stream")
			}
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-held:
			case <-time.After(5 * time.Second): // the test failed: end the answer
			}
			io.WriteString(w, "data: second\n\n")
		case "/trailer":
			w.Header().Set("Trailer", "Rushgate-Sum")
			io.WriteString(w, "body")
			w.Header().Set("Rushgate-Sum", "42")
		}
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &writes{Listener: ln}
	proxy := httptest.NewUnstartedServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/"},
		API: http.NotFoundHandler()}))
	proxy.Listener.Close()
	proxy.Listener = counted
	proxy.Start()
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{}, Timeout: 4 * time.Second} // held headers fail the test, not hang it
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	get := func(path string) *http.Response {
		t.Helper()
		res, err := client.Get(proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	restore := protect.HoldFlushes(time.Minute) // a busy test machine may stall the handler for over the 1 ms
	before := counted.n.Load()
	res := get("/page")
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(body) != page || res.ContentLength != -1 {
		t.Fatalf("page: %d bytes of %d, length %d, %v", len(body), len(page), res.ContentLength, err)
	}
	if n := counted.n.Load() - before; n != 1 {
		t.Fatalf("the page reached the visitor in %d writes, want 1", n)
	}
	restore()

	for _, path := range []string{"/poll", "/events"} {
		res := get(path) // the headers came through while the origin holds the rest
		readPart(t, res.Body, "data: first\n\n", path+": the first part")
		held <- struct{}{}
		rest, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(rest) != "data: second\n\n" {
			t.Fatalf("%s: the rest %q", path, rest)
		}
	}

	res = get("/trailer")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "body" || res.Trailer.Get("Rushgate-Sum") != "42" {
		t.Fatalf("trailer: %q %v", body, res.Trailer)
	}
}

// TestEveryPartOfAStreamIsSent checks that batching never holds a part back for good: an origin that
// streams parts slowly gets each one to the visitor before it writes the next.
func TestEveryPartOfAStreamIsSent(t *testing.T) {
	next := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 5 {
			fmt.Fprintf(w, "part %d\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}))
	defer origin.Close()
	base, client := proxy(t, origin.URL)
	res, err := client.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for i := range 5 {
		readPart(t, res.Body, fmt.Sprintf("part %d\n", i), fmt.Sprintf("part %d", i))
		next <- struct{}{}
	}
}

// readPart reads the next part of a streamed answer, failing if it is not want or does not come within
// a few seconds, that is while the origin still holds what follows.
func readPart(t *testing.T, body io.Reader, want, what string) {
	t.Helper()
	part := make([]byte, len(want))
	got := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(body, part)
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil || string(part) != want {
			t.Fatalf("%s: %q, %v", what, part, err)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("%s did not come through while the origin held the rest", what)
	}
}

// TestOpenPathsEndAtASegment: an open path opens itself and what is below it, never a longer name that
// starts with it, so "--open-paths /favicon.ico,/api/public" does not open "/favicon.ico.php" or
// "/api/public-admin".
func TestOpenPathsEndAtASegment(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "origin") }))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/favicon.ico", "/static/", "/api/public"},
		Verifier: admission.NewVerifier(nil), API: http.NotFoundHandler()}))
	defer proxy.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for target, open := range map[string]bool{
		"/favicon.ico": true, "/favicon.icox": false, "/favicon.ico.php": false,
		"/static/a.css": true, "/static/": true, "/static": false, "/staticx/a.css": false,
		"/api/public": true, "/api/public/list": true, "/api/public-admin": false, "/api/publicity": false,
	} {
		res, err := client.Get(proxy.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.StatusCode == http.StatusOK; got != open {
			t.Errorf("%s: %d; open %v, want %v", target, res.StatusCode, got, open)
		}
	}
}

// TestOpenPathsOpenNoMore checks that an open path cannot be climbed out of: against an origin that
// resolves dot segments, backslashes and ";parameters" as real servers do, every spelling of
// "/static/../secret" ends at the room's gate or is refused, and never reaches the secret.
func TestOpenPathsOpenNoMore(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		p := strings.ReplaceAll(r.URL.Path, `\`, "/")
		segs := strings.Split(p, "/")
		for i, s := range segs {
			segs[i], _, _ = strings.Cut(s, ";")
		}
		switch path.Clean(strings.Join(segs, "/")) {
		case "/secret":
			io.WriteString(w, "secret")
		case "/static/a.txt":
			io.WriteString(w, "static")
		default:
			http.NotFound(w, r)
		}
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	obs := &observed{}
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/static/"},
		Verifier: admission.NewVerifier(nil),
		API:      http.NotFoundHandler(), Observer: obs}))
	defer proxy.Close()

	for _, c := range []struct{ target, status, location, body string }{
		{"/static/a.txt", "200", "", "static"},
		{"/static/a.txt?v=2", "200", "", "static"},
		{"/secret", "302", "/r/sale?return_to=", ""},
		{"/static/../secret", "307", "/secret", ""},
		{"/static/../secret?x=1", "307", "/secret?x=1", ""},
		{"/static/%2e%2e/secret", "307", "/secret", ""},
		{"/static%2f..%2fsecret", "307", "/secret", ""},
		{"/static/./../secret", "307", "/secret", ""},
		{"/static//a.txt", "307", "/static/a.txt", ""},
		{"/static/sub/..", "307", "/static", ""},
		{"//evil.example/static/a.txt", "307", "/evil.example/static/a.txt", ""},
		{"/secret/;jsessionid=1", "302", "/r/sale?return_to=", ""}, // a Java site's link: gated, not refused
		{"/static/a.txt;jsessionid=1", "200", "", "static"},
		{"/static/..;/secret", "400", "", `"invalid_path"`},
		{"/static/.%3b/../secret", "400", "", `"invalid_path"`},
		{"/static/..%5csecret", "400", "", `"invalid_path"`},
		{`/static/..\secret`, "400", "", `"invalid_path"`},
	} {
		conn, err := net.Dial("tcp", proxy.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n", c.target)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		body, _ := io.ReadAll(res.Body)
		conn.Close()
		loc := res.Header.Get("Location")
		if fmt.Sprint(res.StatusCode) != c.status || !strings.HasPrefix(loc, c.location) || (c.location == "") != (loc == "") ||
			!strings.Contains(string(body), c.body) {
			t.Errorf("%s: %d, Location %q, %q; want %s, %q, %q", c.target, res.StatusCode, loc, body, c.status, c.location, c.body)
		}
		if string(body) == "secret" {
			t.Errorf("%s reached the secret", c.target)
		}
	}
	if obs.count(protect.OutcomeInvalid) != 4 || obs.count(protect.OutcomeOpen) != 3 || obs.count(protect.OutcomeRefused) != 2 {
		t.Errorf("observed %v, want 4 invalid, 3 open, 2 refused", obs.counts)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if s != "/static/a.txt" && s != "/static/a.txt?v=2" && s != "/static/a.txt;jsessionid=1" {
			t.Errorf("the origin was asked for %q", s)
		}
	}
}

// FuzzCleanPath checks the rule an open path relies on: a path the proxy forwards as it is (its clean
// form is itself) stays under every prefix it has, however an origin resolves it (dot segments,
// backslashes as slashes, ";parameters" dropped), and a path it redirects goes to one it forwards.
func FuzzCleanPath(f *testing.F) {
	for _, p := range []string{"/static/a.txt", "/static/../secret", "/static/..;/x", `/static/..\x`, "//x", "/a/./b/", "/.."} {
		f.Add(p)
	}
	resolve := func(p string) string { // what a lenient origin makes of p
		segs := strings.Split(strings.ReplaceAll(p, `\`, "/"), "/")
		for i, s := range segs {
			segs[i], _, _ = strings.Cut(s, ";")
		}
		return path.Clean("/" + strings.Join(segs, "/"))
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, ok := protect.CleanPath(p)
		if !ok {
			return
		}
		if again, ok := protect.CleanPath(clean); !ok || again != clean {
			t.Fatalf("%q cleans to %q, which cleans to %q, %v", p, clean, again, ok)
		}
		if clean != p {
			return // redirected
		}
		if i := strings.LastIndexByte(p[:len(p)-1], '/'); i > 0 {
			dir := p[:i+1]
			if got, under := resolve(p), strings.TrimSuffix(resolve(dir), "/")+"/"; !strings.HasPrefix(got+"/", under) {
				t.Fatalf("%q is under %q, but an origin resolves it to %q, not under %q", p, dir, got, under)
			}
		}
	})
}

// TestSlowUploadsReachTheOrigin checks that a body uploaded slowly to the site behind the proxy is not
// cut off by the server's ReadTimeout, which bounds rushgate's own small requests, and that one which
// stops arriving is answered as the visitor's timeout (408), not as the origin's failure (502).
func TestSlowUploadsReachTheOrigin(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "got %d", n)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	obs := &observed{}
	proxy := httptest.NewUnstartedServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/upload"},
		Verifier: admission.NewVerifier(nil), API: http.NotFoundHandler(), Observer: obs}))
	proxy.Config.ReadTimeout = 300 * time.Millisecond // as rushgate serve's 30 s, scaled down
	proxy.Start()
	defer proxy.Close()

	// upload sends parts of 1 KiB, pausing between them, and returns the proxy's answer.
	upload := func(parts int, pause time.Duration) (int, string) {
		t.Helper()
		pr, pw := io.Pipe()
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			part := make([]byte, 1024)
			for i := 0; i < parts; i++ {
				if _, err := pw.Write(part); err != nil {
					return
				}
				time.Sleep(pause)
			}
			pw.Close()
		}()
		defer pr.Close()
		req, _ := http.NewRequest("POST", proxy.URL+"/upload", pr)
		res, err := proxy.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(body)
	}
	if code, body := upload(10, 100*time.Millisecond); code != 200 || body != "got 10240" {
		t.Fatalf("an upload taking 1 s past a 300 ms ReadTimeout: %d %q", code, body)
	}
	defer protect.UploadIdle(200 * time.Millisecond)()
	if code, body := upload(2, time.Second); code != http.StatusRequestTimeout || !strings.Contains(body, `"request_timeout"`) {
		t.Fatalf("an upload that paused past the bound: %d %q", code, body)
	}
	if obs.count("failed "+protect.FailureUploadStalled) != 1 || obs.count("failed "+protect.FailureUnreachable) != 0 {
		t.Errorf("observed %v, want one stalled upload and no unreachable origin", obs.counts)
	}
}

// TestBehindABalancer checks the proxy behind a load balancer that ends TLS: the origin is told the
// visitor came over HTTPS (an origin that redirects plain HTTP to HTTPS would otherwise loop) and
// sees the visitor's address through a trusted balancer, the room is asked to send visitors back to
// the https page they wanted, and forwarding headers from anyone not trusted are dropped.
func TestBehindABalancer(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proto=%s for=%s forwarded=%s", r.Header.Get("X-Forwarded-Proto"),
			strings.Join(r.Header.Values("X-Forwarded-For"), ","), r.Header.Get("Forwarded"))
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	start := func(cfg protect.Config) *httptest.Server {
		cfg.Origin, cfg.Room, cfg.OpenPaths, cfg.API = u, "sale", []string{"/open/"}, http.NotFoundHandler()
		cfg.Verifier = admission.NewVerifier(nil)
		s := httptest.NewServer(protect.New(cfg))
		t.Cleanup(s.Close)
		return s
	}
	behind := start(protect.Config{HTTPS: true, FromProxy: func(r *http.Request) bool { return strings.HasPrefix(r.RemoteAddr, "127.0.0.1:") }})
	exposed := start(protect.Config{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	get := func(s *httptest.Server, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Host = "shop.example"
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Forwarded", "for=203.0.113.9;proto=https")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}
	if _, body := get(behind, "/open/x"); body != "proto=https for=203.0.113.9, 127.0.0.1 forwarded=for=203.0.113.9;proto=https" {
		t.Errorf("behind a trusted balancer the origin saw %q", body)
	}
	if _, body := get(exposed, "/open/x"); body != "proto=http for=127.0.0.1 forwarded=" {
		t.Errorf("reached directly, the origin saw %q", body)
	}
	res, _ := get(behind, "/deep/page?x=1")
	want := "/r/sale?return_to=" + url.QueryEscape("https://shop.example/deep/page?x=1")
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || loc != want {
		t.Errorf("an unadmitted visitor behind TLS: %d to %q, want 302 to %q", res.StatusCode, loc, want)
	}
}

// observed records what a proxy tells its Observer.
type observed struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *observed) add(k string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	o.counts[k]++
}

func (o *observed) Proxied(outcome string)       { o.add(outcome) }
func (o *observed) OriginFailed(kind string)     { o.add("failed " + kind) }
func (o *observed) OriginAnswered(time.Duration) { o.add("answered") }

func (o *observed) count(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[k]
}

// TestAnOriginDownIsCounted checks that a request the origin does not answer is answered 502, with
// the OriginDown page for a person loading a page and origin_unavailable for a script, and counted as
// the origin's failure.
func TestAnOriginDownIsCounted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down, _ := url.Parse("http://" + ln.Addr().String())
	ln.Close() // nothing listens there now
	obs := &observed{}
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: down, Room: "sale", OpenPaths: []string{"/"},
		Verifier: admission.NewVerifier(nil), API: http.NotFoundHandler(), Observer: obs,
		OriginDown: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<p>the site is down</p>")
		}}))
	defer proxy.Close()
	for _, c := range []struct{ name, header, value, want string }{
		{"a script's call", "Sec-Fetch-Mode", "cors", `"origin_unavailable"`},
		{"a client that says nothing", "", "", `"origin_unavailable"`},
		{"a page", "Sec-Fetch-Mode", "navigate", "<p>the site is down</p>"},
		{"a page from an old browser", "Accept", "text/html,*/*", "<p>the site is down</p>"},
	} {
		req, _ := http.NewRequest("GET", proxy.URL+"/page", nil)
		if c.header != "" {
			req.Header.Set(c.header, c.value)
		}
		res, err := proxy.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), c.want) {
			t.Errorf("%s, the origin down: %d %q", c.name, res.StatusCode, body)
		}
	}
	if obs.count("failed "+protect.FailureUnreachable) != 4 || obs.count(protect.OutcomeOpen) != 4 || obs.count("answered") != 0 {
		t.Fatalf("observed %v", obs.counts)
	}
}

// TestCORSPreflightReachesTheSite checks that a CORS preflight, which browsers send without cookies,
// is answered by the site rather than refused by the gate (which would stop the request it asks
// about, even an admitted visitor's), while the request itself is still gated.
func TestCORSPreflightReachesTheSite(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Origin", "https://app.example")
			w.Header().Set("Access-Control-Allow-Methods", "POST")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		io.WriteString(w, "the site's answer")
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	obs := &observed{}
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", Verifier: admission.NewVerifier(nil),
		API: http.NotFoundHandler(), Observer: obs}))
	defer proxy.Close()
	send := func(method string, headers ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, proxy.URL+"/api/cart", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := proxy.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := send("OPTIONS", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("a preflight: %d %v", res.StatusCode, res.Header)
	}
	if res := send("OPTIONS"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an OPTIONS that is no preflight: %d, want the gate's 401", res.StatusCode)
	}
	if res := send("POST", "Origin", "https://app.example"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the request itself, without an admission: %d, want the gate's 401", res.StatusCode)
	}
	if obs.count(protect.OutcomePreflight) != 1 || obs.count(protect.OutcomeRefused) != 2 {
		t.Fatalf("observed %v", obs.counts)
	}
}

// TestAPrefixLeavesTheSiteItsPaths: with a Prefix, rushgate answers under it alone (each path as it
// came: httpapi takes its base off), and every other path is the site's, through the gate or an open path, whatever
// rushgate's routes at the root would have been; the room the gate sends visitors to is under the
// prefix too.
func TestAPrefixLeavesTheSiteItsPaths(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "origin "+r.URL.Path)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "rushgate "+r.URL.Path) })
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/admin/static/"},
		Verifier: admission.NewVerifier(nil), API: api, Prefix: "/rushgate",
		Serves: func(*http.Request) bool { t.Error("Serves asked under a prefix"); return true }}))
	defer proxy.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct{ path, want string }{
		{"/rushgate/r/sale", "rushgate /rushgate/r/sale"},
		{"/rushgate/v1/rooms/sale/join?x=1", "rushgate /rushgate/v1/rooms/sale/join"},
		{"/rushgate/admin/", "rushgate /rushgate/admin/"},
		{"/rushgate", "rushgate /rushgate"},
		{"/rushgate/", "rushgate /rushgate/"},
		{"/rushgate/%61ssets/room.js", "rushgate /rushgate/assets/room.js"},
		{"/admin/static/site.css", "origin /admin/static/site.css"},
		{"/admin/", "room"},
		{"/healthz", "room"},
		{"/v1/rooms/sale", "room"},
		{"/assets/room.js", "room"},
		{"/r/sale", "room"},
		{"/rushgates", "room"},
		{"/x/rushgate/r/sale", "room"},
	} {
		res, err := client.Get(proxy.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got := string(body)
		if loc := res.Header.Get("Location"); res.StatusCode == http.StatusFound {
			got = "room"
			if !strings.HasPrefix(loc, "/rushgate/r/sale?return_to=") {
				t.Errorf("%s: sent to %q, want the room under the prefix", c.path, loc)
			}
		}
		if got != c.want {
			t.Errorf("%s: %d %q, want %q", c.path, res.StatusCode, got, c.want)
		}
	}
}

// TestTheSiteNeverSeesHiddenCookies: an operator signed in to the console who browses the site sends
// the console's session cookie with every request, since it is on every path; the proxy takes it out
// of what reaches the origin and leaves the site's own cookies as they came.
func TestTheSiteNeverSeesHiddenCookies(t *testing.T) {
	seen := make(chan []string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Values("Cookie")
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	proxy := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/"},
		Verifier: admission.NewVerifier(nil), API: http.NotFoundHandler(), Hidden: []string{"rg_console", "rg_console_login"}}))
	defer proxy.Close()
	for _, c := range []struct {
		sent []string
		want string
	}{
		{[]string{"cart=3; rg_console=secret.sig; lang=ko"}, "cart=3; lang=ko"},
		{[]string{"rg_console=secret.sig"}, ""},
		{[]string{"rg_console=a", "rg_console_login=b; x=1"}, "x=1"},
		{[]string{"my_rg_console=keep; rg_consoles=keep"}, "my_rg_console=keep; rg_consoles=keep"},
		{[]string{"session=abc"}, "session=abc"},
	} {
		req, _ := http.NewRequest("GET", proxy.URL+"/page", nil)
		req.Header["Cookie"] = c.sent
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := strings.Join(<-seen, " | "); got != c.want {
			t.Errorf("sent %q: the origin saw %q, want %q", c.sent, got, c.want)
		}
	}
}
