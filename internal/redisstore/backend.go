package redisstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
)

// Options tune a Backend.
type Options struct {
	// Prefix starts every key; tests give each backend its own so they can share one Redis.
	Prefix string
	// Timeout bounds each operation, so that a slow or absent Redis fails requests fast with
	// ErrUnavailable instead of piling up goroutines; 0 means 500ms.
	Timeout time.Duration
	// Clock, for tests only, fixes the instant scripts use instead of the server's TIME, so that the
	// conformance suite can drive expiry without sleeping. Production leaves it nil.
	Clock func() time.Time
	// Cluster says the keys live in different slots, so no script may touch a room and a visitor's
	// line pointer at once; on standalone Redis the join script moves the pointer itself.
	Cluster bool
	// Batched, when set, is told how many joins and status reads went to Redis in each call of the
	// visit script, for metrics: batches near 1 mean Redis keeps up with the crowd, batches near the
	// limit (64) that it is the bottleneck.
	Batched func(visits int)
}

// Backend is the Redis backend as one value: its stores share one client and one key space, and
// nothing else holds the client.
type Backend struct {
	conn     *conn
	rooms    *Rooms
	auctions *Auctions
	drops    *Drops
	vault    *Vault
}

// New returns the backend over rdb, a standalone or cluster client; Close closes rdb.
func New(rdb rueidis.Client, opts Options) *Backend {
	if opts.Prefix == "" {
		opts.Prefix = "rg"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	c := &conn{rdb: rdb, keys: keys{prefix: opts.Prefix}, timeout: opts.Timeout, clock: opts.Clock, cluster: opts.Cluster}
	return &Backend{conn: c, rooms: newRooms(c, opts.Batched), auctions: newAuctions(c), drops: newDrops(c), vault: &Vault{c}}
}

// Rooms returns the room store.
func (b *Backend) Rooms() *Rooms { return b.rooms }

// Auctions returns the auction store.
func (b *Backend) Auctions() *Auctions { return b.auctions }

// Drops returns the drop store.
func (b *Backend) Drops() *Drops { return b.drops }

// Vault returns the store of shared secrets.
func (b *Backend) Vault() *Vault { return b.vault }

// History returns the per-second samples of rooms, drops and auctions, shared by every instance.
func (b *Backend) History() History { return History{b.conn} }

// Releases returns the channel on which instances announce admissions ended early.
func (b *Backend) Releases() Releases { return Releases{b.conn} }

// Spent returns the memory of used one-time things, shared by every instance.
func (b *Backend) Spent() Spent { return Spent{b.conn} }

// Audit returns the log of operators' changes, shared by every instance.
func (b *Backend) Audit() Audit { return Audit{b.conn} }

// Record copies the auctions' and drops' outboxes into rec until ctx ends, as the recorder named
// consumer: every instance runs it under its own name (see RunRecorder of Auctions and Drops).
func (b *Backend) Record(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	done := make(chan struct{})
	go func() { defer close(done); b.drops.RunRecorder(ctx, consumer, rec, log) }()
	b.auctions.RunRecorder(ctx, consumer, rec, log)
	<-done
}

// Close closes the client.
func (b *Backend) Close() { b.conn.rdb.Close() }
