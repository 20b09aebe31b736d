// Package keyring keeps rushgate's Ed25519 signing keys in a file under the data directory, so admission
// tokens stay verifiable across restarts, and rotates them by key id: the newest key signs, and every
// kept key is published so that tokens signed before a rotation verify until they expire.
package keyring

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// FileName is the key file's name inside the data directory.
const FileName = "signing-keys.json"

// keep is how many keys a rotation keeps: the new one and the previous, whose tokens are still live.
const keep = 2

type storedKey struct {
	Kid     string    `json:"kid"`
	Seed    []byte    `json:"seed"`
	Created time.Time `json:"created"`
}

type key struct {
	kid  string
	priv ed25519.PrivateKey
}

// Keyring holds the signing keys; the last one signs.
type Keyring struct {
	path string
	mu   sync.RWMutex
	keys []key
}

// Open loads the keyring from dir, creating it with one fresh key on first use.
func Open(dir string) (*Keyring, error) {
	kr := &Keyring{path: filepath.Join(dir, FileName)}
	data, err := os.ReadFile(kr.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := kr.Rotate(); err != nil {
			return nil, err
		}
		return kr, nil
	case err != nil:
		return nil, fmt.Errorf("keyring: %w", err)
	}
	var stored []storedKey
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", kr.path, err)
	}
	for _, s := range stored {
		if len(s.Seed) != ed25519.SeedSize || s.Kid == "" {
			return nil, fmt.Errorf("keyring: %s: key %q is damaged", kr.path, s.Kid)
		}
		kr.keys = append(kr.keys, key{kid: s.Kid, priv: ed25519.NewKeyFromSeed(s.Seed)})
	}
	if len(kr.keys) == 0 {
		return nil, fmt.Errorf("keyring: %s holds no key", kr.path)
	}
	return kr, nil
}

// Rotate adds a new signing key, keeps the previous one for verification, and saves the file.
func (kr *Keyring) Rotate() error {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	kidBytes := make([]byte, 8)
	_, _ = rand.Read(kidBytes)
	kr.mu.Lock()
	defer kr.mu.Unlock()
	keys := append(append([]key(nil), kr.keys...), key{kid: hex.EncodeToString(kidBytes), priv: ed25519.NewKeyFromSeed(seed)})
	if len(keys) > keep {
		keys = keys[len(keys)-keep:]
	}
	if err := save(kr.path, keys); err != nil {
		return err
	}
	kr.keys = keys
	return nil
}

// save writes the keys to a temporary file and renames it over the old one, so a crash never leaves
// a half-written key file behind.
func save(path string, keys []key) error {
	stored := make([]storedKey, len(keys))
	for i, k := range keys {
		stored[i] = storedKey{Kid: k.kid, Seed: k.priv.Seed(), Created: time.Now().UTC()}
	}
	data, err := json.MarshalIndent(stored, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
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
