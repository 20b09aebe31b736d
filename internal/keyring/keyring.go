// Package keyring keeps rushgate's Ed25519 signing keys in a vault (a file under the data directory, or
// Redis when instances share one), so admission tokens stay verifiable across restarts and instances,
// and rotates them by key id.
//
// A rotation publishes the new key before it signs anything: the key is added at once, so GET /v1/keys
// lists it and every instance that reloads the keyring verifies with it, but the previous key goes on
// signing for [PublishAhead]. By the time a token carries the new key id, protected sites (whose
// verifiers refetch the key set at most every 30 seconds) and the other instances (which reload every
// few seconds) know the key, so a rotation never turns a valid admission away. The previous key stays
// published for the keyring's retention after it stopped signing, so tokens it signed verify until then.
package keyring

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// Name is the secret under which the keys are kept.
const Name = "signing-keys.json"

// PublishAhead is how long a new key is published before it signs. It exceeds the 30 seconds a remote
// [admission.Verifier] waits between fetches of the key set, and the reload interval of instances.
const PublishAhead = 5 * time.Minute

// DefaultRetain is how long a key stays published after a newer key took over signing when
// [Options.Retain] is zero. A token outliving it is refused by the protected site, whose visitor then
// passes through the room again and, still admitted there, is handed a token signed by the new key.
const DefaultRetain = 24 * time.Hour

// ErrConflict reports that rotations kept colliding with rotations made elsewhere (another instance
// saving the keys between this one's read and write).
var ErrConflict = errors.New("keyring: the keys kept changing during a rotation")

// Vault stores the key file; vault.Dir keeps it under the data directory, the Redis store in Redis so
// that every instance signs and verifies with the same keys.
type Vault interface {
	LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error)
	// Swap replaces the secret with new only if it still holds old, and reports whether it did, so
	// that two instances rotating at once cannot lose each other's key.
	Swap(ctx context.Context, name string, old, new []byte) (bool, error)
}

// Options tune a Keyring; the zero value is ready for production use.
type Options struct {
	// Now returns the current time; nil means time.Now. Tests move it to pass the publication delay.
	Now func() time.Time
	// Retain is how long a key stays published once a newer key signs; zero means DefaultRetain.
	Retain time.Duration
}

type storedKey struct {
	Kid     string    `json:"kid"`
	Seed    []byte    `json:"seed"`
	Created time.Time `json:"created"`
	// Signs is when the key starts signing; keys saved before rotation was published ahead have none
	// and sign from their creation.
	Signs time.Time `json:"signs"`
}

type key struct {
	kid     string
	priv    ed25519.PrivateKey
	created time.Time
	signs   time.Time
	public  ed25519.PublicKey
}

// Keyring holds the signing keys, oldest first.
type Keyring struct {
	vault  Vault
	now    func() time.Time
	retain time.Duration

	// updating serialises reloads and rotations, so that a reload that read the vault before a
	// rotation cannot install the older keys after it. It guards held too.
	updating sync.Mutex
	held     map[string]*heldSecret // the vault's other secrets this instance uses (see Hold)

	mu     sync.RWMutex
	keys   []key
	data   []byte                       // the vault's content the keys were read from
	public map[string]ed25519.PublicKey // every published key, shared read-only with verifiers
	set    admission.KeySet             // the same as a JWK set, newest first
	// retires is when the next published key reaches the end of its retention (zero if none will):
	// once it has passed, the views above are rebuilt, so a key stops verifying on time, not at the
	// next rotation.
	retires time.Time
}

// Open loads the keyring from v, creating it with one fresh key on first use.
func Open(ctx context.Context, v Vault, o Options) (*Keyring, error) {
	kr := &Keyring{vault: v, now: o.Now, retain: o.Retain}
	if kr.now == nil {
		kr.now = time.Now
	}
	if kr.retain <= 0 {
		kr.retain = DefaultRetain
	}
	if _, err := kr.reload(ctx); err != nil {
		return nil, err
	}
	return kr, nil
}

// Reload reads the keys again, taking up a rotation made by another instance. If the vault has lost
// them (Redis restarted without its data), it puts back the keys this instance holds rather than
// making new ones, so that the tokens they signed stay valid.
func (kr *Keyring) Reload(ctx context.Context) error {
	kr.updating.Lock()
	defer kr.updating.Unlock()
	_, err := kr.reload(ctx)
	return err
}

// reload reads the keys, putting back those held if the vault has none, and reports whether it did.
func (kr *Keyring) reload(ctx context.Context) (bool, error) {
	kr.mu.RLock()
	held := kr.data
	kr.mu.RUnlock()
	data, created, err := kr.vault.LoadOrCreate(ctx, Name, func() ([]byte, error) {
		if len(held) > 0 {
			return held, nil
		}
		return encode([]key{kr.newKey(kr.now())})
	})
	if err != nil {
		return false, fmt.Errorf("keyring: %w", err)
	}
	restored := created && len(held) > 0
	if bytes.Equal(data, held) {
		return restored, nil
	}
	keys, err := decode(data)
	if err != nil {
		return false, err
	}
	kr.install(keys, data)
	return false, nil
}

