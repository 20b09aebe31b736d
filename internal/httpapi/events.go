package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
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
	// nearFront is the position up to which a visitor gets every room-wide refresh; visitors further
	// back get one every farRefresh, since their position moves by tiny fractions.
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
	ctx := r.Context()
	sub, err := s.rooms.Subscribe(ctx, id, vid)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout is for request bodies, not streams
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var last []byte
	var lastWrite, lastRefresh time.Time
	send := func(p []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
		if _, err := w.Write(p); err != nil {
			return false
		}
		lastWrite = time.Now()
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	position := int64(0)
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
				if !send(p) {
					return
				}
				last = p
			}
			position, lastRefresh = v.Position, time.Now()
		}
		if time.Since(lastWrite) >= keepAlive && !send([]byte(": keep-alive\n\n")) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.draining:
			return
		case <-sub.Done():
			s.sendFinal(send, id, vid)
			return
		case <-sub.Personal():
			refresh = true
		case <-changed:
			refresh = position <= nearFront || time.Since(lastRefresh) >= farRefresh
		}
	}
}

// sendFinal tells a stream whose room went away that the visitor is no longer in it.
func (s *Server) sendFinal(send func([]byte) bool, id, vid string) {
	if p, err := s.event(id, vid, room.View{Status: room.Status{State: room.StateNone}}); err == nil {
		send(p)
	}
}

func (s *Server) event(id, vid string, v room.View) ([]byte, error) {
	b, err := s.body(id, vid, v)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(data) + 24)
	buf.WriteString("event: status\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	return buf.Bytes(), nil
}
