package httpapi

import (
	"net/http"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/visitor"
)

// identityOf spells out the default identity.
func identityOf(id visitor.Identity) visitor.Identity {
	if id == "" {
		return visitor.IdentityAny
	}
	return id
}

// admissionOf reads the admission a visitor shows to a drop or an auction behind a room, from the
// admission token in the body or else the Rushgate-Admission header: nil when there is none or its
// signature or expiry does not hold. Whether it is the right room's and still live is the domain's to
// judge (rushgate.CheckAdmission).
func (s *Server) admissionOf(r *http.Request, token string) *rushgate.Admission {
	if token == "" {
		token = r.Header.Get("Rushgate-Admission")
	}
	if token == "" {
		return nil
	}
	c, err := s.verifier.Verify(r.Context(), token, "")
	if err != nil {
		return nil
	}
	return &rushgate.Admission{Room: c.Room, Visitor: c.Subject, ID: c.ID}
}