// heldSecret is a secret of the vault that this instance uses; foreign is a different value found in
// the vault, already reported.
type heldSecret struct{ data, foreign []byte }

// Hold names a secret of the vault other than the keys (the visitor tokens' secret, say) that this
// instance uses, with its value, so that Watch puts it back if the vault loses it, as it does the
// keys. Instances started afterwards then take up the secret the running ones use instead of making
// one of their own, which would refuse every token the others issued.
func (kr *Keyring) Hold(name string, data []byte) {
	kr.updating.Lock()
	defer kr.updating.Unlock()
	if kr.held == nil {
		kr.held = make(map[string]*heldSecret)
	}
	kr.held[name] = &heldSecret{data: bytes.Clone(data)}
}

// keep puts back the held secrets that the vault has lost, logging each, and reports once a secret
// that the vault holds with another value (replaced by hand, or another deployment on the same keys):
// this instance goes on with its own until it restarts.
func (kr *Keyring) keep(ctx context.Context, log *slog.Logger) error {
	kr.updating.Lock()
	defer kr.updating.Unlock()
	var errs []error
	for name, h := range kr.held {
		data, created, err := kr.vault.LoadOrCreate(ctx, name, func() ([]byte, error) { return h.data, nil })
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("keyring: %s: %w", name, err))
		case created:
			log.Warn("put back a shared secret that the vault had lost", "secret", name)
		case !bytes.Equal(data, h.data) && !bytes.Equal(data, h.foreign):
			h.foreign = data
			log.Warn("the vault holds another value of a shared secret than this instance uses; restart it to take that up", "secret", name)
		}
	}
	return errors.Join(errs...)
}

func decode(data []byte) ([]key, error) {
	var stored []storedKey
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", Name, err)
	}
	keys := make([]key, 0, len(stored))
	for _, s := range stored {
		if len(s.Seed) != ed25519.SeedSize || s.Kid == "" {
			return nil, fmt.Errorf("keyring: %s: key %q is damaged", Name, s.Kid)
		}
		k := key{kid: s.Kid, priv: ed25519.NewKeyFromSeed(s.Seed), created: s.Created, signs: s.Signs}
		if k.signs.IsZero() {
			k.signs = k.created
		}
		k.public = k.priv.Public().(ed25519.PublicKey)
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("keyring: %s holds no key", Name)
	}
	return keys, nil
}

func encode(keys []key) ([]byte, error) {
	stored := make([]storedKey, len(keys))
	for i, k := range keys {
		stored[i] = storedKey{Kid: k.kid, Seed: k.priv.Seed(), Created: k.created, Signs: k.signs}
	}
	return json.MarshalIndent(stored, "", "  ")
}

// install makes keys current, with the views verifiers and GET /v1/keys read.
func (kr *Keyring) install(keys []key, data []byte) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.keys, kr.data = keys, data
	kr.publish(kr.now())
}

// publish rebuilds, with kr.mu held for writing, the views of the keys published at now: every key
// that signs now or will, and the older ones within their retention (see retiresAt).
func (kr *Keyring) publish(now time.Time) {
	public := make(map[string]ed25519.PublicKey, len(kr.keys))
	set := admission.KeySet{Keys: make([]admission.JWK, 0, len(kr.keys))}
	kr.retires = time.Time{}
	for i := len(kr.keys) - 1; i >= 0; i-- {
		k := kr.keys[i]
		if at := kr.retiresAt(i); !at.IsZero() {
			if now.After(at) {
				continue
			}
			if kr.retires.IsZero() || at.Before(kr.retires) {
				kr.retires = at
			}
		}
		public[k.kid] = k.public
		set.Keys = append(set.Keys, admission.PublicJWK(k.kid, k.public))
	}
	kr.public, kr.set = public, set
}

// retiresAt returns when the i-th key leaves publication: the retention after the next key starts
// signing, or zero for the newest key, which never retires until a newer one takes over.
func (kr *Keyring) retiresAt(i int) time.Time {
	if i+1 >= len(kr.keys) {
		return time.Time{}
	}
	return kr.keys[i+1].signs.Add(kr.retain)
}

// views returns the published keys as of now, rebuilding them first if a key has retired since they
// were built; in the common case it costs a clock read and a read lock.
func (kr *Keyring) views() (map[string]ed25519.PublicKey, admission.KeySet) {
	now := kr.now()
	kr.mu.RLock()
	if kr.retires.IsZero() || !now.After(kr.retires) {
		defer kr.mu.RUnlock()
		return kr.public, kr.set
	}
	kr.mu.RUnlock()
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if !kr.retires.IsZero() && now.After(kr.retires) {
		kr.publish(now)
	}
	return kr.public, kr.set
}

func (kr *Keyring) newKey(now time.Time) key {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails on supported platforms
	kid := make([]byte, 8)
	_, _ = rand.Read(kid)
	priv := ed25519.NewKeyFromSeed(seed)
	now = now.UTC()
	return key{kid: hex.EncodeToString(kid), priv: priv, created: now, signs: now, public: priv.Public().(ed25519.PublicKey)}
}

