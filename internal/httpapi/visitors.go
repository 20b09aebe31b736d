package httpapi

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/visitor"
)

type mintRequest struct {
	Subject string `json:"subject"`
}

func (s *Server) mintVisitor(w http.ResponseWriter, r *http.Request) {
	var req mintRequest
	if err := decode(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Subject == "" || len(req.Subject) > 256 {
		s.writeError(w, r, apiError(http.StatusBadRequest, codeInvalidRequest, "subject must be 1-256 bytes"))
		return
	}
	tok, id := s.visitors.ForSubject(req.Subject)
	writeJSON(w, http.StatusCreated, map[string]string{"visitor_token": tok, "visitor_id": id, "subject": req.Subject})
}

// me answers which visitor the request carries (its cookie or bearer token), "" for none: what an
// auction's page needs to tell its own bids and standing from others', in a new tab or after the
// browser was closed, where the bid that told it has been forgotten. It makes no visitor.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	id, err := s.visitorIfAny(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"visitor_id": id})
}

// visitorIfAny returns the visitor the request carries, "" for none (making none), and
// invalid_visitor_token for a bad token.
func (s *Server) visitorIfAny(r *http.Request) (string, error) {
	if _, ok := presented(r); !ok {
		return "", nil
	}
	id, _, err := s.visitor(r)
	return id, err
}

// visitor returns the caller's visitor id and the token it came in, from the bearer header or the
// cookie; an absent token is visitor_token_required, a bad one invalid_visitor_token.
func (s *Server) visitor(r *http.Request) (id, token string, err error) {
	tok, ok := presented(r)
	if !ok {
		return "", "", apiError(http.StatusUnauthorized, codeVisitorTokenRequired, "a visitor token is required: join the room first")
	}
	v, err := s.visitorFrom(tok)
	return v.ID, tok, err
}

// actor returns the visitor a claim, bid or buy-now on the drop or auction (kind) id comes from: the
// account an enqueue token of the site's names (Rushgate-Enqueue, from the link the site sent to the
// page; that account's visitor becomes the cookie), else the one its token names, or, for a browser
// that holds none (a drop's or an auction's page opened directly), a new anonymous visitor whose token
// is set as the cookie, as a first join does, and limited per address the same way. Whether the drop
// or auction takes such a visitor is its own rule (identity).
func (s *Server) actor(w http.ResponseWriter, r *http.Request, kind, id string) (string, error) {
	if et := r.Header.Get(EnqueueHeader); et != "" {
		subject, err := s.enqueued(et, kind, id)
		if err != nil {
			return "", err
		}
		tok, vid := s.visitors.ForSubject(subject)
		s.setVisitorCookie(w, r, tok)
		return vid, nil
	}
	if _, ok := presented(r); ok {
		id, _, err := s.visitor(r)
		return id, err
	}
	if s.limiter != nil && !s.limiter.allow(s.clientAddr(r)) {
		w.Header().Set("Retry-After", "60")
		return "", apiError(http.StatusTooManyRequests, codeRateLimited, "too many new visitors from this address; retry later")
	}
	tok, id := s.visitors.New("")
	s.setVisitorCookie(w, r, tok)
	return id, nil
}

// visitorFrom verifies a presented visitor token; a bad one is invalid_visitor_token.
func (s *Server) visitorFrom(tok string) (visitor.Visitor, error) {
	v, err := s.visitors.Parse(tok)
	if err != nil {
		return v, apiError(http.StatusUnauthorized, codeInvalidVisitorToken, "the visitor token is invalid")
	}
	return v, nil
}

// presented returns the visitor token a request carries, from the bearer header or else the cookie.
func presented(r *http.Request) (string, bool) {
	if tok, ok := admission.Bearer(r); ok {
		return tok, true
	}
	c, err := r.Cookie(VisitorCookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// setVisitorCookie sets the rg_visitor cookie. It is written out by hand because it is set on every
// new visitor's first join, the request a crowd sends most; visitor tokens are cookie-safe by
// construction ([a-z0-9._-A-Z]), which TestVisitorCookieMatchesNetHTTP checks against http.Cookie.
func (s *Server) setVisitorCookie(w http.ResponseWriter, r *http.Request, tok string) {
	w.Header()["Set-Cookie"] = []string{visitorCookie(tok, s.base, s.secure || r.TLS != nil)}
}

// visitorCookie is the rg_visitor cookie for tok, on the paths under base (all of them for ""): under
// the protecting proxy's prefix, the site behind it never sees it.
func visitorCookie(tok, base string, secure bool) string {
	const attrs, secureAttr, sameSite = "; Max-Age=604800; HttpOnly", "; Secure", "; SameSite=Lax"
	var b strings.Builder
	b.Grow(len(VisitorCookie) + 8 + len(tok) + len(base) + len(attrs) + len(secureAttr) + len(sameSite))
	b.WriteString(VisitorCookie + "=")
	b.WriteString(tok)
	b.WriteString("; Path=")
	b.WriteString(cmp.Or(base, "/"))
	b.WriteString(attrs)
	if secure {
		b.WriteString(secureAttr)
	}
	b.WriteString(sameSite)
	return b.String()
}
