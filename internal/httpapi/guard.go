package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/room"
)

// Headers of a guarded join: a solved challenge ("token:nonce"), an invite code, and an enqueue token
// the site signed for a subject.
const (
	ChallengeHeader = "Rushgate-Challenge"
	CaptchaHeader   = "Rushgate-Captcha"
	InviteHeader    = "Rushgate-Invite"
	EnqueueHeader   = "Rushgate-Enqueue"
)

// enqueueClaims are the claims of an enqueue token: an HS256 JWT the site signs with the server's
// --enqueue-secret, naming the subject (one of its accounts), an expiry, and what it vouches for: a
// room (the account's one place in its line), or a drop or an auction (the account's claims or bids
// on rushgate's pages, which know visitors only by their cookie).
type enqueueClaims struct {
	Room    string `json:"room,omitempty"`
	Drop    string `json:"drop,omitempty"`
	Auction string `json:"auction,omitempty"`
	jwt.RegisteredClaims
}

// enqueued verifies an enqueue token for the room, drop or auction (kind) id and returns its subject.
func (s *Server) enqueued(tok, kind, id string) (string, error) {
	bad := apiError(http.StatusUnauthorized, codeInvalidEnqueueToken, "the enqueue token is not valid for this "+kind)
	if len(s.enqueueSecret) == 0 || len(tok) > 4096 {
		return "", bad
	}
	var c enqueueClaims
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return s.enqueueSecret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now))
	scope := c.Room
	switch kind {
	case "drop":
		scope = c.Drop
	case "auction":
		scope = c.Auction
	}
	if err != nil || scope != id || c.Subject == "" || len(c.Subject) > 256 {
		return "", bad
	}
	return c.Subject, nil
}

// challengeCodes names each refusal of a solution in the API.
var challengeCodes = map[error]string{
	challenge.ErrRequired:  "challenge_required",
	challenge.ErrInvalid:   "challenge_invalid",
	challenge.ErrExpired:   "challenge_expired",
	challenge.ErrOtherRoom: "challenge_other_room",
	challenge.ErrUnsolved:  "challenge_unsolved",
	challenge.ErrUsed:      "challenge_used",
}

// guard runs a room's defences against bots before a join takes a new place: the proof of work of its
// challenge. A visitor that already waits in the line or holds an admission (a reload) passes; a new
// visitor is bound by its client address, a known one by its id. A refusal answers 401 with a fresh
// challenge to solve.
//
// In a room with entry "invite", a new place also needs an invite code (Rushgate-Invite), set on e for
// the join to spend, unless the site vouched for the visitor with an enqueue token.
func (s *Server) guard(r *http.Request, id string, e *room.Entrant, vouched bool) error {
	cfg, err := s.rooms.Config(r.Context(), id)
	if err != nil {
		return nil // the join answers for an unknown room
	}
	difficulty := s.rooms.Difficulty(id, cfg.Challenge)
	invite := cfg.Entry == room.EntryInvite && !vouched
	if difficulty == 0 && !invite && !cfg.Captcha {
		return nil
	}
	client := "a:" + s.clientAddr(r)
	if !e.New {
		v, err := s.rooms.Status(r.Context(), id, e.Visitor)
		if err != nil {
			return err
		}
		if v.State != room.StateNone {
			return nil // its place is taken already
		}
		client = "v:" + e.Visitor
	}
	if invite {
		if e.Invite = r.Header.Get(InviteHeader); e.Invite == "" || len(e.Invite) > room.MaxInviteLen {
			s.guarded("invite", "refused")
			return room.ErrInviteRequired
		}
	}
	if cfg.Captcha {
		if err := s.checkCaptcha(r); err != nil {
			e.Invite = ""
			return err
		}
	}
	if difficulty == 0 {
		return nil
	}
	if s.spent == nil {
		return fmt.Errorf("%w: no memory of spent challenges", rushgate.ErrUnavailable)
	}
	err = challenge.ErrRequired
	if h := r.Header.Get(ChallengeHeader); h != "" {
		var sol challenge.Solution
		if sol, err = s.challenges.Verify(h, id, client); err == nil {
			first, serr := s.spent.Spend(r.Context(), sol.Token, sol.ExpiresAt)
			switch {
			case serr != nil:
				return serr
			case !first:
				err = challenge.ErrUsed
			default:
				s.guarded("challenge", "solved")
				return nil
			}
		}
	}
	outcome := "failed"
	switch {
	case errors.Is(err, challenge.ErrRequired):
		outcome = "issued"
	case errors.Is(err, challenge.ErrUsed):
		outcome = "replayed"
	}
	s.guarded("challenge", outcome)
	e.Invite = "" // nothing is spent on a refused join
	c := s.challenges.Issue(id, client, difficulty)
	return &Error{Status: http.StatusUnauthorized, Code: challengeCodes[err], Message: challengeMessage(err), Cause: err, Challenge: &c}
}

func challengeMessage(err error) string {
	if errors.Is(err, challenge.ErrRequired) {
		return "solve the challenge and join again with Rushgate-Challenge: <challenge>:<nonce>"
	}
	return err.Error() + "; solve the new challenge"
}

func (s *Server) guarded(what, outcome string) {
	if s.metrics != nil {
		s.metrics.Guarded(what, outcome)
	}
}

// challengeBody is the challenge a 401 carries, at the top level of the error answer.
type challengeBody struct {
	Challenge  string    `json:"challenge"`
	Difficulty int       `json:"difficulty"`
	Algorithm  string    `json:"algorithm"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// checkCaptcha asks the CAPTCHA service about the join's Rushgate-Captcha answer.
func (s *Server) checkCaptcha(r *http.Request) error {
	answer := r.Header.Get(CaptchaHeader)
	if answer == "" {
		s.guarded("captcha", "refused")
		return apiError(http.StatusUnauthorized, codeCaptchaRequired, "this line needs a CAPTCHA answer: Rushgate-Captcha: <response>")
	}
	if s.captcha == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: codeCaptchaUnavailable, Message: "this server has no CAPTCHA service (--captcha-verify-url)"}
	}
	ok, err := s.captcha.Verify(r.Context(), answer, s.clientAddr(r))
	if err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: codeCaptchaUnavailable, Message: "the CAPTCHA service did not answer; retry", Cause: err}
	}
	if !ok {
		s.guarded("captcha", "failed")
		return apiError(http.StatusUnauthorized, codeCaptchaFailed, "the CAPTCHA answer was refused")
	}
	return nil
}
