package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/room"
)

// statusBody is the visitor-facing view, shared by join, status and the event stream.
type statusBody struct {
	VisitorToken   string     `json:"visitor_token,omitempty"`
	State          room.State `json:"state"`
	Position       int64      `json:"position,omitempty"`
	ETASeconds     *int64     `json:"eta_seconds,omitempty"`
	ETAUpperBound  bool       `json:"eta_upper_bound,omitempty"`
	Paused         bool       `json:"paused,omitempty"`
	DropClosed     bool       `json:"drop_closed,omitempty"`
	DropOpensAt    *time.Time `json:"drop_opens_at,omitempty"`
	OpensAt        *time.Time `json:"opens_at,omitempty"`
	AdmissionToken string     `json:"admission_token,omitempty"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	// Message is the room's word to its line, in a sold-out status only: a page without a place reads
	// it there (a second batch to come, say), having no stream to hear it on. A waiting crowd's
	// statuses leave it to the stream's own event, lest every status carry it.
	Message string `json:"message,omitempty"`
}

// body renders a view, signing the admission token when admitted. Ed25519 signatures are deterministic
// and the claims carry no issue time, so polling returns the same token every time.
func (s *Server) body(id, visitorID string, v room.View) (statusBody, error) {
	b := statusBody{State: v.State}
	switch v.State {
	case room.StateWaiting:
		eta := int64(math.Ceil(v.ETA.Seconds()))
		b.Position, b.ETASeconds, b.ETAUpperBound, b.Paused, b.DropClosed = v.Position, &eta, v.ETAUpperBound, v.Paused, v.DropClosed
		b.OpensAt, b.DropOpensAt = instant(v.OpensAt), instant(v.DropOpensAt)
	case room.StateAdmitted:
		tok, err := s.keys.Sign(admission.Claims{Room: id, RegisteredClaims: jwt.RegisteredClaims{
			Subject: visitorID, ID: v.Admission.ID, ExpiresAt: jwt.NewNumericDate(v.Admission.ExpiresAt),
		}})
		if err != nil {
			return b, err
		}
		exp := v.Admission.ExpiresAt.UTC().Truncate(time.Second)
		b.AdmissionToken, b.ExpiresAt = tok, &exp
	case room.StateSoldOut:
		b.Message = v.Message
	}
	return b, nil
}

// joinRequest is the optional body of a join.
type joinRequest struct {
	// Switch moves a visitor that waits in another room's line; without it such a join is refused
	// with 409 waiting_elsewhere, so that opening a room's page never gives up a place by itself.
	Switch bool `json:"switch"`
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	var req joinRequest
	if err == nil && r.ContentLength != 0 {
		err = decode(r, &req, true)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e := room.Entrant{New: true, Origin: id}
	tok, carries := presented(r)
	if carries {
		who, err := s.visitorFrom(tok)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		e = room.Entrant{Visitor: who.ID, Origin: who.Origin, Switch: req.Switch}
	} else if s.limiter != nil && !s.limiter.allow(s.clientAddr(r)) { // no header parsing on a crowd's joins when off
		w.Header().Set("Retry-After", "60")
		s.writeError(w, r, apiError(http.StatusTooManyRequests, codeRateLimited, "too many new visitors from this address; retry later"))
		return
	}
	vouched := false
	if et := r.Header.Get(EnqueueHeader); et != "" {
		// The site vouches for a subject: its one visitor joins, so a subject holds one place.
		subject, err := s.enqueued(et, "room", id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		tok, e.Visitor = s.visitors.ForSubject(subject)
		e.New, e.Origin, vouched = false, "", true
	}
	if err := s.guard(r, id, &e, vouched); err != nil {
		s.writeError(w, r, err)
		return
	}
	if e.New {
		tok, e.Visitor = s.visitors.New(id)
	}
	v, err := s.rooms.Join(r.Context(), id, e)
	if err == nil && e.Invite != "" {
		s.guarded("invite", "used")
	}
	// A visitor refused only because the room is sold out keeps its cookie all the same: its page then
	// reads the status (sold out, until the room follows a second batch) to join when it can.
	if (err == nil || errors.Is(err, rushgate.ErrSoldOut)) && (e.New || vouched) {
		s.setVisitorCookie(w, r, tok)
	}
	s.respond(w, r, id, e.Visitor, tok, v, err)
}

// respond writes a visitor's view (echoing its token when given), or the error that kept it from
// being read.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, id, vid, tok string, v room.View, err error) {
	var b statusBody
	if err == nil {
		b, err = s.body(id, vid, v)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b.VisitorToken = tok
	writeStatus(w, http.StatusOK, b)
}

// visitorCall resolves the room and visitor of a visitor request, writing the error if it fails.
func (s *Server) visitorCall(w http.ResponseWriter, r *http.Request) (id, vid string, ok bool) {
	id, err := roomID(r)
	if err == nil {
		vid, _, err = s.visitor(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return "", "", false
	}
	return id, vid, true
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	id, vid, ok := s.visitorCall(w, r)
	if !ok {
		return
	}
	v, err := s.rooms.Status(r.Context(), id, vid)
	s.respond(w, r, id, vid, "", v, err)
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request) {
	id, vid, ok := s.visitorCall(w, r)
	if !ok {
		return
	}
	if err := s.rooms.Leave(r.Context(), id, vid); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeStatus(w, http.StatusOK, statusBody{State: room.StateNone})
}

type releaseRequest struct {
	AdmissionToken string `json:"admission_token"`
}

// release ends an admission, named either by the visitor's own token or, for the protected site's
// backend, by the admission token it was shown.
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req releaseRequest
	if err := decode(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	var vid, admissionID string
	var until time.Time
	if req.AdmissionToken != "" {
		c, err := s.verifier.VerifySignature(r.Context(), req.AdmissionToken)
		if err != nil || c.Room != id {
			s.writeError(w, r, apiError(http.StatusUnauthorized, codeInvalidAdmissionToken, "the admission token is not valid for this room"))
			return
		}
		vid, admissionID, until = c.Subject, c.ID, c.ExpiresAt.Time
	} else if vid, _, err = s.visitor(r); err != nil {
		s.writeError(w, r, err)
		return
	} else if v, err := s.rooms.Status(r.Context(), id, vid); err == nil && v.State == room.StateAdmitted {
		// Which admission ends, so that checks that verify its token offline refuse it from now on.
		admissionID, until = v.Admission.ID, v.Admission.ExpiresAt
	}
	if err := s.rooms.Release(r.Context(), id, vid, admissionID); err != nil {
		s.writeError(w, r, err)
		return
	}
	if admissionID != "" {
		s.ended(r.Context(), admissionID, until)
	}
	writeStatus(w, http.StatusOK, statusBody{State: room.StateNone})
}

// ReleaseAdmission ends the admission a token shows, for the protecting proxy when the origin answers
// "Rushgate-Command: release"; the check endpoint refuses it from then on.
func (s *Server) ReleaseAdmission(ctx context.Context, id, token string) error {
	c, err := s.verifier.VerifySignature(ctx, token)
	if err != nil || c.Room != id {
		return apiError(http.StatusUnauthorized, codeInvalidAdmissionToken, "the admission token is not valid for this room")
	}
	if err := s.rooms.Release(ctx, id, c.Subject, c.ID); err != nil && !errors.Is(err, room.ErrNotAdmitted) {
		return err
	}
	s.ended(ctx, c.ID, c.ExpiresAt.Time)
	return nil
}
