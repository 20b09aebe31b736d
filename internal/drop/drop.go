// Package drop is the first-come-first-served claim of a limited stock: coupons, tickets. Its rules —
// never past the stock, at most per_visitor claims each, only while open, the same answer for a
// repeated Idempotency-Key — are written twice: in Go, as [State.Decide] and [State.Take], pure
// functions of the state and an instant that the embedded backend applies inside its critical section;
// and in Lua, as the Redis backend's claim script, which must run as one step inside Redis. The
// conformance suite (internal/storetest) holds the two to one behaviour. Who may claim, and what a
// claim does to the room a drop sits behind, is the [Service]'s.
package drop

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/visitor"
)

// Limits on a drop's config.
const (
	MaxStock   = 10_000_000
	MaxCodeLen = 128
	// MaxCodes bounds the codes a config lists, a coupon partner's batch.
	MaxCodes = 100_000
)

// Domain outcomes of a claim.
var (
	ErrNotFound = errors.New("drop: not found")
	ErrSoldOut  = errors.New("drop: sold out")
	ErrNotOpen  = errors.New("drop: not open")
	ErrStarted  = errors.New("drop: already has claims")
	// ErrFollowed refuses deleting a drop, or moving it from behind its room, while that room follows
	// its stock (see [rushgate.Gatekeeper.Follows]); a *FollowedError names the room.
	ErrFollowed = errors.New("drop: a room follows its stock")
	// ErrNoSuchCode answers a lookup of a code that no claim of the drop handed out (yet).
	ErrNoSuchCode = errors.New("drop: no claim has this code")
	// ErrBelowClaimed refuses a stock lowered below the units claimed already.
	ErrBelowClaimed = errors.New("drop: stock below the units claimed")
)

// FixedError refuses a change, to a drop that has claims, of a field its claims were made under (all
// but the title, the message, the stock, the times and a higher per_visitor). It is an ErrStarted.
type FixedError struct{ Field string }

func (e *FixedError) Error() string {
	return "drop: " + e.Field + " cannot change once the drop has claims (its title, message, stock and times can, and per_visitor can go up)"
}

// Unwrap makes errors.Is(err, ErrStarted) true.
func (e *FixedError) Unwrap() error { return ErrStarted }

// FollowedError refuses a change that would take a drop from the room that follows its stock: the
// room's drop is to be set to none, or the room deleted, first.
type FollowedError struct{ Room string }

func (e *FollowedError) Error() string {
	return fmt.Sprintf("room %s follows the drop's stock: set that room's drop to none, or delete the room, first", e.Room)
}

// Unwrap makes errors.Is(err, ErrFollowed) true.
func (e *FollowedError) Unwrap() error { return ErrFollowed }

// AlreadyClaimedError is a refused claim by a visitor who holds all it may; it carries those claims.
type AlreadyClaimedError struct{ Claims []Claim }

func (e *AlreadyClaimedError) Error() string { return "drop: already claimed" }

// Config is a drop as the operator describes it.
type Config struct {
	// Title says what is dropped ("Air Max 97, size 42"): the drop's page shows it to every visitor.
	Title string `json:"title,omitempty"`
	// Message is the operator's word to the crowd on the drop's page ("a second batch drops Friday at
	// 18:00"), which may change at any time, also once the drop is sold out, and reaches open pages.
	Message    string     `json:"message,omitempty"`
	Stock      int        `json:"stock"`
	PerVisitor int        `json:"per_visitor"`
	OpensAt    time.Time  `json:"opens_at"`
	ClosesAt   *time.Time `json:"closes_at,omitempty"`
	// Room, when set, admits only visitors holding a live admission for that room; with ReleaseOnClaim
	// the claim ends that admission, so the next visitor in line gets in.
	Room           string `json:"room,omitempty"`
	ReleaseOnClaim bool   `json:"release_on_claim,omitempty"`
	// Codes, when given, are handed out in order; otherwise each claim gets a generated code.
	Codes []string `json:"codes,omitempty"`
	// Identity is whose identity per_visitor counts: "any" (the default), "site" or "room" (see
	// visitor.Identity).
	Identity visitor.Identity `json:"identity,omitempty"`
}

// ConfigError explains why a config was refused, naming the field.
type ConfigError struct{ Field, Reason string }

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "drop config: " + e.Reason
	}
	return "drop config: " + e.Field + ": " + e.Reason
}

