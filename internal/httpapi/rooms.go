package httpapi

import (
	"net/http"

	"github.com/rushgate/rushgate/internal/room"
)

type roomBody struct {
	ID string `json:"id"`
	room.Config
	Stats *room.Stats `json:"stats,omitempty"`
}

func (s *Server) putRoom(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cfg, err := room.DecodeConfig(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.rooms.Put(r.Context(), id, cfg); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "room saved", "room", id, "capacity", cfg.Capacity, "paused", cfg.Paused)
	writeJSON(w, http.StatusOK, roomBody{ID: id, Config: cfg})
}

func (s *Server) getRoom(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cfg, st, err := s.rooms.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, roomBody{ID: id, Config: cfg, Stats: &st})
}

func (s *Server) deleteRoom(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err == nil {
		err = s.rooms.Delete(r.Context(), id)
	}
	s.deleted(w, r, "room", id, err)
}

// deleted answers the DELETE of a room, drop or auction (kind): 200 {"id", "deleted": true}, logged,
// or the error that kept it.
func (s *Server) deleted(w http.ResponseWriter, r *http.Request, kind, id string, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), kind+" deleted", kind, id)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}
