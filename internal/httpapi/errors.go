package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/room"
)

// Error codes are part of the API: clients switch on them, so they never change meaning.
const (
	codeInvalidJSON           = "invalid_json"
	codeInvalidConfig         = "invalid_config"
	codeInvalidRoomID         = "invalid_room_id"
	codeInvalidRequest        = "invalid_request"
	codeBodyTooLarge          = "body_too_large"
	codeUnauthorized          = "unauthorized"
	codeVisitorTokenRequired  = "visitor_token_required"
	codeInvalidVisitorToken   = "invalid_visitor_token"
	codeInvalidAdmissionToken = "invalid_admission_token"
	codeRoomNotFound          = "room_not_found"
	codeNotFound              = "not_found"
	codeMethodNotAllowed      = "method_not_allowed"
	codeNotAdmitted           = "not_admitted"
	codeRateLimited           = "rate_limited"
	codeStoreUnavailable      = "store_unavailable"
	codeInternal              = "internal"
	codeAuctionNotFound       = "auction_not_found"
	codeAuctionClosed         = "auction_closed"
	codeAuctionNotStarted     = "auction_not_started"
	codeAuctionStarted        = "auction_started"
	codeBidTooLow             = "bid_too_low"
	codeBuyNowUnavailable     = "buy_now_unavailable"
	codeInvalidAmount         = "invalid_amount"
	codeDropNotFound          = "drop_not_found"
	codeSoldOut               = "sold_out"
	codeAlreadyClaimed        = "already_claimed"
	codeNotOpen               = "not_open"
	codeDropStarted           = "drop_started"
	codeDropFollowed          = "drop_followed"
	codeCodeNotFound          = "code_not_found"
	codeCodeRedeemed          = "code_redeemed"
	codeWebhookNotFound       = "webhook_not_found"
	codeWebhooksOff           = "webhooks_off"
	codeBackupUnavailable     = "backup_unavailable"
	codeBackupRunning         = "backup_running"
	codeRotationConflict      = "rotation_conflict"
	codeTooManyStreams        = "too_many_streams"
	codeIdentityRequired      = "identity_required"
	codeWaitingElsewhere      = "waiting_elsewhere"
	codeRoomClosed            = "room_closed"
	codeInviteRequired        = "invite_required"
	codeInviteInvalid         = "invite_invalid"
	codeInvalidEnqueueToken   = "invalid_enqueue_token"
	codeCaptchaRequired       = "captcha_required"
	codeCaptchaFailed         = "captcha_failed"
	codeCaptchaUnavailable    = "captcha_unavailable"
	codeCrossOrigin           = "cross_origin"
	codeForbidden             = "forbidden"
	codeOperatorExists        = "operator_exists"
	codeOperatorNotFound      = "operator_not_found"
	codeTooManyOperators      = "too_many_operators"
	codeOperatorsOff          = "operators_off"
)

