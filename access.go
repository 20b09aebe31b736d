package rushgate

import (
	"context"
	"errors"
)

// Refusals of an action on a drop or an auction that its guard asks more of.
var (
	// ErrAdmissionRequired means the drop or auction sits behind a room and the visitor showed no live
	// admission of it.
	ErrAdmissionRequired = errors.New("rushgate: an admission of the room is required")
	// ErrIdentityRequired means the drop or auction counts site accounts ("identity": "site") and the
	// visitor was not minted for one.
	ErrIdentityRequired = errors.New("rushgate: a visitor minted for a subject is required")
)

// Admission is a visitor's admission to a room as its verified token shows it: what a drop or an
// auction behind the room asks to see. The transport verifies the token's signature and expiry; the
// domain checks that it is for the right room and visitor and still live.
type Admission struct {
	Room    string
	Visitor string
	ID      string
}

// Gatekeeper is what drops and auctions behind a room ask of it: whether an admission is still the
// visitor's live one, and to end one. The room service is one.
type Gatekeeper interface {
	Active(ctx context.Context, room, visitor, admissionID string) (bool, error)
	Release(ctx context.Context, room, visitor, admissionID string) error
}

// CheckAdmission returns nil if a shows visitor's live admission of room, ErrAdmissionRequired if it
// does not, and an error wrapping ErrUnavailable if the room's store cannot tell.
func CheckAdmission(ctx context.Context, g Gatekeeper, room, visitor string, a *Admission) error {
	if a == nil || a.Room != room || a.Visitor != visitor {
		return ErrAdmissionRequired
	}
	live, err := g.Active(ctx, room, visitor, a.ID)
	switch {
	case errors.Is(err, ErrUnavailable):
		return err
	case err != nil || !live:
		return ErrAdmissionRequired
	}
	return nil
}
