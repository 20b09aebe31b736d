package room

import (
	"context"
	"errors"
	"time"

	"github.com/rushgate/rushgate"
)

// Domain outcomes returned by a [Store] and by [Service]. Backends map their native errors onto these so
// that callers can test them with errors.Is whatever the backend.
var (
	// ErrNotFound means the room does not exist.
	ErrNotFound = errors.New("room: not found")
	// ErrNotAdmitted means the visitor holds no current admission matching the request.
	ErrNotAdmitted = errors.New("room: not admitted")
	// ErrClosed refuses a join that would take a new place in a room whose mode is reject.
	ErrClosed = errors.New("room: closed to new joins")
	// ErrInviteRequired refuses a new place in a room with entry "invite" to a join without a code or
	// an enqueue token; ErrInviteInvalid one whose code is not listed or used already.
	ErrInviteRequired = errors.New("room: an invite code or enqueue token is required")
	ErrInviteInvalid  = errors.New("room: the invite code is not valid or used already")
)

// State is where a visitor stands with respect to one room.
type State string

// The states a visitor can be in.
const (
	StateNone     State = "none"
	StateWaiting  State = "waiting"
	StateAdmitted State = "admitted"
	// StateSoldOut is the state of anyone not admitted to a room whose drop is sold out: a waiting
	// visitor keeps its place, which moves again if the room follows a second batch, and anyone else
	// would be refused one. Status tells the latter too, so that a page without a place can see when
	// the line takes joins again.
	StateSoldOut State = "sold_out"
)

// Admission is a visitor's current right to enter the protected site.
type Admission struct {
	// ID is unique across the room's lifetime and becomes the admission token's jti, so that a token
	// can release or be checked against exactly the admission it was issued for.
	ID string
	// ExpiresAt is when the slot frees by itself: the end of the grace window until the admission is
	// collected, then the end of the session.
	ExpiresAt time.Time
	// Collected reports whether the visitor has been shown the admission.
	Collected bool
}

// Status is a visitor's standing in a room at one instant.
type Status struct {
	State State
	// Position is 1 for the next visitor to be admitted; it is set only while waiting.
	Position int64
	// Admission is set only when admitted.
	Admission Admission
}

// Entrant is a visitor joining a line, with what its visitor token says about the lines it can be in.
type Entrant struct {
	// Visitor is the visitor's id.
	Visitor string
	// Origin is the room whose join issued the visitor's token, for an anonymous visitor ("" when the
	// token names none). Until such a visitor joins another room, its origin's line is the only one it
	// can be in, so a backend that records where each visitor waits (Redis, for the one-line rule)
	// need not record a visitor that never left its origin, and reads the origin where it finds no
	// record. Most of a crowd joins one room only, so that is most of the records.
	Origin string
	// New reports that this join issued the visitor's token: the visitor is in no line and holds no
	// admission anywhere yet, so there is nothing to look up or leave.
	New bool
	// Switch lets the join move a visitor out of another room's line. Without it a visitor waiting
	// elsewhere is refused with an *ElsewhereError, so that nothing a page does on its own (a crafted
	// link that opens another room's page) gives up a place: the person must ask to switch.
	Switch bool
	// Invite is the invite code a join into a room with entry "invite" takes a new place with: it is
	// used only if the join takes the place (see [Service.Join]).
	Invite string
}

// ElsewhereError refuses a join of a visitor that waits in another room's line and did not ask to
// switch; Room names that room.
type ElsewhereError struct{ Room string }

func (e *ElsewhereError) Error() string {
	return "room: the visitor waits in the line of room " + e.Room
}

// Admitted names one visitor let in by a [Tick].
type Admitted struct {
	Visitor   string
	Admission Admission
}

// Tick is the outcome of one admission step.
type Tick struct {
	// Admitted lists the visitors let in, in line order.
	Admitted []Admitted
	// Expired lists admitted visitors whose session or grace window ran out.
	Expired []string
	// Idle lists waiting visitors removed for not showing presence within the idle timeout.
	Idle []string
	// More reports that the step stopped at its batch limit with more work due now.
	More bool
	// Next is when time alone may allow more work (a session expiry, a rate window sliding, an idle
	// deadline or the opening); zero when only a join or a release can.
	Next time.Time
	// AdmittedTotal counts every admission the room has made, for ETAs and metrics.
	AdmittedTotal int64
	// Free counts the slots of a room of capacity that the step left free: its capacity less the
	// admissions live after it, and no more than the units left of the drop it follows (0 without a
	// capacity). The first in line take them as soon as the room admits.
	Free int64
	// Waiting counts the visitors still in line after the step. Admissions made while some wait show
	// the room's pace; those of a room with nobody waiting show only how fast visitors arrive.
	Waiting int64
	// DropOpens is the opening of the drop the room follows while it is still to come at the step's
	// time: the room admits nobody until then, and its line is told when the sale starts.
	DropOpens time.Time
	// DropClosed reports that the drop the room follows takes no claims at the step's time (its
	// closing, as SetUnits or Restock last told it, has passed): the step let nobody in.
	DropClosed bool
}

// Stats counts a room's visitors: how many wait and are in now, and totals since the room was created,
// from which its history derives rates.
type Stats struct {
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admitted_total"`
	// JoinedTotal counts places taken in the line (a repeated join takes none).
	JoinedTotal int64 `json:"joined_total"`
	// IdleTotal counts waiters who left the line by going idle; GraceTotal, admissions never collected.
	IdleTotal  int64 `json:"idle_total"`
	GraceTotal int64 `json:"grace_total"`
}

