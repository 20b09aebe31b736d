package httpapi_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWaitingPage follows a visitor through the waiting page in English and in Korean: joining third,
// keeping the place over a reload, moving up as the test releases those ahead, telling of a lost
// connection and recovering, and being admitted.
func TestWaitingPage(t *testing.T) {
	for _, lang := range []struct{ code, ahead, lost, turn string }{
		{"en", "2 people are ahead of you.", "Connection lost", "It is your turn"},
		{"ko", "앞에 2명이 있습니다.", "연결이 끊겼습니다", "입장 차례입니다"},
	} {
		t.Run(lang.code, func(t *testing.T) {
			e := setup(t)
			id := "page-" + lang.code
			e.putRoom(id, `{"capacity": 1, "grace": "1h", "idle_timeout": "1h", "page": {"title": "Concert", "brand_color": "#8b2fc9"}}`)
			var tokens []string
			for range 3 {
				j := e.do("POST", "/v1/rooms/"+id+"/join", "", "")
				tokens = append(tokens, j.str("visitor_token"))
			}
			step := func() {
				_, _ = e.svc.Tick(context.Background(), id)
				e.svc.Broadcast(id)
			}
			step() // the first is admitted; two wait
			proxy := newCutter(t, e.srv.Listener.Addr().String())
			ctx := tab(t)
			js := func(expr string) string { return eval[string](t, ctx, expr) }
			shown := func(sel string) string { return js(`(document.querySelector('` + sel + `') || {}).textContent || ''`) }
			if err := chromedp.Do(ctx, chromedp.Navigate(proxy.url+"/r/"+id+"?lang="+lang.code)); err != nil {
				t.Fatal(err)
			}
			until(t, "place 3", func() bool { return shown("#position") == "#3" })
			if got := shown("#ahead"); got != lang.ahead {
				t.Fatalf("ahead: %q", got)
			}
			if got := js(`document.documentElement.lang`); got != lang.code {
				t.Fatalf("page language %q", got)
			}
			screenshot(t, ctx, "waiting-"+lang.code)

			if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
				t.Fatal(err)
			}
			until(t, "place 3 after a reload", func() bool { return shown("#position") == "#3" })

			// Those ahead finish: the page moves up.
			e.do("POST", "/v1/rooms/"+id+"/release", tokens[0], "")
			step()
			until(t, "place 2", func() bool { return shown("#position") == "#2" })
			if pct := js(`document.getElementById('bar').getAttribute('aria-valuenow')`); pct != "50" {
				t.Fatalf("progress %s%%, want 50", pct)
			}

			// The stream is cut: the page says so, and recovers by itself.
			proxy.cut()
			until(t, "the lost-connection notice", func() bool {
				return js(`document.getElementById('lost').hidden ? '' : document.getElementById('lost').textContent`) != ""
			})
			if got := shown("#lost"); !strings.Contains(got, lang.lost) {
				t.Fatalf("notice %q", got)
			}
			screenshot(t, ctx, "waiting-lost-"+lang.code)
			until(t, "the connection to come back", func() bool { return js(`String(document.getElementById('lost').hidden)`) == "true" })

			e.do("POST", "/v1/rooms/"+id+"/status", tokens[1], "")
			e.do("POST", "/v1/rooms/"+id+"/release", tokens[1], "")
			step()
			until(t, "place 1", func() bool { return shown("#position") == "#1" })
			e.do("POST", "/v1/rooms/"+id+"/release", tokens[2], "")
			step()
			until(t, "the admission", func() bool { return shown("#title") == lang.turn })
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
				t.Fatal(err)
			}
			screenshot(t, ctx, "waiting-admitted-phone-"+lang.code)
		})
	}
}

// cutter is a TCP proxy in front of the test server whose connections the test can cut, as a network
// drops them: what a page sees when its stream is lost.
type cutter struct {
	url   string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, backend string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", backend)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); c.cut(); wg.Wait() })
	return c
}

// cut closes every connection through the proxy; new ones are still taken.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}
