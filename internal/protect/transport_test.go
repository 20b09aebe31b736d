package protect_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/protect"
)

// origin is a test origin that counts the connections the proxy opens to it.
type origin struct {
	*httptest.Server
	conns atomic.Int64
	live  sync.Map // net.Conn -> struct{}: open connections
}

func newOrigin(t *testing.T, h http.HandlerFunc) *origin {
	t.Helper()
	o := &origin{Server: httptest.NewUnstartedServer(h)}
	o.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			o.conns.Add(1)
			o.live.Store(c, struct{}{})
		case http.StateClosed, http.StateHijacked:
			o.live.Delete(c)
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

// closeIdle closes the origin's side of its kept connections, as an origin's idle timeout does.
func (o *origin) closeIdle() {
	o.live.Range(func(c, _ any) bool {
		c.(net.Conn).Close()
		return true
	})
}

// proxy starts rushgate's proxy in front of the origin at originURL, with every path open, and returns
// its URL and a client whose requests fail rather than hang if the proxy never answers.
func proxy(t *testing.T, originURL string) (string, *http.Client) {
	t.Helper()
	u, _ := url.Parse(originURL)
	p := httptest.NewServer(protect.New(protect.Config{Origin: u, Room: "sale", OpenPaths: []string{"/"}, API: http.NotFoundHandler()}))
	t.Cleanup(p.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return p.URL, &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func fetch(t *testing.T, c *http.Client, method, u string, body io.Reader) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, u, body)
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, u, err)
	}
	return res.StatusCode, string(b), res.Header
}

// TestOriginConnections checks how the proxy talks to the origin: answers of every framing come
// through and leave their connection for the next request; a connection the origin closed while idle
// is replaced without the visitor noticing; "Connection: close" is honoured; bodies and early hints
// pass.
func TestOriginConnections(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "fixed")
		case "/chunked":
			io.WriteString(w, strings.Repeat("x", 3000))
			w.(http.Flusher).Flush()
			io.WriteString(w, "end")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/not-modified":
			w.WriteHeader(http.StatusNotModified)
		case "/hints":
			w.Header().Set("Link", "</app.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "after hints")
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "closing")
		case "/post":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s", r.Method, b)
		default:
			fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
		}
	})
	base, c := proxy(t, o.URL)

	cases := []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/length", 200, "fixed"},
		{"GET", "/chunked", 200, strings.Repeat("x", 3000) + "end"},
		{"GET", "/empty", 204, ""},
		{"GET", "/not-modified", 304, ""},
		{"HEAD", "/length", 200, ""},
		{"GET", "/hints", 200, "after hints"},
		{"GET", "/a?b=c", 200, "GET /a"},
	}
	for range 3 {
		for _, tc := range cases {
			if code, body, _ := fetch(t, c, tc.method, base+tc.path, nil); code != tc.code || body != tc.body {
				t.Fatalf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, body, tc.code, tc.body)
			}
		}
	}
	if n := o.conns.Load(); n != 1 {
		t.Fatalf("%d requests in a row took %d connections to the origin, want 1", 3*len(cases), n)
	}
	var hints []string // the early hints reach the visitor
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, " ", h.Get("Link")))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", base+"/hints", nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if len(hints) != 1 || hints[0] != "103 </app.css>; rel=preload" {
		t.Fatalf("early hints through the proxy: %q", hints)
	}

	o.closeIdle()
	time.Sleep(10 * time.Millisecond) // let the close reach the proxy's side
	if code, body, _ := fetch(t, c, "GET", base+"/again", nil); code != 200 || body != "GET /again" {
		t.Fatalf("after the origin closed the kept connection: %d %q", code, body)
	}
	if n := o.conns.Load(); n != 2 {
		t.Fatalf("%d connections after the origin closed one, want 2", n)
	}

	for range 2 {
		if code, body, _ := fetch(t, c, "GET", base+"/close", nil); code != 200 || body != "closing" {
			t.Fatalf("Connection: close: %d %q", code, body)
		}
	}
	if code, body, _ := fetch(t, c, "GET", base+"/after-close", nil); code != 200 || body != "GET /after-close" {
		t.Fatalf("after Connection: close: %d %q", code, body)
	}
	if n := o.conns.Load(); n != 4 {
		t.Fatalf("%d connections after two answers that close theirs and one more, want 4", n) // each /close ends its own
	}
	if code, body, _ := fetch(t, c, "POST", base+"/post", strings.NewReader("a body")); code != 200 || body != "POST a body" {
		t.Fatalf("a POST: %d %q", code, body)
	}
}

