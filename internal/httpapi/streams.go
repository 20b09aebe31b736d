package httpapi

import (
	"context"
	"sync"
)

// DefaultStreamsPerAddress is how many event streams and live feeds one client address may hold open
// at once when Config.StreamsPerAddress is zero. It leaves room for a household or an office behind one
// address, and bounds what a single script can make the server hold.
const DefaultStreamsPerAddress = 100

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
			close(held[0].kick)
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

// feed is the status of one visitor in one room as its event streams send it. All of a visitor's
// streams in a room read one feed, so a change is read from the store and signed once however many
// tabs are open, and the room holds one subscription for the visitor.
type feed struct {
	key  string
	refs int // streams reading it, guarded by Server.feedsMu

	mu      sync.Mutex
	payload []byte        // the latest event, nil before the first
	version uint64        // counts payloads
	changed chan struct{} // closed and replaced at each payload
	ended   chan struct{} // closed when the feed stops: the room went, the store failed or the server drains

	stop context.CancelFunc
}

func newFeed(key string, stop context.CancelFunc) *feed {
	return &feed{key: key, changed: make(chan struct{}), ended: make(chan struct{}), stop: stop}
}

// latest returns the latest payload with its version, and the channels that announce the next change
// and the end.
func (f *feed) latest() ([]byte, uint64, <-chan struct{}, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.payload, f.version, f.changed, f.ended
}

func (f *feed) publish(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.payload = p
	f.version++
	close(f.changed)
	f.changed = make(chan struct{})
}

// end is called once, by the feed's goroutine, when it stops.
func (f *feed) end() { close(f.ended) }

// isEnded reports whether the feed has stopped.
func (f *feed) isEnded() bool {
	select {
	case <-f.ended:
		return true
	default:
		return false
	}
}
