// Package operator keeps the named keys an owner hands to the people who run an on-sale, so that the
// audit log says who changed what and the admin key, which opens everything, stays with its owner.
//
// The holder of the admin key is the owner (named [rushgate.Owner] in the audit log). The owner makes
// an operator with a name and a role and hands over the key that [Roster.Add] returns once: rushgate
// keeps only its SHA-256. An editor may do all that the admin API offers but make or take back
// operators and download backups (which hold every secret, the admin key's included); a viewer may
// only read. Taking an operator back ends its key and its console sessions on every instance within
// [Fresh].
//
// The roster is one JSON document in the vault (a file under the data directory, or a Redis key that
// every instance shares), replaced whole by compare-and-swap, so two instances adding at once cannot
// lose each other's operator.
package operator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// Role says what an operator may do.
type Role string

// The roles. Owner belongs to the admin key alone; an operator is an Editor or a Viewer.
const (
	Owner  Role = "owner"
	Editor Role = "editor"
	Viewer Role = "viewer"
)

// Can reports whether the role may make a request of this method: a viewer only reads.
func (r Role) Can(method string) bool {
	return r == Owner || r == Editor || method == "GET" || method == "HEAD"
}

// Domain outcomes of the roster.
var (
	// ErrExists refuses a name an operator already has; take it back first to hand out a new key.
	ErrExists = errors.New("operator: an operator has this name")
	// ErrNotFound reports a name no operator has.
	ErrNotFound = errors.New("operator: no operator has this name")
	// ErrInvalid refuses a name outside the id alphabet, the owner's name, or an unknown role.
	ErrInvalid = errors.New("operator: invalid name or role")
	// ErrLife refuses a key's life under a minute or over MaxLife.
	ErrLife = errors.New("operator: a key lives from a minute to MaxLife")
	// ErrFull refuses an operator beyond MaxOperators.
	ErrFull = errors.New("operator: too many operators")
	// ErrConflict reports that the roster kept changing under an update (other instances writing).
	ErrConflict = errors.New("operator: the roster kept changing")
)

// MaxOperators bounds the roster, which every instance reads whole.
const MaxOperators = 200

// KeyPrefix starts every operator's key, so that a key pasted where it should not be is recognised
// as one (by secret scanners, by the person who pasted it).
const KeyPrefix = "rgop_"

// Fresh is how long an instance trusts its copy of the roster: an operator taken back on one instance
// is refused by every other within it.
const Fresh = time.Second

// File is the roster's name in the vault.
const File = "operators.json"

// Operator is one named key. Its ID is new with every key, so a session of a key taken back never
// comes back with a new operator of the same name.
type Operator struct {
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created_at"`
	// Expires, when set, is when the key stops working by itself: a key for the staff of one on-sale.
	Expires *time.Time `json:"expires_at,omitempty"`
	ID      string     `json:"-"`
}

// Admin is the holder of the admin key, as a request's identity.
var Admin = Operator{Name: rushgate.Owner, Role: Owner}

// Expired reports whether the key had stopped working by now.
func (o Operator) Expired(now time.Time) bool { return o.Expires != nil && !now.Before(*o.Expires) }

// stored is an operator as the vault keeps it: with its ID and its key's SHA-256, never the key.
type stored struct {
	Name    string     `json:"name"`
	Role    Role       `json:"role"`
	Created time.Time  `json:"created_at"`
	Expires *time.Time `json:"expires_at,omitempty"`
	ID      string     `json:"id"`
	Sum     string     `json:"sum"`
}

func (s stored) operator() Operator {
	return Operator{Name: s.Name, Role: s.Role, Created: s.Created, Expires: s.Expires, ID: s.ID}
}

// MaxLife bounds how long a key made to expire may last.
const MaxLife = 366 * 24 * time.Hour

// Vault is where the roster lives: vault.Dir, or the Redis store's vault.
type Vault interface {
	LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error)
	Swap(ctx context.Context, name string, old, new []byte) (bool, error)
}

// Options wire a Roster; the zero value keeps no audit log and reads time.Now.
type Options struct {
	// Audit, when set, records each operator made or taken back, and by whom (the context's actor).
	Audit rushgate.Audit
	// Log receives what the audit log could not take; nil discards it.
	Log *slog.Logger
	// Clock dates operators and ages the roster's copy; nil means time.Now.
	Clock func() time.Time
}

// Roster is the operators, read from the vault at most once per Fresh.
type Roster struct {
	vault Vault
	now   func() time.Time
	audit rushgate.Audit
	log   *slog.Logger

	mu   sync.Mutex
	raw  []byte // the document as last read or written
	list []stored
	read time.Time
	gen  uint64 // counts what was kept, so that a read older than a write does not replace it
}

