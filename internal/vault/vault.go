// Package vault keeps rushgate's secrets (signing keys, the visitor-token secret, the generated admin
// key) in files under the data directory. Instances that share a Redis keep them in Redis instead
// (redisstore.Store has the same methods), so that every instance signs and verifies alike.
package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// swapMu makes Swap's compare and replace one step for the process. A data directory belongs to one
// rushgate process; instances that share state share a Redis, whose Swap is a script.
var swapMu sync.Mutex

// Dir stores each secret as a file (mode 0600) in a directory.
type Dir string

// LoadOrCreate returns the secret called name, storing create's result first if there is none yet.
// It reports whether it created the secret.
func (d Dir) LoadOrCreate(_ context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	path := filepath.Join(string(d), name)
	data, err := os.ReadFile(path)
	if err == nil && len(data) > 0 {
		return data, false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("vault: %w", err)
	}
	data, err = create()
	if err != nil {
		return nil, false, err
	}
	return data, true, d.Save(context.Background(), name, data)
}

// Save replaces the secret called name, writing a temporary file and renaming it over the old one so
// that a crash never leaves half a secret behind.
func (d Dir) Save(_ context.Context, name string, data []byte) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	path := filepath.Join(string(d), name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	return nil
}

// Swap replaces the secret called name with data only if it still holds old, and reports whether it
// did.
func (d Dir) Swap(ctx context.Context, name string, old, data []byte) (bool, error) {
	swapMu.Lock()
	defer swapMu.Unlock()
	cur, err := os.ReadFile(filepath.Join(string(d), name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("vault: %w", err)
	}
	if !bytes.Equal(cur, old) {
		return false, nil
	}
	return true, d.Save(ctx, name, data)
}
