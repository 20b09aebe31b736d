package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

const (
	// writeWait bounds each write to a stream; a client that cannot take an event in this time is
	// dropped, and reconnects, rather than holding a goroutine hostage.
	writeWait = 10 * time.Second
	// keepAlive is the longest a stream stays silent, so that proxies do not time it out.
	keepAlive = 25 * time.Second
	// nearFront is the position up to which a waiting visitor gets every room-wide refresh; visitors
	// further back, and those not waiting, get one every farRefresh, since their view moves by tiny
	// fractions or only by what is pushed to them personally.
	nearFront  = 100
	farRefresh = 5 * time.Second
)

// events streams the visitor's status as Server-Sent Events: one event at once, one on every change
// (the visitor's own change at once, room movement at most once a second), until the client goes,
// the room is deleted or the server drains.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, vid, ok := s.visitorCall(w, r)
	if !ok {
		return
	}
	sub, err := s.rooms.Subscribe(r.Context(), id, vid)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, ok := openStream(w)
	if !ok {
		sub.Close()
		return
	}
	if out.conn == nil {
		s.stream(r.Context(), out, sub, id, vid)
		return
	}
	// The connection is ours now: serve it from a fresh goroutine and let net/http drop the request,
	// its response buffers and the handler's grown stack.
	s.streams.Go(func() { s.stream(s.streamCtx, out, sub, id, vid) })
}

// stream runs one event stream until the client goes, the room is deleted or the server drains.
func (s *Server) stream(ctx context.Context, out *eventStream, sub *room.Subscription, id, vid string) {
	defer sub.Close()
	defer out.close()
	var last []byte
	var lastRefresh time.Time
	if !out.send([]byte("retry: 2000\n\n")) {
		return
	}
	waiting, position := false, int64(0)
	refresh := true
	for {
		changed := sub.Changed() // taken before reading, so no change slips between read and wait
		if refresh {
			v, err := s.rooms.Status(ctx, id, vid)
			if errors.Is(err, room.ErrNotFound) {
				v, err = room.View{Status: room.Status{State: room.StateNone}}, nil
			}
			if err != nil {
				return
			}
			p, err := s.event(id, vid, v)
			if err != nil {
				return
			}
			if !bytes.Equal(p, last) {
				if !out.send(p) {
					return
				}
				last = p
			}
			waiting, position, lastRefresh = v.State == room.StateWaiting, v.Position, time.Now()
		}
		if time.Since(out.lastWrite) >= keepAlive && !out.send([]byte(": keep-alive\n\n")) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.streamCtx.Done():
			return
		case <-sub.Done():
			s.sendFinal(out, id, vid)
			return
		case <-sub.Personal():
			refresh = true
		case <-changed:
			// Room-wide movement changes only the view of a waiting visitor; anything that happens to
			// an admission is pushed personally. Re-reading an admitted visitor on every broadcast
			// signed its token again each time, which with thousands admitted at once delayed them all.
			refresh = waiting && position <= nearFront || time.Since(lastRefresh) >= farRefresh
		}
	}
}

// sendFinal tells a stream whose room went away that the visitor is no longer in it.
func (s *Server) sendFinal(out *eventStream, id, vid string) {
	if p, err := s.event(id, vid, room.View{Status: room.Status{State: room.StateNone}}); err == nil {
		out.send(p)
	}
}

// eventStream writes events to one client. On HTTP/1.1 it takes over the connection: net/http's
// per-connection buffers and its background reader are released, which is most of what an idle stream
// would otherwise cost (10,000 idle streams must stay under 20 KiB each). A client that went away is
// noticed at the next write, at the latest after keepAlive. Where the connection cannot be taken over
// (HTTP/2, tests' recorders) it streams through the ResponseWriter with explicit flushes.
type eventStream struct {
	conn      net.Conn // set when hijacked
	w         http.ResponseWriter
	rc        *http.ResponseController
	lastWrite time.Time
}

const streamHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n" +
	"X-Accel-Buffering: no\r\nConnection: close\r\n\r\n"

func openStream(w http.ResponseWriter) (*eventStream, bool) {
	rc := http.NewResponseController(w)
	if conn, _, err := rc.Hijack(); err == nil {
		es := &eventStream{conn: conn}
		return es, es.send([]byte(streamHeader))
	}
	_ = rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout is for request bodies, not streams
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: rc}, true
}

func (es *eventStream) send(p []byte) bool {
	deadline := time.Now().Add(writeWait)
	es.lastWrite = time.Now()
	if es.conn != nil {
		_ = es.conn.SetWriteDeadline(deadline)
		_, err := es.conn.Write(p)
		return err == nil
	}
	_ = es.rc.SetWriteDeadline(deadline)
	if _, err := es.w.Write(p); err != nil {
		return false
	}
	return es.rc.Flush() == nil
}

func (es *eventStream) close() {
	if es.conn != nil {
		_ = es.conn.Close()
	}
}

func (s *Server) event(id, vid string, v room.View) ([]byte, error) {
	b, err := s.body(id, vid, v)
	if err != nil {
		return nil, err
	}
	buf := append(make([]byte, 0, 512), "event: status\ndata: "...)
	return append(b.appendJSON(buf), "\n\n"...), nil
}