// TestOriginUnderACrowd sends many visitors' requests at once: every one gets its own answer, and the
// proxy opens no more connections to the origin than requests were in flight.
func TestOriginUnderACrowd(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("n"))
	})
	base, c := proxy(t, o.URL)
	const visitors, each = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, visitors)
	for v := range visitors {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprint(v*each + i)
				res, err := c.Get(base + "/?n=" + want)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("visitor %d asked for %s, got %q %v", v, want, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := o.conns.Load(); n > visitors {
		t.Fatalf("%d connections to the origin for %d visitors at a time", n, visitors)
	}
}

// TestVisitorLeavesAStream checks that a visitor who goes away in the middle of a streamed answer ends
// the origin's request too, and that the connection is not reused for someone else.
func TestVisitorLeavesAStream(t *testing.T) {
	gone := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(5 * time.Second):
		}
	})
	base, c := proxy(t, o.URL)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/stream", nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first\n"))
	if _, err := io.ReadFull(res.Body, first); err != nil {
		t.Fatal(err)
	}
	cancel()
	res.Body.Close()
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("the origin's request went on after the visitor left")
	}
	if code, body, _ := fetch(t, c, "GET", base+"/next", nil); code != 200 || body != "ok" {
		t.Fatalf("the next request: %d %q", code, body)
	}
	if n := o.conns.Load(); n != 2 {
		t.Fatalf("%d connections to the origin, want 2: the abandoned one must not be reused", n)
	}
}

// TestOriginDown answers 502 with the JSON error when the origin does not listen.
func TestOriginDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base, c := proxy(t, "http://"+addr)
	code, body, _ := fetch(t, c, "GET", base+"/", nil)
	if code != http.StatusBadGateway || !strings.Contains(body, `"code":"origin_unavailable"`) {
		t.Fatalf("origin down: %d %q", code, body)
	}
}

// TestIdleConnectionsAreClosed checks that connections to the origin idle for longer than the proxy
// keeps them are closed, including those a burst opened that later requests no longer need.
func TestIdleConnectionsAreClosed(t *testing.T) {
	defer protect.KeepIdle(400 * time.Millisecond)()
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	})
	base, c := proxy(t, o.URL)
	var wg sync.WaitGroup
	for range 2 { // a burst: two connections at once
		wg.Go(func() {
			res, err := c.Get(base + "/slow")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	for o.conns.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	time.Sleep(250 * time.Millisecond)
	fetch(t, c, "GET", base+"/", nil) // takes the most recent connection
	time.Sleep(250 * time.Millisecond)
	fetch(t, c, "GET", base+"/", nil) // the other one has been idle for 500 ms by now
	live := func() (n int) {
		o.live.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	for deadline := time.Now().Add(2 * time.Second); live() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the origin still open, want 1 (of %d opened)", live(), o.conns.Load())
		}
	}
}

// TestOriginOutOfStep runs the proxy against an origin that misbehaves on the wire: bytes after an
// answer's end must not be read as the next visitor's answer, and an origin that sends informational
// answers without end gets a 502, not a proxy stuck reading them.
func TestOriginOutOfStep(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var open sync.Map // net.Conn -> struct{}
	var wg sync.WaitGroup
	defer func() { // the proxy may still hold a connection: close the origin's side too
		ln.Close()
		open.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	}()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			open.Store(c, struct{}{})
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					switch {
					case strings.HasPrefix(string(buf[:n]), "GET /hints "):
						for range 10 {
							io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
						}
					default: // an answer, then bytes nobody asked for
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")
					}
				}
			})
		}
	})
	base, c := proxy(t, "http://"+ln.Addr().String()) // a proxy stuck reading hints fails, not hangs
	for range 3 {
		if code, body, _ := fetch(t, c, "GET", base+"/", nil); code != 200 || body != "ok" {
			t.Fatalf("an answer followed by stray bytes: %d %q", code, body)
		}
	}
	if n := accepted.Load(); n != 3 {
		t.Fatalf("%d connections for three answers followed by stray bytes, want 3: none may be kept", n)
	}
	if code, body, _ := fetch(t, c, "GET", base+"/hints", nil); code != http.StatusBadGateway || !strings.Contains(body, "origin_unavailable") {
		t.Fatalf("endless informational answers: %d %q", code, body)
	}
}
