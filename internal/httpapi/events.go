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
// the room is deleted or the server drains. Streams are bounded per client address (429
// too_many_streams) and per visitor (a new stream past the bound ends the visitor's oldest), and all
// of a visitor's streams in a room share one feed, which reads and signs each change once.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, vid, ok := s.visitorCall(w, r)
	if !ok {
		return
	}
	slot, ok := s.limits.acquire(s.clientAddr(r), vid)
	if !ok {
		s.writeError(w, r, apiError(http.StatusTooManyRequests, codeTooManyStreams, "too many event streams from this address; close some and retry"))
		return
	}
	f, err := s.joinFeed(r.Context(), id, vid)
	if err != nil {
		s.limits.release(slot)
		s.writeError(w, r, err)
		return
	}
	es, ok := openStream(w)
	out := &streamOut{es: es, slot: slot, done: make(chan struct{})}
	if !ok {
		es.close()
		s.limits.release(slot)
		s.leaveFeed(f)
		return
	}
	if !s.attach(f, out) || es.conn != nil {
		// A taken-over connection is the feed's now: net/http drops the request, its response buffers
		// and the handler's grown stack, and no goroutine waits on the idle stream.
		return
	}
	select { // served through the ResponseWriter, which lives only as long as this handler
	case <-out.done:
	case <-r.Context().Done():
		s.detach(f, out)
	case <-slot.kick:
		s.detach(f, out)
	}
}

// joinFeed returns the running feed of the visitor in the room, starting one if there is none. The
// caller must attach a stream to it or leaveFeed it.
func (s *Server) joinFeed(ctx context.Context, id, vid string) (*feed, error) {
	key := id + "\x00" + vid
	s.feedsMu.Lock()
	if f := s.feeds[key]; f != nil && !f.ended.Load() {
		f.refs++
		s.feedsMu.Unlock()
		return f, nil
	}
	s.feedsMu.Unlock()
	sub, err := s.rooms.Subscribe(ctx, id, vid)
	if err != nil {
		return nil, err
	}
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	if f := s.feeds[key]; f != nil && !f.ended.Load() { // another stream of the visitor started it meanwhile
		sub.Close()
		f.refs++
		return f, nil
	}
	fctx, stop := context.WithCancel(s.streamCtx)
	f := newFeed(key, stop)
	f.refs = 1
	s.feeds[key] = f
	s.streams.Go(func() { s.runFeed(fctx, f, sub, id, vid) })
	return f, nil
}

// leaveFeed gives back a stream's share of its feed; the last to leave stops it.
func (s *Server) leaveFeed(f *feed) {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	if f.refs--; f.refs > 0 {
		return
	}
	f.ended.Store(true)
	if s.feeds[f.key] == f {
		delete(s.feeds, f.key)
	}
	f.stop()
}

// runFeed reads the visitor's status whenever it may have changed and writes it to the feed's
// streams, until the last stream leaves, the room is deleted, the store fails or the server drains;
// then it ends every stream still open.
func (s *Server) runFeed(ctx context.Context, f *feed, sub *room.Subscription, id, vid string) {
	defer s.endFeed(f)
	defer sub.Close()
	keep := time.NewTicker(keepAlive / 2) // so no stream is silent for keepAlive
	defer keep.Stop()
	var last []byte
	var lastRefresh time.Time
	waiting, position := false, int64(0)
	message := "" // the line's message as the streams last heard it
	refresh := true
	var changed <-chan struct{}
	var epoch uint64
	for {
		if refresh {
			// Taken before reading, so that no change slips between the read and the wait; and only
			// then, so that one made while the loop sends a keep-alive or finishes a kicked stream
			// still wakes it.
			changed, epoch = sub.Changed(), sub.Epoch()
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
			if (v.State == room.StateWaiting || v.State == room.StateSoldOut) && v.Message != message {
				// Its own event, sent when it changes, rather than a field of every status: a message
				// may be a thousand times a status's size, and a crowd gets a status a second.
				message = v.Message
				s.broadcast(f, announcement(message), sendNote)
			}
			if !bytes.Equal(p, last) {
				s.broadcast(f, p, sendEvent)
				last = p
			}
			waiting, position, lastRefresh = v.State == room.StateWaiting, v.Position, time.Now()
		}
		refresh = false
		select {
		case <-ctx.Done():
			return
		case <-sub.Done():
			if p, err := s.event(id, vid, room.View{Status: room.Status{State: room.StateNone}}); err == nil && !bytes.Equal(p, last) {
				s.broadcast(f, p, sendEvent) // the room went away: the visitor is no longer in it
			}
			return
		case <-sub.Personal():
			refresh = true
		case <-changed:
			// Room-wide movement changes only the view of a waiting visitor; anything that happens to
			// an admission is pushed personally. Re-reading an admitted visitor on every broadcast
			// signed its token again each time, which with thousands admitted at once delayed them all.
			// A change to everyone (a sell-out, a new link or message) is read whatever the pace.
			refresh = waiting && position <= nearFront || time.Since(lastRefresh) >= farRefresh || sub.Epoch() != epoch
			if !refresh {
				changed = sub.Changed()
			}
		case <-keep.C:
			s.broadcast(f, []byte(": keep-alive\n\n"), sendKeepAlive)
		case <-f.wake:
			s.broadcast(f, nil, sendNothing) // finishes the kicked streams
		}
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

// announcement is the event that tells a line its room's message, "" when it has none any more.
func announcement(message string) []byte {
	buf := append(make([]byte, 0, 64+len(message)), `event: announcement`+"\ndata: "+`{"message":`...)
	buf = appendString(buf, message)
	return append(buf, "}\n\n"...)
}

func (s *Server) event(id, vid string, v room.View) ([]byte, error) {
	b, err := s.body(id, vid, v)
	if err != nil {
		return nil, err
	}
	buf := append(make([]byte, 0, 512), "event: status\ndata: "...)
	return append(b.appendJSON(buf), "\n\n"...), nil
}