// Error is an API failure: a stable code and a message for the client, the HTTP status, and the cause,
// which is logged but never sent.
type Error struct {
	Status  int
	Code    string
	Message string
	Cause   error
	// MinNextBid, for bid_too_low, is the least bid that would be accepted.
	MinNextBid int64
	// Claims, for already_claimed, are the visitor's existing claims.
	Claims []drop.Claim
	// Room, for waiting_elsewhere, is the room whose line the visitor waits in.
	Room string
	// Field, for invalid_config and invalid_json, is the field refused, so that a form can show the
	// message next to it.
	Field string
	// Challenge, for the challenge_ codes, is a fresh challenge to solve.
	Challenge *challenge.Challenge
	// Redeemed, for code_redeemed, is the redemption that stands.
	Redeemed *drop.Redemption
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

func apiError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// fromDomain maps a domain or store error onto the API's codes. Anything unrecognised is an internal
// error whose details stay in the log.
func fromDomain(err error) *Error {
	// A crowd's most frequent refusal first: a bid too low is the answer to most bids of a hot auction.
	if low, ok := errors.AsType[*auction.TooLowError](err); ok {
		return &Error{Status: http.StatusConflict, Code: codeBidTooLow, Message: low.Error(), Cause: err, MinNextBid: low.Min}
	}
	var e *Error
	var ce *room.ConfigError
	var ace *auction.ConfigError
	var dce *drop.ConfigError
	var fixed *drop.FixedError
	var followed *drop.FollowedError
	var afixed *auction.FixedError
	var already *drop.AlreadyClaimedError
	var redeemed *drop.RedeemedError
	var elsewhere *room.ElsewhereError
	switch {
	case errors.Is(err, rushgate.ErrAdmissionRequired):
		return &Error{Status: http.StatusForbidden, Code: codeNotAdmitted, Cause: err,
			Message: "this needs a live admission from its room: admission_token in the body or a Rushgate-Admission header"}
	case errors.Is(err, rushgate.ErrIdentityRequired):
		return &Error{Status: http.StatusForbidden, Code: codeIdentityRequired, Cause: err,
			Message: "this needs a visitor the site minted for a signed-in account (POST /v1/visitors)"}
	case as(err, &elsewhere):
		return &Error{Status: http.StatusConflict, Code: codeWaitingElsewhere, Room: elsewhere.Room, Cause: err,
			Message: "you are waiting in the line of room " + elsewhere.Room + `; join with {"switch": true} to move here`}
	case as(err, &dce):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidConfig, Message: dce.Error(), Field: dce.Field, Cause: err}
	case as(err, &already):
		return &Error{Status: http.StatusConflict, Code: codeAlreadyClaimed, Message: "you already hold all you may claim", Cause: err, Claims: already.Claims}
	case errors.Is(err, drop.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: codeDropNotFound, Message: "no such drop", Cause: err}
	case errors.Is(err, drop.ErrSoldOut), errors.Is(err, rushgate.ErrSoldOut):
		return &Error{Status: http.StatusGone, Code: codeSoldOut, Message: "the stock is gone", Cause: err}
	case errors.Is(err, drop.ErrNotOpen):
		return &Error{Status: http.StatusConflict, Code: codeNotOpen, Message: "the drop is not open", Cause: err}
	case as(err, &redeemed):
		return &Error{Status: http.StatusConflict, Code: codeCodeRedeemed, Message: "the code was redeemed already", Cause: err,
			Redeemed: &redeemed.Redemption}
	case errors.Is(err, drop.ErrNoSuchCode):
		return &Error{Status: http.StatusNotFound, Code: codeCodeNotFound, Message: "no claim of this drop has this code", Cause: err}
	case as(err, &fixed):
		return &Error{Status: http.StatusConflict, Code: codeDropStarted, Field: fixed.Field, Cause: err,
			Message: fixed.Field + " cannot change once the drop has claims (its title, message, stock and times can, and per_visitor can go up)"}
	case as(err, &followed):
		return &Error{Status: http.StatusConflict, Code: codeDropFollowed, Field: "room", Room: followed.Room, Message: err.Error(), Cause: err}
	case errors.Is(err, drop.ErrStarted):
		return &Error{Status: http.StatusConflict, Code: codeDropStarted, Message: "the drop has claims: it cannot be deleted, and only its title, message, stock and times can change, and per_visitor go up", Cause: err}
	case as(err, &e):
		return e
	case as(err, &ce):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidConfig, Message: ce.Error(), Field: ce.Field, Cause: err}
	case as(err, &ace):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidConfig, Message: ace.Error(), Field: ace.Field, Cause: err}
	case errors.Is(err, auction.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: codeAuctionNotFound, Message: "no such auction", Cause: err}
	case errors.Is(err, auction.ErrClosed):
		return &Error{Status: http.StatusConflict, Code: codeAuctionClosed, Message: "the auction has ended", Cause: err}
	case errors.Is(err, auction.ErrNotStarted):
		return &Error{Status: http.StatusConflict, Code: codeAuctionNotStarted, Message: "the auction has not started", Cause: err}
	case as(err, &afixed):
		return &Error{Status: http.StatusConflict, Code: codeAuctionStarted, Field: afixed.Field, Cause: err,
			Message: afixed.Field + " cannot change once the auction has bids (its title and message can)"}
	case errors.Is(err, auction.ErrStarted):
		return &Error{Status: http.StatusConflict, Code: codeAuctionStarted, Message: "an auction with bids, or sold, cannot be replaced or deleted", Cause: err}
	case errors.Is(err, auction.ErrBuyNowGone):
		return &Error{Status: http.StatusConflict, Code: codeBuyNowUnavailable, Message: "buy now is no longer available", Cause: err}
	case errors.Is(err, auction.ErrInvalidAmount):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidAmount, Message: "amounts are positive integers of minor units", Cause: err}
	case errors.Is(err, room.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: codeRoomNotFound, Message: "no such room", Cause: err}
	case errors.Is(err, room.ErrInviteRequired):
		return &Error{Status: http.StatusForbidden, Code: codeInviteRequired, Cause: err,
			Message: "this line takes invited visitors: send Rushgate-Invite: <code>, or the site's Rushgate-Enqueue token"}
	case errors.Is(err, room.ErrInviteInvalid):
		return &Error{Status: http.StatusForbidden, Code: codeInviteInvalid, Message: "the invite code is not valid, or was used already", Cause: err}
	case errors.Is(err, room.ErrClosed):
		return &Error{Status: http.StatusGone, Code: codeRoomClosed, Message: "the room takes no new visitors", Cause: err}
	case errors.Is(err, room.ErrNotAdmitted):
		return &Error{Status: http.StatusConflict, Code: codeNotAdmitted, Message: "no current admission to release", Cause: err}
	case errors.Is(err, keyring.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: codeRotationConflict, Message: "the signing keys kept changing during the rotation; retry", Cause: err}
	case errors.Is(err, operator.ErrExists):
		return &Error{Status: http.StatusConflict, Code: codeOperatorExists, Message: "an operator has this name; delete it first to hand out a new key", Cause: err}
	case errors.Is(err, operator.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: codeOperatorNotFound, Message: "no operator has this name", Cause: err}
	case errors.Is(err, operator.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidRequest, Field: "name", Cause: err,
			Message: `an operator needs a name of 1-64 of A-Z, a-z, 0-9, _ and - (not "admin") and a role, "editor" or "viewer"`}
	case errors.Is(err, operator.ErrLife):
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidRequest, Field: "expires_in", Cause: err,
			Message: "expires_in, when given, is from 1m to 8784h (a year)"}
	case errors.Is(err, operator.ErrFull):
		return &Error{Status: http.StatusConflict, Code: codeTooManyOperators, Message: "there are as many operators as rushgate keeps; delete one first", Cause: err}
	case errors.Is(err, operator.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: codeRotationConflict, Message: "the operators kept changing on other instances; retry", Cause: err}
	case errors.Is(err, notify.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: codeWebhookNotFound, Message: "no such webhook", Cause: err}
	case errors.Is(err, rushgate.ErrRecordUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: codeStoreUnavailable, Message: "the durable record is unavailable; retry shortly", Cause: err}
	case errors.Is(err, rushgate.ErrUnconfirmed):
		return &Error{Status: http.StatusServiceUnavailable, Code: codeStoreUnavailable, Cause: err,
			Message: "made, but not yet confirmed by the state store's replicas; retry shortly (a claim with the same Idempotency-Key) to learn its outcome"}
	case errors.Is(err, rushgate.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: codeStoreUnavailable, Message: "the state store is unavailable; retry shortly", Cause: err}
	default:
		return &Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error", Cause: err}
	}
}

