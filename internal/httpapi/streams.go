package httpapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStreamsPerAddress is how many event streams and live feeds one client address may hold open
// at once when Config.StreamsPerAddress is zero. It leaves room for a household or an office behind one
// address, and bounds what a single script can make the server hold.
const DefaultStreamsPerAddress = 100

// retryHint is an event stream's first line: how long the browser waits before it reconnects once the
// stream ends, drawn for each stream between reconnectFrom and reconnectFrom+reconnectSpread. An
// instance that stops (drained by a deploy, or dead) ends all its streams in one moment; with one wait
// for all, every page would come back to the other instances in the same instant, thousands of
// requests at once, on every deploy.
func retryHint() []byte {
	return fmt.Appendf(nil, "retry: %d\n\n", (reconnectFrom + rand.N(reconnectSpread)).Milliseconds())
}

const (
	reconnectFrom   = time.Second
	reconnectSpread = 3 * time.Second
)

// streamsPerVisitor bounds one visitor's event streams at once, over all rooms: a few tabs. A stream
// past it ends the visitor's oldest, since a reloaded page leaves its old stream open until the next
// write finds it gone.
const streamsPerVisitor = 4

// streamLimits counts open streams per client address and per visitor.
type streamLimits struct {
	perAddr int

	mu       sync.Mutex
	addrs    map[string]int
	visitors map[string][]*streamSlot // oldest first
}

// streamSlot is one open stream's place in the counts. kick is closed when a newer stream of the same
// visitor has taken it over; the stream then ends.
type streamSlot struct {
	addr, visitor string
	kick          chan struct{}

	mu     sync.Mutex
	kickFn func() // tells whoever writes the stream that it was kicked; set once it is attached
}

// onKick sets what a kick does beyond closing kick; it runs at once if the kick came first.
func (s *streamSlot) onKick(fn func()) {
	s.mu.Lock()
	s.kickFn = fn
	s.mu.Unlock()
	if s.kicked() {
		fn()
	}
}

// kicked reports whether a newer stream of the visitor has taken the slot over.
func (s *streamSlot) kicked() bool {
	select {
	case <-s.kick:
		return true
	default:
		return false
	}
}

// doKick ends the slot's stream; called once, with the limits' lock held, so fn must not block.
func (s *streamSlot) doKick() {
	close(s.kick)
	s.mu.Lock()
	fn := s.kickFn
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func newStreamLimits(perAddr int) *streamLimits {
	if perAddr <= 0 {
		perAddr = DefaultStreamsPerAddress
	}
	return &streamLimits{perAddr: perAddr, addrs: make(map[string]int), visitors: make(map[string][]*streamSlot)}
}

// acquire takes a slot for a stream from addr, of visitor ("" for a public feed). It fails when the
// address holds its bound already; a visitor at its bound instead loses its oldest stream.
func (l *streamLimits) acquire(addr, visitor string) (*streamSlot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs[addr] >= l.perAddr {
		return nil, false
	}
	l.addrs[addr]++
	slot := &streamSlot{addr: addr, visitor: visitor, kick: make(chan struct{})}
	if visitor != "" {
		held := append(l.visitors[visitor], slot)
		if len(held) > streamsPerVisitor {
			held[0].doKick()
			held = held[1:]
		}
		l.visitors[visitor] = held
	}
	return slot, true
}

// release gives a slot back; it is called once per acquired slot, kicked or not.
func (l *streamLimits) release(slot *streamSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs[slot.addr]--; l.addrs[slot.addr] <= 0 {
		delete(l.addrs, slot.addr)
	}
	if slot.visitor == "" {
		return
	}
	held := l.visitors[slot.visitor]
	for i, s := range held {
		if s == slot {
			held = append(held[:i:i], held[i+1:]...)
			break
		}
	}
	if len(held) == 0 {
		delete(l.visitors, slot.visitor)
	} else {
		l.visitors[slot.visitor] = held
	}
}

// feed is the status of one visitor in one room, written to every event stream the visitor holds in
// it by one goroutine (runFeed): a change is read from the store and signed once however many tabs
// are open, the room holds one subscription for the visitor, and an idle stream costs its connection
// and no goroutine of its own. The streams of one visitor are written one after another, so a stalled
// tab (bounded by writeWait) can delay only its own visitor's other tabs.
type feed struct {
	key   string
	refs  int           // streams attached or attaching, guarded by Server.feedsMu
	ended atomic.Bool   // no stream attaches any more: the feed has stopped or is stopping
	wake  chan struct{} // a stream of the feed was kicked (capacity 1)
	stop  context.CancelFunc

	mu   sync.Mutex // guards outs, last and note, and serialises the writes to the streams
	outs []*streamOut
	last []byte // the latest event, nil before the first
	note []byte // the latest announcement, nil before the first
}

// streamOut is one event stream attached to a feed.
type streamOut struct {
	es   *eventStream
	slot *streamSlot
	done chan struct{} // closed when the stream has ended, for a handler that serves it
}

func newFeed(key string, stop context.CancelFunc) *feed {
	return &feed{key: key, wake: make(chan struct{}, 1), stop: stop}
}

// attach starts a stream on the feed with the retry hint and the latest event; false if the feed has
// ended or the first write failed, and then the stream is already finished.
func (s *Server) attach(f *feed, out *streamOut) bool {
	out.slot.onKick(func() {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := !f.ended.Load() && out.es.send(retryHint()) && (f.note == nil || out.es.send(f.note)) &&
		(f.last == nil || out.es.send(f.last))
	if !ok {
		s.finish(f, out)
		return false
	}
	f.outs = append(f.outs, out)
	return true
}

// What broadcast writes.
const (
	sendEvent     = iota // an event, to every stream; new streams start with it
	sendNote             // an announcement, to every stream; new streams start with it too
	sendKeepAlive        // a keep-alive comment, to the streams silent for half of keepAlive
	sendNothing          // nothing: only the kicked streams are finished
)

// broadcast writes p to the feed's streams as kind says, finishing those whose write fails and those
// that were kicked.
func (s *Server) broadcast(f *feed, p []byte, kind int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch kind {
	case sendEvent:
		f.last = p
	case sendNote:
		f.note = p
	}
	kept := f.outs[:0]
	for _, out := range f.outs {
		switch {
		case out.slot.kicked():
		case kind == sendNothing || kind == sendKeepAlive && time.Since(out.es.lastWrite) < keepAlive/2:
			kept = append(kept, out)
			continue
		case out.es.send(p):
			kept = append(kept, out)
			continue
		}
		s.finish(f, out)
	}
	clear(f.outs[len(kept):])
	f.outs = kept
}

// detach finishes a stream its handler stopped serving, if the feed has not finished it already.
func (s *Server) detach(f *feed, out *streamOut) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.outs {
		if o == out {
			f.outs = append(f.outs[:i], f.outs[i+1:]...)
			s.finish(f, out)
			return
		}
	}
}

// endFeed stops taking streams and finishes every stream of the feed, after its last event.
func (s *Server) endFeed(f *feed) {
	f.ended.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, out := range f.outs {
		s.finish(f, out)
	}
	f.outs = nil
}

// finish ends one stream, with f.mu held: its connection closes, its slot and its share of the feed
// are given back. It runs once per stream.
func (s *Server) finish(f *feed, out *streamOut) {
	out.es.close()
	close(out.done)
	s.limits.release(out.slot)
	s.leaveFeed(f)
}
