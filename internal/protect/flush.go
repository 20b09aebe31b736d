package protect

import (
	"context"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"
)

// flushDelay is how long the proxy may hold a part of an answer of unknown length before it sends it.
// It bounds the lag a long poll or a stream that is not an event stream gets through the proxy. A
// variable for tests only.
var flushDelay = time.Millisecond

// batched is the ResponseWriter ReverseProxy writes an origin's answer to. ReverseProxy cannot tell a
// page whose length the origin did not announce from a stream, so it flushes such answers at once: the
// headers from a timer of their own, then every read of the origin. Each flush is a system call and a
// packet the visitor's side must wake for, and a page rendered in one go went out in three of them
// (headers, body, the last chunk). batched holds those flushes for at most flushDelay and drops them
// when the answer ends first, so such a page leaves in one write and a stream part by part. Event
// streams are flushed at once, as ReverseProxy asks.
//
// The flush timer runs beside the handler, so writes and flushes share a lock, and end (called when the
// origin's body is closed, before ReverseProxy touches the headers again for trailers, and when the
// handler returns) stops any later flush.
type batched struct {
	http.ResponseWriter
	stream bool      // an event stream: flush at once
	start  time.Time // when the request left for the origin

	mu      sync.Mutex
	timer   *time.Timer
	pending bool
	ended   bool
}

type batchedKey struct{}

// serve runs proxy with w batched, so that ModifyResponse (endOnClose) can find it, and the request's
// body, if any, read as an upload.
func serve(proxy http.Handler, w http.ResponseWriter, r *http.Request) {
	b := &batched{ResponseWriter: w, start: time.Now()}
	defer b.end()
	ctx := context.WithValue(r.Context(), batchedKey{}, b)
	var u *upload
	if r.Body != nil && r.Body != http.NoBody {
		u = &upload{ReadCloser: r.Body, rc: http.NewResponseController(w)}
		ctx = context.WithValue(ctx, uploadKey{}, u)
	}
	out := r.WithContext(ctx)
	if u != nil {
		out.Body = u
	}
	proxy.ServeHTTP(b, out)
}

// endOnClose makes closing the origin's body end the batching of the answer it belongs to. A switch of
// protocols keeps its body, which is the connection ReverseProxy hands over to the WebSocket.
func endOnClose(res *http.Response) error {
	if res.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	if b, ok := res.Request.Context().Value(batchedKey{}).(*batched); ok {
		res.Body = &endingBody{ReadCloser: res.Body, b: b}
	}
	return nil
}

// WriteHeader notes whether the answer is an event stream; it runs before any flush is asked for.
func (b *batched) WriteHeader(code int) {
	ct, _, _ := mime.ParseMediaType(b.Header().Get("Content-Type"))
	b.stream = ct == "text/event-stream"
	b.ResponseWriter.WriteHeader(code)
}

// Write passes p on, under the lock a delayed flush takes.
func (b *batched) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController calls for ReverseProxy's flushes. Once the origin's body
// is closed, flushes are ReverseProxy's own (the one that keeps trailers) and go through.
func (b *batched) FlushError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stream || b.ended {
		return http.NewResponseController(b.ResponseWriter).Flush()
	}
	if !b.pending {
		b.pending = true
		if b.timer == nil {
			b.timer = time.AfterFunc(flushDelay, b.flush)
		} else {
			b.timer.Reset(flushDelay)
		}
	}
	return nil
}

func (b *batched) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.pending || b.ended {
		return
	}
	b.pending = false
	_ = http.NewResponseController(b.ResponseWriter).Flush()
}

// end drops a pending flush: the server sends what is left when the handler returns.
func (b *batched) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// Unwrap lets http.ResponseController reach the connection (WebSocket hijacks, deadlines).
func (b *batched) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// endingBody is an origin's body whose Close ends the batching of its answer.
type endingBody struct {
	io.ReadCloser
	b *batched
}

func (e *endingBody) Close() error {
	e.b.end()
	return e.ReadCloser.Close()
}
