package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

// The operator's API: lists, history, audit and the controls the console's buttons call. All of it
// needs the admin credential.

// listParams reads ?after=ID&limit=N of the lists of rooms, drops and auctions.
func listParams(r *http.Request) (after string, limit int, err error) {
	q := r.URL.Query()
	after = q.Get("after")
	if after != "" && !rushgate.ValidID(after) {
		return "", 0, apiError(http.StatusBadRequest, codeInvalidRequest, "after must be an id")
	}
	if limit, err = limitParam(q, 50, 500); err != nil {
		return "", 0, err
	}
	return after, limit, nil
}

// listing answers a page of the list of rooms, drops or auctions under key, as list reads it:
// next_after is set when a next page may follow, and "unavailable" names the entities listed that the
// store could not read (a Cluster master down).
func listing[T any](s *Server, key string, list func(ctx context.Context, after string, limit int) (rushgate.Listed[T], error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		after, limit, err := listParams(r)
		var page rushgate.Listed[T]
		if err == nil {
			page, err = list(r.Context(), after, limit)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{key: page.Items, "unavailable": page.Unavailable, "next_after": page.Next})
	}
}

// sinceParam reads ?since= as RFC 3339 or unix seconds; without it, the whole history kept.
func (s *Server) sinceParam(r *http.Request) (time.Time, error) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return s.now().Add(-rushgate.HistoryKeep), nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n < 1<<40 {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, apiError(http.StatusBadRequest, codeInvalidRequest, "since must be an RFC 3339 time or unix seconds")
	}
	return t, nil
}

// history serves the points of one room, drop or auction after ?since=.
func history[P any](s *Server, param string, read func(ctx context.Context, id string, since time.Time) ([]P, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r, param)
		var since time.Time
		if err == nil {
			since, err = s.sinceParam(r)
		}
		var points []P
		if err == nil {
			points, err = read(r.Context(), id, since)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "samples": points, "now": s.now().UTC()})
	}
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, id, by, before := q.Get("kind"), q.Get("id"), q.Get("by"), q.Get("before")
	var limit int
	var err error
	switch {
	case kind != "" && kind != "room" && kind != "drop" && kind != "auction" && kind != "operator":
		err = apiError(http.StatusBadRequest, codeInvalidRequest, `kind must be "room", "drop", "auction" or "operator"`)
	case id != "" && !rushgate.ValidID(id):
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "id must be an id")
	case by != "" && !rushgate.ValidID(by):
		err = apiError(http.StatusBadRequest, codeInvalidRequest, `by must name an operator, or "admin"`)
	case len(before) > 64:
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "before must be a cursor from an earlier page")
	default:
		limit, err = limitParam(q, 100, 500)
	}
	var entries []rushgate.Entry
	if err == nil {
		if s.auditLog == nil {
			entries = []rushgate.Entry{}
		} else {
			entries, err = s.auditLog.Entries(r.Context(), rushgate.AuditFilter{Kind: kind, ID: id, By: by, Before: before}, limit)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	next := ""
	if len(entries) == limit {
		next = entries[len(entries)-1].Cursor
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "next_before": next})
}

// patchRoom changes the fields of a room's config that the body names: the console's pause, resume,
// capacity, rate and session TTL.
func (s *Server) patchRoom(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	var cfg room.Config
	if err == nil {
		cfg, err = s.rooms.Patch(r.Context(), id, body)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "room changed", "room", id, "capacity", cfg.Capacity, "paused", cfg.Paused)
	writeJSON(w, http.StatusOK, roomBody{ID: id, Config: cfg})
}

// dropControl opens or closes a drop now (open true or false) and answers the drop as its GET does.
func (s *Server) dropControl(open bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := dropID(r)
		if err == nil {
			if open {
				err = s.drops.OpenNow(r.Context(), id)
			} else {
				err = s.drops.CloseNow(r.Context(), id)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.getDrop(w, r)
	}
}

// endAuction ends an auction now; extendAuction moves its end by {"by": "5m"}.
func (s *Server) endAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err == nil {
		_, err = s.auctions.EndNow(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.getAuction(w, r)
}

func (s *Server) extendAuction(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	var req struct {
		By rushgate.Duration `json:"by"`
	}
	if err == nil {
		err = decode(r, &req, false)
	}
	if err == nil && (req.By <= 0 || time.Duration(req.By) > 30*24*time.Hour) {
		err = apiError(http.StatusBadRequest, codeInvalidRequest, `by must be a duration from "1s" to "720h"`)
	}
	if err == nil {
		_, err = s.auctions.Extend(r.Context(), id, time.Duration(req.By))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.getAuction(w, r)
}

// summary serves one drop's or auction's summary with its whole config, which the public GET does not
// show (codes, reserve): what the console's edit form starts from.
func summary[T any](s *Server, param string, read func(ctx context.Context, id string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r, param)
		var v T
		if err == nil {
			v, err = read(r.Context(), id)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// addInvites uploads invite codes: {"codes": [...]} → {"added": N}, the codes that were new.
func (s *Server) addInvites(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	var req struct {
		Codes []string `json:"codes"`
	}
	if err == nil {
		err = decode(r, &req, false)
	}
	if err == nil && (len(req.Codes) == 0 || len(req.Codes) > 10000) {
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "codes must list 1 to 10,000 codes")
	}
	var n int
	if err == nil {
		n, err = s.rooms.AddInvites(r.Context(), id, req.Codes)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "added": n})
}
