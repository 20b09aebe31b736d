package auction

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Watcher is implemented by stores that several instances share. Watch tells, until ctx ends, when the
// auction may have new events that another instance appended, so that this instance's live feeds
// show them at once. The channel is closed when ctx ends or the watch fails.
type Watcher interface {
	Watch(ctx context.Context, id string) <-chan struct{}
}

// Update is an event as live feeds send it, with what it leaves open to bidders, so that a page that
// shows the auction needs no read of it after each event.
type Update struct {
	Event
	// MinNextBid, after a bid, is the least amount a new bidder may offer.
	MinNextBid int64 `json:"min_next_bid,omitempty"`
	// BuyNowPrice, after a bid, is the buy-now price while buy-now is still offered: the auction has a
	// reserve that the bids have not met yet.
	BuyNowPrice *int64 `json:"buy_now_price,omitempty"`
	// ReserveMet, after a bid, says whether the price has reached the reserve (true without one): a
	// page tells bidders that a win needs more.
	ReserveMet *bool `json:"reserve_met,omitempty"`
}

// offer returns what bidders are offered after bid event e under cfg, and whether the reserve is met.
// After a bid the auction has a leader at e.Price, which is all the rules need; the config is final by
// then, since an auction with bids cannot be replaced.
func offer(e Event, cfg Config) (minNext int64, buyNow *int64, reserveMet bool) {
	st := State{Config: cfg, Price: e.Price, Leader: e.Bidder, Bids: 1, EndsAt: e.EndsAt}
	if st.BuyNowAvailable(e.At) {
		buyNow = cfg.BuyNowPrice
	}
	return st.MinNext(), buyNow, st.ReserveMet()
}

// Feed limits.
const (
	// keepEvents bounds the newest events a hub holds for its followers; one further behind (a feed
	// resuming after a long gap) reads the store for itself.
	keepEvents = 1000
	// readPage is how many events a hub reads from the store at a time.
	readPage = 500
)

// hub fans one auction's new events out to its followers on this instance. Whatever their number, a
// change costs one read of the store, and one watch of a shared store brings other instances' changes.
type hub struct {
	followers int
	changed   chan struct{} // closed at the next change
	gen       uint64        // changes published so far
	fresh     uint64        // the gen at which a read last found no more events
	known     bool          // base and tail hold a read
	base      int64         // the sequence number before tail[0]
	tail      []Update      // the newest events read, rising without gaps: tail[i].Seq == base+1+i
	reading   chan struct{} // closed when the read in progress ends; nil when none is
	cfg       *Config       // the config, read once the first bid fixed it
	stop      func()        // ends the watch
}

// Follower is one live feed of an auction on this instance. It shares the instance's reads of the
// auction's events with every other follower of it.
type Follower struct {
	s    *Service
	id   string
	h    *hub
	once sync.Once
}

// Follow starts following an auction's events. Close the follower when the feed ends.
func (s *Service) Follow(id string) *Follower {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hubs[id]
	if h == nil {
		h = &hub{changed: make(chan struct{}), stop: func() {}}
		if w, ok := s.store.(Watcher); ok && s.live != nil {
			ctx, cancel := context.WithCancel(s.live)
			h.stop = cancel
			s.watches.Go(func() { s.watch(ctx, w, id) })
		}
		s.hubs[id] = h
	}
	h.followers++
	return &Follower{s: s, id: id, h: h}
}