// Store holds rooms and their lines. Each method is one atomic step against the backend's state (one
// critical section in memory, one Lua script in Redis): its checks and writes take effect together or not
// at all, and every decision about time uses the backend's own clock. Methods return ErrNotFound for an
// unknown room and wrap rushgate.ErrUnavailable when the backend cannot answer.
type Store interface {
	// PutRoom creates a room or replaces its config, keeping its line and admissions.
	PutRoom(ctx context.Context, id string, cfg Config) error
	// Room returns a room's config.
	Room(ctx context.Context, id string) (Config, error)
	// DeleteRoom removes a room with its line and admissions.
	DeleteRoom(ctx context.Context, id string) error
	// Rooms lists every room, so that an instance can run the gates of rooms it has never been asked about.
	Rooms(ctx context.Context) ([]string, error)

	// Join puts a visitor at the back of the line, or returns the place it already holds. A visitor waits
	// in one room's line at a time: joining with Switch leaves the line of any other room, joining
	// without it is refused with *ElsewhereError while the visitor waits in another. Joining while
	// admitted collects the admission, as Status does. A New entrant's Origin must be id.
	Join(ctx context.Context, id string, e Entrant) (Status, error)
	// Status returns the visitor's standing. It counts as presence for a waiting visitor and collects an
	// admission, turning its grace window into a full session. A visitor in no line of a sold-out room
	// gets StateSoldOut, as Join would refuse it a place.
	Status(ctx context.Context, id, visitor string) (Status, error)
	// Touch records presence for waiting visitors that hold a stream open, in one step for many.
	Touch(ctx context.Context, id string, visitors []string) error
	// Leave takes the visitor out of the line or gives up its admission; it reports whether there was
	// anything to leave.
	Leave(ctx context.Context, id, visitor string) (bool, error)
	// Release ends the visitor's admission early, freeing its slot at once. A non-empty admissionID must
	// match the current admission. ErrNotAdmitted when there is none to release.
	Release(ctx context.Context, id, visitor, admissionID string) error
	// Admit runs one admission step: it expires ended sessions and idle waiters, then admits up to max
	// visitors from the front of the line within capacity and rate. Its cost grows with the visitors it
	// admits or expires, never with the length of the line, so a tick is cheap for a line of millions.
	Admit(ctx context.Context, id string, max int) (Tick, error)
	// Stats counts the room's waiting and active visitors.
	Stats(ctx context.Context, id string) (Stats, error)
	// Active reports whether admissionID is still the visitor's live admission, for online verification.
	Active(ctx context.Context, id, visitor, admissionID string) (bool, error)

	// SetUnits links the room to drop, of l.Stock units in all with l.Left left, opening at l.Opens and
	// closing at l.Closes, as the drop's config write numbered l.Written left it (see
	// rushgate.Gatekeeper), or unlinks it with l.Left -1 (drop ""). A linked room admits no more
	// visitors than its units, and none before its drop's opening or from its closing on, judged in
	// each step by the store's clock; it is sold out exactly when l.Left is 0, so that a room sold out
	// with one drop takes joins again when linked to a second batch.
	//
	// SetUnits, Restock, Hold, Unhold and SoldOut each name the drop they are about, and change the
	// room's units only while its config (Config.Drop) names that drop, checked in the same step: a
	// room follows one drop's stock, other drops may sit behind it too, and a room linked to another
	// drop, or unlinked, between a caller's read and its step keeps its count.
	SetUnits(ctx context.Context, id, drop string, l rushgate.Level) error
	// Restock tells a linked room that its drop has l.Stock units in all and opens and closes at
	// l.Opens and l.Closes, as of its config write numbered l.Written: its units change by the
	// difference from the stock it last heard of (SetUnits or Restock), never below none, so that
	// hearing the same stock again changes nothing, nor does a level of a write before the last one
	// heard of (told late). An unlinked room keeps none. It reports whether the stock was news.
	Restock(ctx context.Context, id, drop string, l rushgate.Level) (bool, error)
	// Hold checks that admissionID is the visitor's live admission (ErrNotAdmitted otherwise) and, in a
	// room linked to drop, takes one unit (rushgate.ErrSoldOut when there is none or the room is sold
	// out). It reports whether it took one.
	Hold(ctx context.Context, id, drop, visitor, admissionID string) (bool, error)
	// Unhold gives a unit of drop back.
	Unhold(ctx context.Context, id, drop string) error
	// AddInvites adds invite codes to the room's list (a code listed already stays as it is, used or
	// not) and reports how many were new.
	AddInvites(ctx context.Context, id string, codes []string) (int, error)
	// TakeInvite takes an unused code of the room's list for a join, reporting false for a code not
	// listed or used already; ReturnInvite gives it back when the join then failed.
	TakeInvite(ctx context.Context, id, code string) (bool, error)
	ReturnInvite(ctx context.Context, id, code string) error
	// SoldOut marks a room linked to drop sold out: it admits nobody, its waiting visitors' status is
	// StateSoldOut, and joins that would take a new place are refused with rushgate.ErrSoldOut.
	SoldOut(ctx context.Context, id, drop string) error
}
