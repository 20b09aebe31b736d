package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Spent remembers used ids as keys that expire with them: one SET NX per spend, shared by every
// instance.
type Spent struct{ *conn }

// Spend implements [rushgate.Spent].
func (s Spent) Spend(ctx context.Context, id string, until time.Time) (bool, error) {
	h := sha256.Sum256([]byte(id))
	now := time.Now()
	if s.clock != nil {
		now = s.clock()
	}
	// As long as until is away on the store's clock (tests move it), at least a millisecond.
	ttl := max(until.Sub(now), time.Millisecond)
	_, err := s.do(ctx, s.rdb.B().Set().Key(s.keys.spent(hex.EncodeToString(h[:16]))).Value("1").Nx().
		PxMilliseconds(ttl.Milliseconds()).Build())
	if errors.Is(err, errNil) {
		return false, nil // it was there: NX set nothing
	}
	return err == nil, err
}