// Rotate adds a new key that signs from PublishAhead on, drops keys that stopped signing more than the
// retention ago, saves the keys and returns the new key's id and when it starts signing. It rotates the
// keys as the vault holds them, so a rotation made meanwhile by another instance is kept; if the vault
// changes between the read and the write, it reads again.
func (kr *Keyring) Rotate(ctx context.Context) (string, time.Time, error) {
	return kr.rotate(ctx, 0)
}

// rotate rotates the keys; with every positive, only if the signing key is older than that by the time
// the keys are read, so that instances rotating on a schedule at once make one rotation between them.
// It returns an empty key id when there was nothing to do.
func (kr *Keyring) rotate(ctx context.Context, every time.Duration) (string, time.Time, error) {
	kr.updating.Lock()
	defer kr.updating.Unlock()
	for range 10 {
		if _, err := kr.reload(ctx); err != nil {
			return "", time.Time{}, err
		}
		if every > 0 && !kr.due(every) {
			return "", time.Time{}, nil
		}
		kr.mu.RLock()
		old, current := kr.data, kr.keys
		kr.mu.RUnlock()
		now := kr.now()
		fresh := kr.newKey(now)
		fresh.signs = now.Add(PublishAhead).UTC()
		keys := kr.prune(append(append([]key(nil), current...), fresh), now)
		data, err := encode(keys)
		if err != nil {
			return "", time.Time{}, err
		}
		swapped, err := kr.vault.Swap(ctx, Name, old, data)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("keyring: %w", err)
		}
		if swapped {
			kr.install(keys, data)
			return fresh.kid, fresh.signs, nil
		}
	}
	return "", time.Time{}, ErrConflict
}

// prune keeps every key that signs now or will, and the older ones that stopped signing less than the
// retention ago (those publish leaves out). A key stops signing when the next key starts.
func (kr *Keyring) prune(keys []key, now time.Time) []key {
	kept := keys[:0:0]
	for i, k := range keys {
		if i+1 < len(keys) && now.After(keys[i+1].signs.Add(kr.retain)) {
			continue
		}
		kept = append(kept, k)
	}
	return kept
}

// signer returns the key that signs at now: the newest one whose time to sign has come.
func (kr *Keyring) signer(now time.Time) key {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	for i := len(kr.keys) - 1; i > 0; i-- {
		if !kr.keys[i].signs.After(now) {
			return kr.keys[i]
		}
	}
	return kr.keys[0]
}

// Sign signs admission claims with the key that signs now.
func (kr *Keyring) Sign(c admission.Claims) (string, error) {
	k := kr.signer(kr.now())
	return admission.Sign(k.kid, k.priv, c)
}

// PublicKeys returns every kept key's public half by key id, including a key published ahead of
// signing. The map is shared and must not be changed; a reload or rotation installs a new one.
func (kr *Keyring) PublicKeys() map[string]ed25519.PublicKey {
	public, _ := kr.views()
	return public
}

// KeySet returns the public keys as a JWK set, newest first.
func (kr *Keyring) KeySet() admission.KeySet {
	_, set := kr.views()
	return set
}

// due reports whether the key that signs now was created more than every ago, so that an instance
// rotating on a schedule rotates once per period however many instances share the keys. It is false
// while a rotation is pending (a newer key is published and not yet signing).
func (kr *Keyring) due(every time.Duration) bool {
	now := kr.now()
	kr.mu.RLock()
	newest := kr.keys[len(kr.keys)-1]
	kr.mu.RUnlock()
	return !newest.signs.After(now) && !newest.created.Add(every).After(now)
}

// ReloadEvery is how often Watch reads the keys again. With PublishAhead of 5 minutes, a key rotated
// on one instance is known to all of them long before it signs.
const ReloadEvery = 10 * time.Second

// Watch keeps the keyring current until ctx ends: it reloads the keys every ReloadEvery and, when
// rotateEvery is positive, rotates them once the signing key is older than that. Every instance may
// run it; the first to find a rotation due makes it, and the others load it rather than rotate again.
// On each tick it also puts back the keys and the held secrets (see Hold) if the vault lost them.
// Failures are logged and retried on the next tick.
func (kr *Keyring) Watch(ctx context.Context, rotateEvery time.Duration, log *slog.Logger) {
	t := time.NewTicker(ReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := kr.keep(ctx, log); err != nil {
			log.Warn("checking the shared secrets", "err", err)
		}
		if rotateEvery <= 0 {
			kr.updating.Lock()
			restored, err := kr.reload(ctx)
			kr.updating.Unlock()
			switch {
			case err != nil:
				log.Warn("reloading signing keys", "err", err)
			case restored:
				log.Warn("put back the signing keys that the vault had lost")
			}
			continue
		}
		// rotate reloads the keys first (putting them back if lost) and rotates only if a rotation is
		// still due.
		switch kid, signs, err := kr.rotate(ctx, rotateEvery); {
		case err != nil:
			log.Warn("reloading or rotating signing keys", "err", err)
		case kid != "":
			log.Info("signing keys rotated on schedule", "kid", kid, "signs_from", signs)
		}
	}
}