// New returns the roster kept in v.
func New(v Vault, opts Options) *Roster {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Roster{vault: v, now: opts.Clock, audit: opts.Audit, log: opts.Log}
}

// List returns the operators by name.
func (r *Roster) List(ctx context.Context) ([]Operator, error) {
	list, err := r.current(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Operator, 0, len(list))
	for _, s := range list {
		out = append(out, s.operator())
	}
	return out, nil
}

// ByKey returns the operator whose key this is, unless the key expired.
func (r *Roster) ByKey(ctx context.Context, key string) (Operator, bool, error) {
	sum := Sum(key)
	return r.find(ctx, func(s stored) bool { return s.Sum == sum })
}

// ByID returns the operator of this ID, which a console session names, unless its key expired.
func (r *Roster) ByID(ctx context.Context, id string) (Operator, bool, error) {
	return r.find(ctx, func(s stored) bool { return s.ID == id })
}

func (r *Roster) find(ctx context.Context, match func(stored) bool) (Operator, bool, error) {
	list, err := r.current(ctx)
	if err != nil {
		return Operator{}, false, err
	}
	for _, s := range list {
		if match(s) {
			op := s.operator()
			return op, !op.Expired(r.now()), nil
		}
	}
	return Operator{}, false, nil
}

// Add makes an operator and returns it with its key, which is shown this once. A key with a life (at
// least a minute, at most MaxLife) stops working once it has lasted it; 0 is a key until taken back.
func (r *Roster) Add(ctx context.Context, name string, role Role, life time.Duration) (Operator, string, error) {
	if !rushgate.ValidID(name) || name == rushgate.Owner || role != Editor && role != Viewer {
		return Operator{}, "", ErrInvalid
	}
	if life != 0 && (life < time.Minute || life > MaxLife) {
		return Operator{}, "", ErrLife
	}
	key, id := KeyPrefix+secret(32), secret(12)
	now := r.now().UTC().Truncate(time.Second)
	s := stored{Name: name, Role: role, Created: now, ID: id, Sum: Sum(key)}
	if life != 0 {
		ends := now.Add(life)
		s.Expires = &ends
	}
	err := r.update(ctx, func(list []stored) ([]stored, error) {
		if slices.ContainsFunc(list, func(o stored) bool { return o.Name == name }) {
			return nil, ErrExists
		}
		if len(list) >= MaxOperators {
			return nil, ErrFull
		}
		list = append(list, s)
		slices.SortFunc(list, func(a, b stored) int { return strings.Compare(a.Name, b.Name) })
		return list, nil
	})
	if err != nil {
		return Operator{}, "", err
	}
	op := s.operator()
	rushgate.Audited(ctx, r.audit, r.log, rushgate.Entry{At: r.now().UTC(), Kind: "operator", ID: name, Action: rushgate.ActionCreate,
		Changes: rushgate.Diff(nil, op)})
	return op, key, nil
}

// SetRole changes what an operator may do, keeping its key: its requests and sessions follow within
// Fresh.
func (r *Roster) SetRole(ctx context.Context, name string, role Role) (Operator, error) {
	if role != Editor && role != Viewer {
		return Operator{}, ErrInvalid
	}
	var before, after stored
	err := r.update(ctx, func(list []stored) ([]stored, error) {
		i := slices.IndexFunc(list, func(o stored) bool { return o.Name == name })
		if i < 0 {
			return nil, ErrNotFound
		}
		before = list[i]
		list[i].Role = role
		after = list[i]
		return list, nil
	})
	if err != nil {
		return Operator{}, err
	}
	if before.Role != after.Role {
		rushgate.Audited(ctx, r.audit, r.log, rushgate.Entry{At: r.now().UTC(), Kind: "operator", ID: name, Action: rushgate.ActionUpdate,
			Changes: rushgate.Diff(before.operator(), after.operator())})
	}
	return after.operator(), nil
}

// Remove takes an operator back: its key and sessions stop working.
func (r *Roster) Remove(ctx context.Context, name string) (Operator, error) {
	var gone stored
	err := r.update(ctx, func(list []stored) ([]stored, error) {
		i := slices.IndexFunc(list, func(o stored) bool { return o.Name == name })
		if i < 0 {
			return nil, ErrNotFound
		}
		gone = list[i]
		return slices.Delete(list, i, i+1), nil
	})
	if err != nil {
		return Operator{}, err
	}
	op := gone.operator()
	rushgate.Audited(ctx, r.audit, r.log, rushgate.Entry{At: r.now().UTC(), Kind: "operator", ID: name, Action: rushgate.ActionDelete,
		Changes: rushgate.Diff(op, nil)})
	return op, nil
}

