// Package keyring keeps rushgate's Ed25519 signing keys in a vault (a file under the data directory, or
// Redis when instances share one), so admission tokens stay verifiable across restarts and instances,
// and rotates them by key id: the newest key signs, and every
// kept key is published so that tokens signed before a rotation verify until they expire.
package keyring

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// Name is the secret under which the keys are kept.
const Name = "signing-keys.json"

// keep is how many keys a rotation keeps: the new one and the previous, whose tokens are still live.
const keep = 2

// Vault stores the key file; vault.Dir keeps it under the data directory, the Redis store in Redis so
// that every instance signs and verifies with the same keys.
type Vault interface {
	LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error)
	Save(ctx context.Context, name string, data []byte) error
}

type storedKey struct {
	Kid     string    `json:"kid"`
	Seed    []byte    `json:"seed"`
	Created time.Time `json:"created"`
}

type key struct {
	kid     string
	priv    ed25519.PrivateKey
	created time.Time
}

// Keyring holds the signing keys; the last one signs.
type Keyring struct {
	vault Vault
	mu    sync.RWMutex
	keys  []key
}

// Open loads the keyring from v, creating it with one fresh key on first use.
func Open(ctx context.Context, v Vault) (*Keyring, error) {
	kr := &Keyring{vault: v}
	data, _, err := v.LoadOrCreate(ctx, Name, func() ([]byte, error) { return encode([]key{newKey()}) })
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	var stored []storedKey
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", Name, err)
	}
	for _, s := range stored {
		if len(s.Seed) != ed25519.SeedSize || s.Kid == "" {
			return nil, fmt.Errorf("keyring: %s: key %q is damaged", Name, s.Kid)
		}
		kr.keys = append(kr.keys, key{kid: s.Kid, priv: ed25519.NewKeyFromSeed(s.Seed), created: s.Created})
	}
	if len(kr.keys) == 0 {
		return nil, fmt.Errorf("keyring: %s holds no key", Name)
	}
	return kr, nil
}

func newKey() key {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails on supported platforms
	kid := make([]byte, 8)
	_, _ = rand.Read(kid)
	return key{kid: hex.EncodeToString(kid), priv: ed25519.NewKeyFromSeed(seed), created: time.Now().UTC()}
}

// Rotate adds a new signing key, keeps the previous one for verification, and saves the keys.
func (kr *Keyring) Rotate(ctx context.Context) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	keys := append(append([]key(nil), kr.keys...), newKey())
	if len(keys) > keep {
		keys = keys[len(keys)-keep:]
	}
	data, err := encode(keys)
	if err != nil {
		return err
	}
	if err := kr.vault.Save(ctx, Name, data); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	kr.keys = keys
	return nil
}

func encode(keys []key) ([]byte, error) {
	stored := make([]storedKey, len(keys))
	for i, k := range keys {
		stored[i] = storedKey{Kid: k.kid, Seed: k.priv.Seed(), Created: k.created}
	}
	return json.MarshalIndent(stored, "", "  ")
}

// Sign signs admission claims with the newest key.
func (kr *Keyring) Sign(c admission.Claims) (string, error) {
	kr.mu.RLock()
	k := kr.keys[len(kr.keys)-1]
	kr.mu.RUnlock()
	return admission.Sign(k.kid, k.priv, c)
}

// PublicKeys returns every kept key's public half by key id.
func (kr *Keyring) PublicKeys() map[string]ed25519.PublicKey {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	out := make(map[string]ed25519.PublicKey, len(kr.keys))
	for _, k := range kr.keys {
		out[k.kid] = k.priv.Public().(ed25519.PublicKey)
	}
	return out
}

// KeySet returns the public keys as a JWK set, newest first.
func (kr *Keyring) KeySet() admission.KeySet {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	set := admission.KeySet{Keys: make([]admission.JWK, 0, len(kr.keys))}
	for i := len(kr.keys) - 1; i >= 0; i-- {
		k := kr.keys[i]
		set.Keys = append(set.Keys, admission.PublicJWK(k.kid, k.priv.Public().(ed25519.PublicKey)))
	}
	return set
}