// watch forwards the changes of another instance to the auction's followers here, subscribing again
// after a failure.
func (s *Service) watch(ctx context.Context, w Watcher, id string) {
	for ctx.Err() == nil {
		for range w.Watch(ctx, id) {
			s.publish(id)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Close ends following; the last follower of an auction ends its watch.
func (f *Follower) Close() {
	f.once.Do(func() {
		s := f.s
		s.mu.Lock()
		defer s.mu.Unlock()
		if f.h.followers--; f.h.followers == 0 {
			f.h.stop()
			delete(s.hubs, f.id)
		}
	})
}

// Changed returns a channel closed at the auction's next change. Take it before reading events, so
// that none slips between the read and the wait.
func (f *Follower) Changed() <-chan struct{} {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return f.h.changed
}

// Events returns up to limit of the auction's events after the sequence number after, each with what
// it leaves open to bidders. Followers that are up to date share one read of the store per change.
func (f *Follower) Events(ctx context.Context, after int64, limit int) ([]Update, error) {
	s, h := f.s, f.h
	for {
		s.mu.Lock()
		through := h.base + int64(len(h.tail))
		switch {
		case h.reading != nil:
			wait := h.reading
			s.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case h.known && h.fresh == h.gen && after >= h.base && after <= through:
			from := after - h.base
			out := slices.Clone(h.tail[from:min(from+int64(limit), int64(len(h.tail)))])
			s.mu.Unlock()
			return out, nil
		case h.known && h.fresh == h.gen:
			s.mu.Unlock() // outside what the hub holds: this follower reads for itself
			return s.updates(ctx, f.id, h, after, limit)
		default:
			if err := s.readFor(ctx, f.id, h, after, through); err != nil {
				return nil, err
			}
		}
	}
}

// readFor reads the auction's new events into the hub for all its followers. Called with s.mu held, it
// returns with it released.
func (s *Service) readFor(ctx context.Context, id string, h *hub, after, through int64) error {
	gen, from := h.gen, through
	if !h.known {
		from = after
	}
	done := make(chan struct{})
	h.reading = done
	s.mu.Unlock()
	ups, err := s.updates(ctx, id, h, from, readPage)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	h.reading = nil
	if err != nil {
		return err
	}
	switch {
	case !h.known, len(ups) > 0 && ups[0].Seq != from+1: // first read, or numbering that skipped (a deletion)
		h.known, h.base, h.tail = true, from, ups
		if len(ups) > 0 {
			h.base = ups[0].Seq - 1
		}
	default:
		h.tail = append(h.tail, ups...)
	}
	if n := len(h.tail) - keepEvents; n > 0 {
		h.tail = slices.Delete(h.tail, 0, n)
		h.base += int64(n)
	}
	if len(ups) < readPage {
		h.fresh = gen // nothing more as of the change counted at the start of the read
	}
	return nil
}

// updates reads events after after from the store and adds what each bid leaves open to bidders.
func (s *Service) updates(ctx context.Context, id string, h *hub, after int64, limit int) ([]Update, error) {
	evs, err := s.store.Events(ctx, id, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Update, len(evs))
	for i, e := range evs {
		out[i].Event = e
		if e.Kind != EventBid {
			continue
		}
		cfg, err := s.fixedConfig(ctx, id, h)
		if err != nil {
			return nil, err
		}
		var met bool
		out[i].MinNextBid, out[i].BuyNowPrice, met = offer(e, cfg)
		out[i].ReserveMet = &met
	}
	return out, nil
}

// fixedConfig returns the config of an auction that has bids, read once per hub: its terms cannot
// change (only its title and message may, which offer does not read).
func (s *Service) fixedConfig(ctx context.Context, id string, h *hub) (Config, error) {
	s.mu.Lock()
	cfg := h.cfg
	s.mu.Unlock()
	if cfg != nil {
		return *cfg, nil
	}
	st, err := s.store.Get(ctx, id)
	if err != nil {
		return Config{}, err
	}
	s.mu.Lock()
	h.cfg = &st.Config
	s.mu.Unlock()
	return st.Config, nil
}

// publish tells the auction's followers on this instance that it has new events. A change told while
// an earlier one waits to be read, and no read is under way, is not told again: the followers that the
// earlier one woke read after both (a step's events are in the store before it is told), so a second
// wake would cost each of them a pass for nothing. On a store that watches, every step is told twice:
// by the service after its own steps, and by the store's watch.
func (s *Service) publish(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hubs[id]; ok {
		if h.fresh != h.gen && h.reading == nil {
			return
		}
		h.gen++
		close(h.changed)
		h.changed = make(chan struct{})
	}
}