// update applies change to the roster as the vault holds it, and swaps the result in, reading again
// when another instance wrote meanwhile.
func (r *Roster) update(ctx context.Context, change func([]stored) ([]stored, error)) error {
	for try := range 20 {
		if try > 0 { // another writer won: step aside a random while, longer each time
			select {
			case <-time.After(time.Duration(mrand.Int64N(int64(time.Millisecond) << min(try, 6)))):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		raw, list, err := r.load(ctx)
		if err != nil {
			return err
		}
		list, err = change(slices.Clone(list))
		if err != nil {
			return err
		}
		next, err := json.Marshal(document{Operators: list})
		if err != nil {
			return err
		}
		ok, err := r.vault.Swap(ctx, File, raw, next)
		if err != nil {
			return unavailable(err)
		}
		if ok {
			r.keep(next, list)
			return nil
		}
	}
	return ErrConflict
}

// current returns the roster, read again when the copy is older than Fresh.
func (r *Roster) current(ctx context.Context) ([]stored, error) {
	r.mu.Lock()
	if r.raw != nil && r.now().Sub(r.read) < Fresh {
		list := r.list
		r.mu.Unlock()
		return list, nil
	}
	r.mu.Unlock()
	_, list, err := r.load(ctx)
	return list, err
}

// load reads the roster from the vault and keeps it. A vault that lost the roster (a Redis that
// restarted empty) gets this instance's last copy back, as the keyring puts back lost keys: a store
// failure must not take every operator's key away.
func (r *Roster) load(ctx context.Context) ([]byte, []stored, error) {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	empty, _ := json.Marshal(document{Operators: []stored{}})
	raw, created, err := r.vault.LoadOrCreate(ctx, File, func() ([]byte, error) { return empty, nil })
	if err != nil {
		return nil, nil, unavailable(err)
	}
	r.mu.Lock()
	held, list := r.raw, r.list
	r.mu.Unlock()
	if created && len(list) > 0 {
		if ok, err := r.vault.Swap(ctx, File, raw, held); err == nil && ok {
			return held, list, nil
		}
	}
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("operator: the roster in the vault is not readable: %w", err)
	}
	r.mu.Lock()
	if r.gen == gen { // else this instance wrote (or read) a newer roster while this read was out
		r.raw, r.list, r.read, r.gen = raw, doc.Operators, r.now(), r.gen+1
	}
	r.mu.Unlock()
	return raw, doc.Operators, nil
}

// keep holds the roster this instance has just written.
func (r *Roster) keep(raw []byte, list []stored) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw, r.list, r.read, r.gen = raw, list, r.now(), r.gen+1
}

// document is the roster as the vault keeps it.
type document struct {
	Operators []stored `json:"operators"`
}

// unavailable reports a vault that did not answer as the backends report themselves: the caller may
// retry, and the API answers 503.
func unavailable(err error) error {
	if errors.Is(err, rushgate.ErrUnavailable) {
		return fmt.Errorf("operator: %w", err)
	}
	return fmt.Errorf("operator: %w: %w", rushgate.ErrUnavailable, err)
}

// Keys tells whose a key is, the admin key's or an operator's: what the admin API and the console's
// sign-in both ask of a key presented to them.
type Keys struct {
	admin  [32]byte
	roster *Roster // nil: the admin key alone
}

// NewKeys returns the keys of the admin key's holder and of the roster's operators (nil: none).
func NewKeys(adminKey string, r *Roster) *Keys {
	return &Keys{admin: sha256.Sum256([]byte(adminKey)), roster: r}
}

// Who returns Admin for the admin key, the operator whose key it is (unless it expired), or false.
func (k *Keys) Who(ctx context.Context, key string) (Operator, bool, error) {
	sum := sha256.Sum256([]byte(key))
	if subtle.ConstantTimeCompare(sum[:], k.admin[:]) == 1 {
		return Admin, true, nil
	}
	if k.roster == nil || !strings.HasPrefix(key, KeyPrefix) {
		return Operator{}, false, nil
	}
	return k.roster.ByKey(ctx, key)
}

// Sum is how a key is kept: its SHA-256 in hex. A key is 32 random bytes, so no salt is needed.
func Sum(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// secret returns n random bytes, URL-safe base64.
func secret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
