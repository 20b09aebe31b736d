package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// released remembers the admissions this server ended early, until their tokens expire, so that the
// check endpoint refuses them without asking the store.
type released struct {
	mu      sync.Mutex
	ids     map[string]time.Time // admission id (jti) -> when its token expires
	sweepAt int                  // the size at which add next drops the expired ones
}

// add remembers id until exp. Expired entries go in bulk once the map has doubled since the last
// sweep, so that each add is O(1) amortized however many releases are live (a sweep at every add past
// a fixed size was quadratic in them: the releases a starting instance reads, a big sale's hour of
// checkouts).
func (r *released) add(id string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = make(map[string]time.Time)
	}
	if len(r.ids) >= r.sweepAt {
		now := time.Now()
		for k, t := range r.ids {
			if t.Before(now) {
				delete(r.ids, k)
			}
		}
		r.sweepAt = max(1024, 2*len(r.ids))
	}
	r.ids[id] = exp
}

func (r *released) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.ids[id]
	return ok
}

// ended records an admission ended early here and tells the other instances. An announcement that
// fails (the store answered the release a moment before, and fails now) is tried again in the
// background until it goes through, the token expires or Drain, so that the other instances' checks,
// which accept the token meanwhile, refuse it once the store answers again; at most maxUnannounced at
// once.
func (s *Server) ended(ctx context.Context, id string, until time.Time) {
	s.released.add(id, until)
	if s.releases == nil {
		return
	}
	err := s.releases.Announce(context.WithoutCancel(ctx), id, until)
	if err == nil {
		return
	}
	if n := s.unannounced.Add(1); n > maxUnannounced || s.streamCtx.Err() != nil { // too many, or draining
		s.unannounced.Add(-1)
		s.log.WarnContext(ctx, "a release not announced to the other instances; their checks accept it until it expires", "err", err)
		return
	}
	s.log.WarnContext(ctx, "a release not announced to the other instances yet; trying again", "err", err)
	s.announcing.Go(func() {
		defer s.unannounced.Add(-1)
		for wait := announceRetry; s.now().Before(until); wait = min(2*wait, 30*time.Second) {
			select {
			case <-s.streamCtx.Done():
				return
			case <-time.After(wait):
			}
			if err = s.releases.Announce(s.streamCtx, id, until); err == nil {
				return
			}
		}
		s.log.Warn("a release never announced to the other instances; their checks accepted it until it expired", "err", err)
	})
}

// maxUnannounced bounds the releases whose announcement is being tried again, and announceRetry is
// the first wait before a try.
const (
	maxUnannounced = 1000
	announceRetry  = 250 * time.Millisecond
)

// Released reports whether an admission was ended early (here or, with Releases, on any instance), for
// gates in front of a site.
func (s *Server) Released(id string) bool { return s.released.has(id) }

// check answers nginx's auth_request (GET /v1/rooms/{room}/check): 204 when the request carries a valid
// admission of the room that was not released, from Authorization (when it holds one: the site may use
// the header for its own logins), the rg_admission cookie, or the rg_admission parameter of the
// original URL (X-Original-URL) that the room's page redirects with, in which case it also sets the
// cookie. Otherwise 401 with a Location of the room's page, return_to the original URL. It verifies
// with the local keys only: no store call.
func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	original := r.Header.Get("X-Original-URL")
	held := false
	if h, ok := admission.Bearer(r); ok {
		_, held = s.admitted(r.Context(), h, id)
	}
	if ck, err := r.Cookie(admission.DefaultCookie); !held && err == nil {
		_, held = s.admitted(r.Context(), ck.Value, id)
	}
	// A live admission the visitor holds is kept: a link that hands over another (anyone may send one)
	// must not replace it by navigation alone.
	if u, err := url.Parse(original); !held && err == nil {
		if tok := u.Query().Get(admission.QueryParam); tok != "" {
			if c, ok := s.admitted(r.Context(), tok, id); ok {
				http.SetCookie(w, &http.Cookie{Name: admission.DefaultCookie, Value: tok, Path: "/", HttpOnly: true,
					Secure: strings.HasPrefix(original, "https:") || s.secure, SameSite: http.SameSiteLaxMode,
					MaxAge: int(time.Until(c.ExpiresAt.Time).Seconds())})
				held = true
			}
		}
	}
	if held {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	page := s.base + "/r/" + id
	if original != "" {
		if u, err := url.Parse(original); err == nil {
			q := u.Query()
			q.Del(admission.QueryParam)
			u.RawQuery = q.Encode()
			page += "?return_to=" + url.QueryEscape(u.String())
		}
	}
	w.Header().Set("Location", page)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
}

// admitted returns the claims of tok when it is a valid admission of room that was not released.
func (s *Server) admitted(ctx context.Context, tok, room string) (*admission.Claims, bool) {
	c, err := s.verifier.Verify(ctx, tok, room)
	return c, err == nil && !s.released.has(c.ID)
}
