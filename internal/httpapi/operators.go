package httpapi

import (
	"net/http"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/operator"
)

var errOperatorsOff = apiError(http.StatusConflict, codeOperatorsOff, "this rushgate keeps no operators")

// roster wraps the operator calls: a server built without operators answers them 409 operators_off.
func (s *Server) roster(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.operators == nil {
			s.writeError(w, r, errOperatorsOff)
			return
		}
		next(w, r)
	}
}

// listOperators answers GET /v1/operators: every operator's name, role and creation, never a key.
func (s *Server) listOperators(w http.ResponseWriter, r *http.Request) {
	list, err := s.operators.List(r.Context())
	if err != nil {
		s.writeError(w, r, fromDomain(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"operators": list})
}

// newOperator is what POST /v1/operators answers: the operator and its key, shown this once.
type newOperator struct {
	operator.Operator
	Key string `json:"key"`
}

// addOperator answers POST /v1/operators {"name", "role"} with the new operator's key.
func (s *Server) addOperator(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string        `json:"name"`
		Role operator.Role `json:"role"`
		// ExpiresIn, when set, is how long the key works: a key for one on-sale's staff.
		ExpiresIn rushgate.Duration `json:"expires_in"`
	}
	if err := decode(r, &req, false); err != nil {
		s.writeError(w, r, fromDomain(err))
		return
	}
	op, key, err := s.operators.Add(r.Context(), req.Name, req.Role, time.Duration(req.ExpiresIn))
	if err != nil {
		s.writeError(w, r, fromDomain(err))
		return
	}
	s.log.InfoContext(r.Context(), "operator added", "operator", op.Name, "role", op.Role)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, newOperator{op, key})
}

// patchOperator answers PATCH /v1/operators/{name} {"role"}: the operator with its new role, its key
// kept.
func (s *Server) patchOperator(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Role operator.Role `json:"role"`
	}
	if err := decode(r, &req, false); err != nil {
		s.writeError(w, r, fromDomain(err))
		return
	}
	op, err := s.operators.SetRole(r.Context(), r.PathValue("name"), req.Role)
	if err != nil {
		s.writeError(w, r, fromDomain(err))
		return
	}
	writeJSON(w, http.StatusOK, op)
}

// removeOperator answers DELETE /v1/operators/{name} as the other DELETEs: the key and its console
// sessions stop working.
func (s *Server) removeOperator(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	_, err := s.operators.Remove(r.Context(), name)
	s.deleted(w, r, "operator", name, err)
}
