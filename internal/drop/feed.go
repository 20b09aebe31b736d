package drop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// FeedEvery is how often a followed drop is read for its live feeds: every feed of it on this instance
// is told the news at most this often, whatever the pace of the claims, and one read serves them all.
// Claims on other instances show within it too, since the read is of the shared store.
const FeedEvery = time.Second

// feed reads one followed drop for all its followers on this instance.
type feed struct {
	followers int
	changed   chan struct{} // closed when latest changes
	latest    Info
	err       error // the last read's, ErrNotFound once the drop is gone
	stop      context.CancelFunc
}

// Follower is one live feed of a drop on this instance: it is told when the drop's view changes.
type Follower struct {
	s    *Service
	id   string
	f    *feed
	once sync.Once
}

// Follow starts following a drop, from info, the drop as the caller read it. Close the follower when
// the feed ends. The first follower of a drop on this instance starts the reads that all share.
func (s *Service) Follow(id string, info Info) *Follower {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	f := s.feeds[id]
	if f == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		f = &feed{changed: make(chan struct{}), latest: info, stop: cancel}
		s.feeds[id] = f
		if !s.stopped { // Stop waits for the reader
			s.feedReaders.Go(func() { s.readFeed(ctx, id, f) })
		}
	}
	f.followers++
	return &Follower{s: s, id: id, f: f}
}

// readFeed reads the drop every FeedEvery until ctx ends, and tells the followers when what they show
// changed: the count, the status (an opening or a close is a change of its window) or the config.
func (s *Service) readFeed(ctx context.Context, id string, f *feed) {
	tick := time.NewTicker(FeedEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		info, err := s.store.Get(ctx, id)
		if err != nil && ctx.Err() != nil {
			return
		}
		s.feedsMu.Lock()
		news := false
		switch {
		case errors.Is(err, ErrNotFound): // gone: the feeds end
			news, f.err = f.err == nil, err
		case err != nil: // a failed read: the feeds keep what they show, and the next read tries again
		case info.Claimed != f.latest.Claimed || info.Rev != f.latest.Rev || f.err != nil: // (or put again)
			news, f.latest, f.err = true, info, nil
		}
		if news {
			close(f.changed)
			f.changed = make(chan struct{})
		}
		s.feedsMu.Unlock()
	}
}

// Changed returns a channel closed when the drop's view changes; take it before reading Latest.
func (f *Follower) Changed() <-chan struct{} {
	f.s.feedsMu.Lock()
	defer f.s.feedsMu.Unlock()
	return f.f.changed
}

// Latest returns the drop as last read, or ErrNotFound once it is gone.
func (f *Follower) Latest() (Info, error) {
	f.s.feedsMu.Lock()
	defer f.s.feedsMu.Unlock()
	return f.f.latest, f.f.err
}

// Close ends following; the last follower of a drop ends its reads.
func (f *Follower) Close() {
	f.once.Do(func() {
		s := f.s
		s.feedsMu.Lock()
		defer s.feedsMu.Unlock()
		if f.f.followers--; f.f.followers == 0 {
			f.f.stop()
			delete(s.feeds, f.id)
		}
	})
}
