package protect

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"
)

// transport carries requests to the origin. A crowd's requests are almost all GETs without a body; for
// those it writes the request and reads the answer on the handler's own goroutine, over a connection
// kept from an earlier answer. http.Transport hands each request to a writing and a reading goroutine
// of the connection and back, and reads once more after every answer to notice a closed connection; on
// a one-core proxy that was 14 µs of the 95 a proxied page cost. Everything else (bodies, WebSocket
// upgrades, https) goes through http.Transport.
type transport struct {
	addr     string // the origin's host:port
	fallback http.RoundTripper
	dialer   net.Dialer

	mu   sync.Mutex
	idle []*originConn // the most recently used last
}

// maxIdle bounds the connections kept to the origin: as many as a crowd keeps busy.
const maxIdle = 1024

// idleTimeout closes connections idle for longer than an origin's own idle timeout is likely to be. A
// variable for tests only.
var idleTimeout = 30 * time.Second

// errStale reports a kept connection the origin closed while it was idle: the request is sent again on
// a new one, which is safe since only requests without a body take this way.
var errStale = errors.New("the origin closed a kept connection")

type originConn struct {
	net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// direct reports whether req takes the handler's goroutine: a GET or HEAD without a body or an upgrade,
// over plain HTTP.
func direct(req *http.Request) bool {
	return req.URL.Scheme == "http" && (req.Method == http.MethodGet || req.Method == http.MethodHead) &&
		(req.Body == nil || req.Body == http.NoBody) && len(req.Header["Upgrade"]) == 0
}

// RoundTrip sends req to the origin and returns its answer, whose body gives the connection back when
// it is read to the end and closed.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !direct(req) {
		return t.fallback.RoundTrip(req)
	}
	for {
		c, kept, err := t.conn(req.Context())
		if err != nil {
			return nil, err
		}
		res, err := t.roundTrip(c, req)
		if err == nil {
			return res, nil
		}
		c.Close()
		if !kept || !errors.Is(err, errStale) {
			return nil, err
		}
	}
}

// conn returns a kept connection, or a new one; kept reports which.
func (t *transport) conn(ctx context.Context) (c *originConn, kept bool, err error) {
	now := time.Now()
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		c = t.idle[n-1]
		t.idle = t.idle[:n-1]
		if now.Sub(c.idleSince) < idleTimeout {
			t.mu.Unlock()
			return c, true, nil
		}
		// The most recent is too old, so all are: close them.
		stale := append(t.idle, c)
		t.idle = nil
		t.mu.Unlock()
		for _, c := range stale {
			c.Close()
		}
	} else {
		t.mu.Unlock()
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, err
	}
	return &originConn{Conn: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, false, nil
}

// keep puts c back for a later request, and closes the connections idle for too long: requests take
// the most recent ones, so the oldest would otherwise stay open for good.
func (t *transport) keep(c *originConn) {
	now := time.Now()
	c.idleSince = now
	var stale []*originConn
	t.mu.Lock()
	for len(t.idle) > 0 && now.Sub(t.idle[0].idleSince) >= idleTimeout {
		stale = append(stale, t.idle[0])
		t.idle = t.idle[1:]
	}
	if len(t.idle) < maxIdle {
		t.idle = append(t.idle, c)
	} else {
		stale = append(stale, c)
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
}

// maxInformational bounds the 1xx answers read before the answer itself, as http.Transport does.
const maxInformational = 5

// aLongTimeAgo is a deadline that makes a blocked read or write return at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *transport) roundTrip(c *originConn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// A visitor who goes away ends the origin's request too: the deadline unblocks the read, and the
	// connection is closed rather than kept.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(errors.Join(errStale, err))
	}
	if _, err := c.br.Peek(1); err != nil {
		return fail(errors.Join(errStale, err)) // not a byte of an answer: the origin closed the connection
	}
	for informational := 0; ; informational++ {
		res, err := http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err)
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			if informational == maxInformational {
				return fail(errors.New("the origin sent too many informational answers"))
			}
			// 100 Continue or 103 Early Hints: the answer follows. ReverseProxy's trace passes hints on.
			if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.Got1xxResponse != nil {
				if err := trace.Got1xxResponse(res.StatusCode, textproto.MIMEHeader(res.Header)); err != nil {
					return fail(err)
				}
			}
			continue
		}
		res.Body = &originBody{ReadCloser: res.Body, ctx: ctx, t: t, c: c, stop: stop, reuse: !res.Close && !req.Close,
			ended: res.Body == http.NoBody}
		return res, nil
	}
}

// originBody is an answer's body; closing it after its end gives the connection back for another
// request, closing it earlier closes the connection (reading the rest could take as long as the origin
// streams).
type originBody struct {
	io.ReadCloser
	ctx    context.Context
	t      *transport
	c      *originConn
	stop   func() bool
	reuse  bool
	ended  bool
	closed bool
}

func (b *originBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	} else if err != nil && b.ctx.Err() != nil {
		err = b.ctx.Err() // the visitor went away: not the origin's failure
	}
	return n, err
}

func (b *originBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	armed := b.stop() // false: the visitor went away and the connection's deadline is spent
	// Bytes after the answer's end were sent unasked: the connection is out of step with the origin.
	if b.ended && b.reuse && armed && b.c.br.Buffered() == 0 {
		_ = b.ReadCloser.Close() // at the end: reads nothing more
		b.t.keep(b.c)
		return nil
	}
	return b.c.Close()
}
