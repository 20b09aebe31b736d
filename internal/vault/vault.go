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

// swapMu makes every write of a secret, and Swap's compare and replace, one step for the process. A
// data directory belongs to one rushgate process; instances that share state share a Redis, whose Swap
// is a script.
var swapMu sync.Mutex

// Dir stores each secret as a file (mode 0600) in a directory.
type Dir string

// LoadOrCreate returns the secret called name, storing create's result first if there is none yet.
// It reports whether it created the secret; of callers that race to create one, one stores its own and
// the others return it.
func (d Dir) LoadOrCreate(_ context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	path := filepath.Join(string(d), name)
	data, err := os.ReadFile(path)
	if err == nil && len(data) > 0 {
		return data, false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("vault: %w", err)
	}
	fresh, err := create()
	if err != nil {
		return nil, false, err
	}
	swapMu.Lock()
	defer swapMu.Unlock()
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		return data, false, nil // another caller stored one meanwhile
	}
	return fresh, true, d.save(name, fresh)
}

// Save replaces the secret called name, writing a temporary file, syncing it and renaming it over the
// old one (then syncing the directory), so that neither a crash nor a writer racing it leaves half a
// secret behind, or none.
func (d Dir) Save(_ context.Context, name string, data []byte) error {
	swapMu.Lock()
	defer swapMu.Unlock()
	return d.save(name, data)
}

func (d Dir) save(name string, data []byte) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	f, err := os.CreateTemp(string(d), name+".*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(string(d), name))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("vault: %w", err)
	}
	// The rename is on disk only once the directory is: a secret lost to a crash would be made anew.
	dir, err := os.Open(string(d))
	if err == nil {
		err = errors.Join(dir.Sync(), dir.Close())
	}
	if err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	return nil
}

// Swap replaces the secret called name with data only if it still holds old, and reports whether it
// did.
func (d Dir) Swap(_ context.Context, name string, old, data []byte) (bool, error) {
	swapMu.Lock()
	defer swapMu.Unlock()
	cur, err := os.ReadFile(filepath.Join(string(d), name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("vault: %w", err)
	}
	if !bytes.Equal(cur, old) {
		return false, nil
	}
	return true, d.save(name, data)
}
