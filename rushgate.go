// Package rushgate is the root of rushgate's domains: what the waiting room, drops and live auctions
// all share, and nothing that belongs to one of them. It holds the id alphabet that paths, tokens and
// Redis keys embed, durations written as people write them, the window of instants a config may name,
// the error every backend reports when it cannot answer, and the one strict JSON decoder of configs.
//
// The domains live in internal/room, internal/drop and internal/auction; the backends (internal/memstore,
// internal/redisstore) and transports (internal/httpapi) build on them. This package imports only the
// standard library.
package rushgate

import (
	"errors"
	"fmt"
)

// ErrUnavailable means a backend could not be reached or could not answer in time; the request may be
// retried. Every backend wraps its own failures in it, whatever the domain, so callers test one error.
var ErrUnavailable = errors.New("rushgate: store unavailable")

// ErrRecordUnavailable means the durable SQL record could not answer a read that a change depends on
// (is a drop or auction put afresh one the state store lost?). It wraps ErrUnavailable, so it is
// retried alike, but lets an answer say which store to look at.
var ErrRecordUnavailable = fmt.Errorf("%w: the durable record does not answer", ErrUnavailable)

// ErrWritesRefused means the store answers but refuses writes: Redis full at its maxmemory, unable to
// persist, short of the replicas it must write to, or a replica now (a master demoted under the
// instance). It wraps ErrUnavailable, so it is retried alike, but lets /healthz say that the store is
// not down but refusing.
var ErrWritesRefused = fmt.Errorf("%w: it refuses writes", ErrUnavailable)

// ErrUnconfirmed means a claim or a bid was made, but the replicas that must hold it before it is
// answered did not confirm it in time, so a failover could still lose it (see the Redis backend's
// replicas option). It wraps ErrUnavailable: a retry learns the outcome (a claim's Idempotency-Key
// answers with the claim made, a bid's feed shows it).
var ErrUnconfirmed = fmt.Errorf("%w: not confirmed by its replicas in time", ErrUnavailable)

// ErrPartlyUnavailable means part of the store answers and part does not: on a Redis Cluster, a master
// down or refusing writes (until its replica takes over, or for good), or slots that no master serves.
// The rooms, drops and auctions whose keys live there fail and the others go on, so /healthz says
// degraded rather than have a load balancer take every instance out. It wraps ErrUnavailable.
var ErrPartlyUnavailable = fmt.Errorf("%w: part of it does not answer", ErrUnavailable)

// MaxIDLen bounds an id of a room, drop or auction, which visitor tokens and Redis keys embed.
const MaxIDLen = 64

// ValidID reports whether id may name a room, a drop or an auction: 1 to MaxIDLen of A-Z, a-z, 0-9, _
// and -. The alphabet is URL-, cookie- and Redis-key-safe, so ids embed in paths, tokens and hash tags
// without escaping.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
