package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/room"
)

type verifyRequest struct {
	Token string `json:"token"`
	Room  string `json:"room,omitempty"`
}

type verifyResponse struct {
	Valid     bool       `json:"valid"`
	Reason    string     `json:"reason,omitempty"`
	Room      string     `json:"room,omitempty"`
	Visitor   string     `json:"visitor,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// verify is the online check: beyond what the offline verifier can see, it knows whether the admission
// was released or replaced.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	var req verifyRequest
	if err := decode(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Token == "" {
		s.writeError(w, r, apiError(http.StatusBadRequest, codeInvalidRequest, "token is required"))
		return
	}
	c, err := s.verifier.Verify(r.Context(), req.Token, req.Room)
	if err != nil {
		writeJSON(w, http.StatusOK, verifyResponse{Reason: admission.Reason(err)})
		return
	}
	live, err := s.rooms.Active(r.Context(), c.Room, c.Subject, c.ID)
	switch {
	case errors.Is(err, room.ErrNotFound):
		writeJSON(w, http.StatusOK, verifyResponse{Reason: "room_not_found"})
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	case !live:
		writeJSON(w, http.StatusOK, verifyResponse{Reason: "released"})
		return
	}
	exp := c.ExpiresAt.UTC()
	writeJSON(w, http.StatusOK, verifyResponse{Valid: true, Room: c.Room, Visitor: c.Subject, ExpiresAt: &exp})
}

func (s *Server) keySet(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	// Caches may keep the set for a minute: well inside keyring.PublishAhead, so a key published by
	// a rotation reaches every verifier before any token carries it.
	w.Header().Set("Cache-Control", "public, max-age=60")
	_ = json.NewEncoder(w).Encode(s.keys.KeySet())
}

// rotateKeys publishes a new signing key, which signs from keyring.PublishAhead on, and answers
// with its id, that time and the key set as it now stands.
func (s *Server) rotateKeys(w http.ResponseWriter, r *http.Request) {
	kid, signs, err := s.keys.Rotate(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("signing keys rotated", "kid", kid, "signs_from", signs)
	writeJSON(w, http.StatusOK, struct {
		Kid       string           `json:"kid"`
		SignsFrom time.Time        `json:"signs_from"`
		Keys      admission.KeySet `json:"keys"`
	}{kid, signs, s.keys.KeySet()})
}