// DecodeConfig reads and validates a config; per_visitor defaults to 1 and, with codes, stock to their
// number. Every refusal is a *ConfigError.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if err := rushgate.DecodeObject(b, &c); err != nil {
		de, _ := errors.AsType[*rushgate.DecodeError](err)
		return Config{}, &ConfigError{de.Field, de.Reason}
	}
	if c.PerVisitor == 0 {
		c.PerVisitor = 1
	}
	if c.Stock == 0 && len(c.Codes) > 0 {
		c.Stock = len(c.Codes)
	}
	c.OpensAt = c.OpensAt.UTC().Truncate(time.Millisecond)
	if c.ClosesAt != nil {
		t := c.ClosesAt.UTC().Truncate(time.Millisecond)
		c.ClosesAt = &t
	}
	return c, c.Validate()
}

// Validate reports the first problem with c, as a *ConfigError.
func (c Config) Validate() error {
	switch {
	case len(c.Title) > 200:
		return &ConfigError{"title", "at most 200 bytes"}
	case len(c.Message) > 2000:
		return &ConfigError{"message", "at most 2000 bytes"}
	case c.Stock < 1 || c.Stock > MaxStock:
		return &ConfigError{"stock", fmt.Sprintf("must be between 1 and %d", MaxStock)}
	case c.PerVisitor < 1 || c.PerVisitor > c.Stock:
		return &ConfigError{"per_visitor", "must be between 1 and the stock"}
	case c.OpensAt.IsZero():
		return &ConfigError{"opens_at", "is required"}
	case !rushgate.TimeInRange(c.OpensAt):
		return &ConfigError{"opens_at", rushgate.TimeRangeReason}
	case c.ClosesAt != nil && !rushgate.TimeInRange(*c.ClosesAt):
		return &ConfigError{"closes_at", rushgate.TimeRangeReason}
	case c.ClosesAt != nil && !c.ClosesAt.After(c.OpensAt):
		return &ConfigError{"closes_at", "must be after opens_at"}
	case c.Room != "" && !rushgate.ValidID(c.Room):
		return &ConfigError{"room", "not a valid room id"}
	case c.ReleaseOnClaim && c.Room == "":
		return &ConfigError{"release_on_claim", "needs a room"}
	case len(c.Codes) > 0 && len(c.Codes) < c.Stock:
		return &ConfigError{"codes", "fewer codes than stock"}
	case len(c.Codes) > MaxCodes:
		return &ConfigError{"codes", fmt.Sprintf("at most %d codes", MaxCodes)}
	case !c.Identity.Valid():
		return &ConfigError{"identity", `must be "any", "site" or "room"`}
	case c.Identity == visitor.IdentityRoom && c.Room == "":
		return &ConfigError{"identity", `"room" needs a room`}
	}
	seen := make(map[string]bool, len(c.Codes))
	for _, code := range c.Codes {
		if code == "" || len(code) > MaxCodeLen || seen[code] {
			return &ConfigError{"codes", "codes must be distinct and 1-128 bytes"}
		}
		seen[code] = true
	}
	return nil
}

// Claim is one unit of stock handed to a visitor.
type Claim struct {
	ID        string    `json:"claim_id"`
	Seq       int64     `json:"seq"`
	Code      string    `json:"code"`
	Visitor   string    `json:"visitor"`
	ClaimedAt time.Time `json:"claimed_at"`
	// Key is the idempotency key the claim was made with ("" for none). It is recorded with the claim,
	// so that a repeat after a restart still answers with this claim; it is never shown.
	Key string `json:"-"`
}

// State is a drop's full state.
type State struct {
	Config  Config
	Claims  []Claim          // in claim order; Claims[i].Seq == i+1
	ByKey   map[string]int64 // visitor + "\x00" + idempotency key -> seq
	Visitor map[string][]int64
}

// New returns the state of a drop with nothing claimed.
func New(cfg Config) State {
	return State{Config: cfg, ByKey: map[string]int64{}, Visitor: map[string][]int64{}}
}

// Status is where a drop stands, as anyone may see it.
type Status string

// The statuses of a drop.
const (
	StatusScheduled Status = "scheduled"
	StatusOpen      Status = "open"
	StatusClosed    Status = "closed"
	StatusSoldOut   Status = "sold_out"
)

// Status is where the drop stands at now: sold out once the stock is gone, whatever the time.
func (i Info) Status(now time.Time) Status {
	c := i.Config
	switch {
	case i.Claimed >= c.Stock:
		return StatusSoldOut
	case now.Before(c.OpensAt):
		return StatusScheduled
	case c.ClosesAt != nil && !now.Before(*c.ClosesAt):
		return StatusClosed
	}
	return StatusOpen
}

