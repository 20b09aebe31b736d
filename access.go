package rushgate

import (
	"context"
	"errors"
	"time"
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

// ErrSoldOut means the stock a room follows is gone: the room admits nobody more, and the drop's claims
// are refused.
var ErrSoldOut = errors.New("rushgate: sold out")

// Gatekeeper is what drops and auctions behind a room ask of it: whether an admission is still the
// visitor's live one, and to end one. The room service is one.
//
// A room may follow a drop's stock (its config's drop): it then keeps a count of the units not yet
// claimed and never holds more admissions than that. A claim behind such a room first holds a unit
// (Hold), then claims it from the drop, and gives the unit back (Unhold) if the claim fails; a claim
// made ends the admission that brought the visitor, whose unit it was. When the drop runs out, SoldOut
// tells the room, which turns its line away; when an operator restocks the drop, or lowers its stock,
// Restock tells it the new stock, and again each second while the drop takes claims, so that a change
// the room missed (an instance that stopped between the two steps) reaches it all the same. What it is
// told may come out of order (a sampler's read from before a change, told after it): each [Level]
// says which write of the drop's config it is of, and the room keeps the latest.
type Gatekeeper interface {
	Active(ctx context.Context, room, visitor, admissionID string) (bool, error)
	Release(ctx context.Context, room, visitor, admissionID string) error
	// Hold checks the admission like Active (ErrAdmissionRequired when it is not live) and, in a room
	// that follows drop's stock, takes one of its units (ErrSoldOut when none is left). It reports
	// whether it took one, which the claim then owes back or ends the admission for. A claim on
	// another drop behind the room takes none: several drops may sit behind one room, which follows
	// the stock of at most one of them.
	Hold(ctx context.Context, room, drop, visitor, admissionID string) (bool, error)
	// Unhold gives back a unit taken by Hold for a claim on drop that failed.
	Unhold(ctx context.Context, room, drop string) error
	// SoldOut tells the room that drop has no unit left, which sells the room out if it follows drop.
	SoldOut(ctx context.Context, room, drop string) error
	// Restock tells the room the level of drop's stock, if the room follows that drop: its count
	// changes by the difference from the stock it last heard of, so that telling it again, or telling
	// it a level of an earlier write, changes nothing; with none left it is sold out. The level also
	// says when the drop stops taking claims, after which the room admits nobody until it reopens.
	Restock(ctx context.Context, room, drop string, l Level) error
	// Follows reports whether room follows drop's stock, as its config now stands: a drop that a room
	// follows keeps its place behind that room, since the room would otherwise go on counting its
	// units, or holding its line for its opening, after it was gone.
	Follows(ctx context.Context, room, drop string) (bool, error)
}

// Level is a drop's stock as a room that follows it hears of it: Stock units in all and Left of them
// unclaimed, read from the drop as its config's write numbered Written left it (see drop.Info.Written).
// Opens and Closes are when the drop starts and stops taking claims (its opens_at and closes_at; a
// zero Closes for never): a line let in before the one or after the other would find nothing to
// claim, however many units are left.
type Level struct {
	Stock, Left   int
	Written       int64
	Opens, Closes time.Time
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

// Stock is what a room that follows a drop asks of the drop when it is linked to it: how many units are
// left of how many in all, refusing a drop that does not sit behind that room (only its admitted
// visitors may claim, so the room's count of units stays the drop's).
type Stock interface {
	Remaining(ctx context.Context, drop, room string) (Level, error)
}

// Spent remembers things that may be used once (a solved challenge, an invite code) until they expire,
// shared by every instance on a shared backend.
type Spent interface {
	// Spend marks id as used until until and reports whether this was its first use.
	Spend(ctx context.Context, id string, until time.Time) (bool, error)
}

// Releases tells every instance of admissions ended early, so that checks that verify tokens offline
// (nginx's check endpoint, the protecting proxy) refuse them everywhere, not only where they ended.
type Releases interface {
	// Announce tells every instance that the admission id ended; its token runs until until.
	Announce(ctx context.Context, id string, until time.Time) error
	// Listen reports the announced admissions, of any instance, until ctx ends.
	Listen(ctx context.Context) <-chan Released
}

// Released is an admission ended early, and when its token would have run out.
type Released struct {
	ID    string
	Until time.Time
}
