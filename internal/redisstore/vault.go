package redisstore

import (
	"context"
	"errors"

	"github.com/rushgate/rushgate/internal/keyring"
)

var _ keyring.Vault = (*Vault)(nil)

// Vault keeps the secrets every instance must share (the admin key, the token issuer's key, the
// signing keys) in Redis.
type Vault struct{ *conn }

// LoadOrCreate returns the shared secret called name, storing create's result first if there is none.
// Instances starting at once race with SET NX: all of them end up with the one value stored first. It
// reports whether this call stored it.
func (s *Vault) LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	key := s.keys.secret(name)
	m, err := s.do(ctx, s.rdb.B().Get().Key(key).Build())
	if err == nil {
		data, err := m.AsBytes()
		return data, false, err
	}
	if !errors.Is(err, errNil) {
		return nil, false, err
	}
	fresh, err := create()
	if err != nil {
		return nil, false, err
	}
	_, err = s.do(ctx, s.rdb.B().Set().Key(key).Value(string(fresh)).Nx().Build())
	switch {
	case err == nil:
		return fresh, true, nil
	case errors.Is(err, errNil): // another instance stored one first
		data, _, err := s.LoadOrCreate(ctx, name, create)
		return data, false, err
	default:
		return nil, false, err
	}
}

// Swap replaces the shared secret called name with data only if it still holds old, and reports
// whether it did.
func (s *Vault) Swap(ctx context.Context, name string, old, data []byte) (bool, error) {
	v, err := s.run(ctx, swapScript, []string{s.keys.secret(name)}, string(old), string(data))
	if err != nil {
		return false, err
	}
	return integer(v) == 1, nil
}
