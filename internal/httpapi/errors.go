package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/rushgate/rushgate/internal/room"
)

// Error codes are part of the API: clients switch on them, so they never change meaning.
const (
	codeInvalidJSON           = "invalid_json"
	codeInvalidConfig         = "invalid_config"
	codeInvalidRoomID         = "invalid_room_id"
	codeInvalidRequest        = "invalid_request"
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
)

// Error is an API failure: a stable code and a message for the client, the HTTP status, and the cause,
// which is logged but never sent.
type Error struct {
	Status  int
	Code    string
	Message string
	Cause   error
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
	var e *Error
	var ce *room.ConfigError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &ce):
		return &Error{http.StatusBadRequest, codeInvalidConfig, ce.Error(), err}
	case errors.Is(err, room.ErrNotFound):
		return &Error{http.StatusNotFound, codeRoomNotFound, "no such room", err}
	case errors.Is(err, room.ErrNotAdmitted):
		return &Error{http.StatusConflict, codeNotAdmitted, "no current admission to release", err}
	case errors.Is(err, room.ErrUnavailable):
		return &Error{http.StatusServiceUnavailable, codeStoreUnavailable, "the state store is unavailable; retry shortly", err}
	default:
		return &Error{http.StatusInternalServerError, codeInternal, "internal error", err}
	}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError sends the JSON error envelope; 5xx responses are logged with the request's context. A
// request whose client has gone is neither answered nor logged: the failure is the client's leaving.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	e := fromDomain(err)
	if e.Status >= 500 {
		level := slog.LevelError
		if e.Status == http.StatusServiceUnavailable {
			level = slog.LevelWarn // an outage of the store, reported by /healthz too; not a bug
		}
		s.log.LogAttrs(r.Context(), level, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("code", e.Code), slog.Any("err", err))
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	var b errorBody
	b.Error.Code, b.Error.Message = e.Code, e.Message
	writeJSON(w, e.Status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
