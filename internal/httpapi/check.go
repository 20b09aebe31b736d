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
	mu  sync.Mutex
	ids map[string]time.Time // admission id (jti) -> when its token expires
}

func (r *released) add(id string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = make(map[string]time.Time)
	}
	now := time.Now()
	if len(r.ids) > 1024 { // old entries go in bulk, so that each add is O(1) amortized
		for k, t := range r.ids {
			if t.Before(now) {
				delete(r.ids, k)
			}
		}
	}
	r.ids[id] = exp
}

func (r *released) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.ids[id]
	return ok
}

// ended records an admission ended early here and tells the other instances.
func (s *Server) ended(ctx context.Context, id string, until time.Time) {
	s.released.add(id, until)
	if s.releases != nil {
		if err := s.releases.Announce(context.WithoutCancel(ctx), id, until); err != nil {
			s.log.WarnContext(ctx, "a release not announced to the other instances; their checks accept it until it expires", "err", err)
		}
	}
}

// Released reports whether an admission was ended early (here or, with Releases, on any instance), for
// gates in front of a site.
func (s *Server) Released(id string) bool { return s.released.has(id) }

// check answers nginx's auth_request (GET /v1/rooms/{room}/check): 204 when the request carries a valid
// admission of the room that was not released, from the rg_admission cookie, Authorization, or the
// rg_admission parameter of the original URL (X-Original-URL) that the room's page redirects with, in
// which case it also sets the cookie, unless the visitor holds a live admission already. Otherwise 401 with a Location of the room's page, return_to the
// original URL. It verifies with the local keys only: no store call.
func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	original := r.Header.Get("X-Original-URL")
	tok := ""
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		tok = h
	} else if c, err := r.Cookie(admission.DefaultCookie); err == nil {
		tok = c.Value
	}
	c, err := s.verifier.Verify(r.Context(), tok, id)
	held := err == nil && !s.released.has(c.ID)
	adopted := false
	// A live admission the visitor holds is kept: a link that hands over another (anyone may send one)
	// must not replace it by navigation alone.
	if u, perr := url.Parse(original); !held && perr == nil && u.Query().Get(admission.QueryParam) != "" {
		tok, adopted = u.Query().Get(admission.QueryParam), true
		c, err = s.verifier.Verify(r.Context(), tok, id)
	}
	if err == nil && !s.released.has(c.ID) {
		if adopted {
			http.SetCookie(w, &http.Cookie{Name: admission.DefaultCookie, Value: tok, Path: "/", HttpOnly: true,
				Secure: strings.HasPrefix(original, "https:") || s.secure, SameSite: http.SameSiteLaxMode,
				MaxAge: int(time.Until(c.ExpiresAt.Time).Seconds())})
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	page := "/r/" + id
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