// Remaining is the stock not yet claimed.
func (s *State) Remaining() int { return s.Config.Stock - len(s.Claims) }

// Open reports whether claims are taken at now.
func (s *State) Open(now time.Time) bool {
	return !now.Before(s.Config.OpensAt) && (s.Config.ClosesAt == nil || now.Before(*s.Config.ClosesAt))
}

// Mine returns a visitor's claims.
func (s *State) Mine(visitor string) []Claim {
	var out []Claim
	for _, seq := range s.Visitor[visitor] {
		out = append(out, s.Claims[seq-1])
	}
	return out
}

// Decide works out, without changing the state, what a claim by visitor at now gets. A repeated
// idempotency key returns the claim it made the first time (created false), whatever has happened
// since. generated is the code to use when the drop has no list (drawn by the caller, so the rules
// stay deterministic).
func (s *State) Decide(dropID, visitor, key, generated string, now time.Time) (Claim, bool, error) {
	if key != "" {
		if seq, ok := s.ByKey[visitor+"\x00"+key]; ok {
			return s.Claims[seq-1], false, nil
		}
	}
	switch {
	case !s.Open(now):
		return Claim{}, false, ErrNotOpen
	case len(s.Visitor[visitor]) >= s.Config.PerVisitor:
		return Claim{}, false, &AlreadyClaimedError{Claims: s.Mine(visitor)}
	case s.Remaining() <= 0:
		return Claim{}, false, ErrSoldOut
	}
	seq := int64(len(s.Claims) + 1)
	code := GeneratedCode(generated, seq)
	if len(s.Config.Codes) > 0 {
		code = s.Config.Codes[seq-1]
	}
	return Claim{ID: ClaimID(dropID, seq), Seq: seq, Code: code, Visitor: visitor, ClaimedAt: now.UTC(), Key: key}, true, nil
}

// ClaimID names claim seq of a drop, the same on every backend, so that the id alone says which drop
// and which unit; the Redis claim script builds it the same way.
func ClaimID(dropID string, seq int64) string { return dropID + "." + strconv.FormatInt(seq, 10) }

// Take records a claim that Decide created, or one restored from the record, with its idempotency key.
func (s *State) Take(c Claim) {
	s.Claims = append(s.Claims, c)
	s.Visitor[c.Visitor] = append(s.Visitor[c.Visitor], c.Seq)
	if c.Key != "" {
		s.ByKey[c.Visitor+"\x00"+c.Key] = c.Seq
	}
}

// Numbered reports an error unless claims are numbered 1 to len(claims) in order, as a drop's claims
// always are (the record keeps a prefix of them): what [Store.Restore] takes.
func Numbered(claims []Claim) error {
	for i, c := range claims {
		if c.Seq != int64(i+1) {
			return fmt.Errorf("drop: claim %d of %d to restore is numbered %d", i+1, len(claims), c.Seq)
		}
	}
	return nil
}

var codeEncoding = base32.NewEncoding("ABCDEFGHJKLMNPQRSTUVWXYZ23456789").WithPadding(base32.NoPadding)

// NewCode draws the unguessable part of a generated claim code: 80 random bits as 16 characters
// without 0/O or 1/I. Every backend draws it here, outside its atomic step, and passes it in; the step
// adds the claim's number (see [GeneratedCode]).
func NewCode() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return codeEncoding.EncodeToString(b[:])
}

// GeneratedCode is the code claim seq hands out when its drop lists none: the drawn part, a hyphen and
// the claim's number ("7KQ2M9XDPT4ZABCD-17"). The number lets a lookup by code (a site's checkout)
// read one claim instead of searching them, with no index to write per claim; the drawn part keeps the
// code unguessable. The Redis claim script builds it the same way.
func GeneratedCode(drawn string, seq int64) string {
	return drawn + "-" + strconv.FormatInt(seq, 10)
}

// generatedSeq returns the claim number a generated code ends with, or false when code has none.
func generatedSeq(code string) (int64, bool) {
	i := strings.LastIndexByte(code, '-')
	if i < 0 {
		return 0, false
	}
	seq, err := strconv.ParseInt(code[i+1:], 10, 64)
	if err != nil || seq < 1 || code[i+1] == '+' {
		return 0, false
	}
	return seq, true
}
