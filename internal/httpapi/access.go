package httpapi

import (
	"net/http"

	"github.com/rushgate/rushgate/internal/visitor"
)

// identityOf spells out the default identity.
func identityOf(id visitor.Identity) visitor.Identity {
	if id == "" {
		return visitor.IdentityAny
	}
	return id
}

// identified checks that a visitor is of the identity a drop or an auction requires. "room" needs no
// check of its own: a drop or auction with a room always asks for an admission of it (admitted).
func identified(required visitor.Identity, vid string) error {
	if required == visitor.IdentitySite && !visitor.Subject(vid) {
		return apiError(http.StatusForbidden, codeIdentityRequired, "this needs a visitor the site minted for a signed-in account (POST /v1/visitors)")
	}
	return nil
}

// admitted checks that visitor holds a live admission for roomID, from the admission token in the
// body or the Rushgate-Admission header, and returns the admission's id.
func (s *Server) admitted(r *http.Request, roomID, visitor, admissionToken string) (string, error) {
	if admissionToken == "" {
		admissionToken = r.Header.Get("Rushgate-Admission")
	}
	refused := apiError(http.StatusForbidden, codeNotAdmitted, "this needs an admission from room "+roomID)
	c, err := s.verifier.Verify(r.Context(), admissionToken, roomID)
	if err != nil || c.Subject != visitor {
		return "", refused
	}
	live, err := s.rooms.Active(r.Context(), roomID, visitor, c.ID)
	if err != nil || !live {
		return "", refused
	}
	return c.ID, nil
}
