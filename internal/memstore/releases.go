package memstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// Releases tells this instance's checks of admissions ended early, and keeps them with the spent ids
// (in the line journal and snapshot, see Spent) until their tokens expire: a check in front of a site
// verifies tokens offline, and without them a restart let a released token through again.
type Releases struct {
	spent *Spent

	mu        sync.Mutex
	listeners map[chan rushgate.Released]struct{}
}

// releasedPrefix marks the spent ids that are releases; no spent id of another kind has a space.
const releasedPrefix = "released "

// Announce implements [rushgate.Releases].
func (r *Releases) Announce(ctx context.Context, id string, until time.Time) error {
	if _, err := r.spent.Spend(ctx, releasedPrefix+id, until); err != nil {
		return err
	}
	rel := rushgate.Released{ID: id, Until: until}
	r.mu.Lock()
	defer r.mu.Unlock()
	for ch := range r.listeners {
		select {
		case ch <- rel:
		default: // the reader is behind; the one instance that announced it refuses it already
		}
	}
	return nil
}

// Listen implements [rushgate.Releases]: first the releases kept, then each one announced, until ctx
// ends.
func (r *Releases) Listen(ctx context.Context) <-chan rushgate.Released {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.spent.kept(releasedPrefix)
	ch := make(chan rushgate.Released, len(kept)+256)
	for _, rel := range kept {
		ch <- rel
	}
	if r.listeners == nil {
		r.listeners = make(map[chan rushgate.Released]struct{})
	}
	r.listeners[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.listeners, ch)
		close(ch)
	})
	return ch
}

// kept returns the ids with prefix that s still remembers, without it, each until the end of the
// minute it is remembered to.
func (s *Spent) kept(prefix string) []rushgate.Released {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rushgate.Released
	for _, sp := range s.live() {
		if id, ok := strings.CutPrefix(sp.ID, prefix); ok {
			out = append(out, rushgate.Released{ID: id, Until: time.Unix((sp.Minute+1)*60, 0)})
		}
	}
	return out
}