// as is errors.As without its reflection, and without moving target to the heap.
func as[E error](err error, target *E) bool {
	v, ok := errors.AsType[E](err)
	if ok {
		*target = v
	}
	return ok
}

type errorBody struct {
	*challengeBody
	Error struct {
		Code       string       `json:"code"`
		Message    string       `json:"message"`
		MinNextBid int64        `json:"min_next_bid,omitempty"`
		Claims     []drop.Claim `json:"claims,omitempty"`
		Room       string       `json:"room,omitempty"`
		Field      string       `json:"field,omitempty"`
		*drop.Redemption
	} `json:"error"`
}

// failure maps err to what the API answers, logs it when it is the server's fault (5xx), and aborts
// the answer when the visitor has gone: a failure they caused by leaving is neither answered nor logged.
func (s *Server) failure(r *http.Request, err error) *Error {
	e := fromDomain(err)
	if r.Context().Err() != nil && e.Status >= 500 {
		panic(http.ErrAbortHandler)
	}
	if e.Status >= 500 {
		level := slog.LevelError
		if e.Status == http.StatusServiceUnavailable {
			level = slog.LevelWarn // an outage of the store, reported by /healthz too; not a bug
		}
		s.log.LogAttrs(r.Context(), level, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("code", e.Code), slog.Any("err", err))
	}
	return e
}

// writeError sends the JSON error envelope; 5xx responses are logged with the request's context. When
// the client has gone (the request's context is done), a refusal of the request itself (4xx) is still
// written, since a client that half-closed after a short body still reads it; a failure that came from
// the leaving is neither answered nor logged, and the connection is closed without a response, so that
// net/http never completes it as an empty 200.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.failure(r, err)
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.MinNextBid, b.Error.Claims, b.Error.Room = e.Code, e.Message, e.MinNextBid, e.Claims, e.Room
	b.Error.Field, b.Error.Redemption = e.Field, e.Redeemed
	if c := e.Challenge; c != nil {
		b.challengeBody = &challengeBody{Challenge: c.Token, Difficulty: c.Difficulty, Algorithm: "sha256", ExpiresAt: c.ExpiresAt}
	}
	bp := statusBufs.Get().(*[]byte)
	if buf, ok := b.appendJSON((*bp)[:0]); ok {
		*bp = buf
		writeEncoded(w, e.Status, bp)
		return
	}
	statusBufs.Put(bp)
	writeJSON(w, e.Status, b)
}
