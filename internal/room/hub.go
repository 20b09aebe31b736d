package room

import "sync"

// hub fans a room's changes out to this instance's subscribers. A visitor's own change (admitted,
// expired, released) is pushed to it at once; room-wide movement is broadcast by closing a channel that
// every subscriber waits on, so one broadcast costs one close however many streams are open, and a slow
// stream never blocks the publisher. A subscriber may pace its refreshes on broadcasts (a visitor far
// from the front need not see every step), except after those that count an epoch: every visitor's
// state, or what the line is told, changed at once.
type hub struct {
	mu      sync.Mutex
	subs    map[string]map[*Subscription]struct{}
	changed chan struct{}
	epoch   uint64
	dirty   bool
	closed  bool
}

func newHub() *hub {
	return &hub{subs: make(map[string]map[*Subscription]struct{}), changed: make(chan struct{})}
}

// Subscription delivers pushes for one visitor's stream.
type Subscription struct {
	h        *hub
	visitor  string
	personal chan struct{}
	done     chan struct{}
	once     sync.Once
}

// Personal fires when the visitor's own state may have changed: refresh now.
func (s *Subscription) Personal() <-chan struct{} { return s.personal }

// Changed returns a channel closed at the next room-wide refresh. Take it before reading the status,
// so that a change between the read and the wait is not missed.
func (s *Subscription) Changed() <-chan struct{} {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.changed
}

// Epoch counts the broadcasts after which every subscriber must refresh however recently it did (see
// hub). Take it with Changed: a subscriber that then sees another count refreshes.
func (s *Subscription) Epoch() uint64 {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.epoch
}

// Done is closed when the room is deleted or the service stops.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Close unregisters the subscription; it is idempotent.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if set := s.h.subs[s.visitor]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.h.subs, s.visitor)
		}
	}
	s.end()
}

func (s *Subscription) end() { s.once.Do(func() { close(s.done) }) }

func (h *hub) subscribe(visitor string) *Subscription {
	s := &Subscription{h: h, visitor: visitor, personal: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.end()
		return s
	}
	set := h.subs[visitor]
	if set == nil {
		set = make(map[*Subscription]struct{}, 1)
		h.subs[visitor] = set
	}
	set[s] = struct{}{}
	return s
}

func (h *hub) notify(visitor string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[visitor] {
		select {
		case s.personal <- struct{}{}:
		default: // a refresh is already pending
		}
	}
}

func (h *hub) markDirty() {
	h.mu.Lock()
	h.dirty = true
	h.mu.Unlock()
}

func (h *hub) takeDirty() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.dirty
	h.dirty = false
	return d
}

func (h *hub) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.changed)
	h.changed = make(chan struct{})
}

// refreshAll is a broadcast that starts an epoch: every subscriber refreshes.
func (h *hub) refreshAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
	close(h.changed)
	h.changed = make(chan struct{})
}

// streaming reports whether any visitor streams from this instance.
func (h *hub) streaming() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

func (h *hub) visitors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.subs))
	for v := range h.subs {
		out = append(out, v)
	}
	return out
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, set := range h.subs {
		for s := range set {
			s.end()
		}
	}
	h.subs = make(map[string]map[*Subscription]struct{})
}
