package redisstore

import (
	"context"
	"log/slog"
	"sync"
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
	// Records, when set, is told after each check of Record's how many different SQL records the
	// instances on this Redis record into, for metrics: more than one is a misconfiguration.
	Records func(n int)
	// Replicas, when above 0, is how many replicas must hold a claim, a bid or a buy-now before it is
	// answered: Redis's WAIT follows each batch's script. Replication is asynchronous, so without it a
	// failover to a replica that lagged loses what the master had answered; with it, what was answered
	// is on that many replicas. A batch they do not confirm within ReplicaWait (0 means 100ms) is
	// answered rushgate.ErrUnconfirmed: made on the master, not yet safe. Pair it with Redis's
	// min-replicas-to-write, which refuses writes at once while too few replicas are connected.
	Replicas    int
	ReplicaWait time.Duration
	// Unconfirmed, when set, hears of each batch that its replicas did not confirm in time, for metrics.
	Unconfirmed func()
	// Settings, when set, is told what each look of WatchSettings found: which nodes may evict keys
	// and which masters keep no append-only file (none: empty lists), for /healthz, the console and
	// metrics.
	Settings func(Settings)
}

// Backend is the Redis backend as one value: its stores share one client and one key space, and
// nothing else holds the client.
type Backend struct {
	conn     *conn
	rooms    *Rooms
	auctions *Auctions
	drops    *Drops
	vault    *Vault
	records  func(n int)      // see Options.Records
	settings func(s Settings) // see Options.Settings
}

// New returns the backend over rdb, a standalone or cluster client; Close closes rdb.
func New(rdb rueidis.Client, opts Options) *Backend {
	if opts.Prefix == "" {
		opts.Prefix = "rg"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	switch {
	case opts.Replicas <= 0:
		opts.Replicas, opts.ReplicaWait = 0, 0
	case opts.ReplicaWait <= 0:
		opts.ReplicaWait = 100 * time.Millisecond
	default: // WAIT counts whole milliseconds, and 0 would wait forever
		opts.ReplicaWait = max(opts.ReplicaWait.Round(time.Millisecond), time.Millisecond)
	}
	c := &conn{rdb: rdb, keys: keys{prefix: opts.Prefix}, timeout: opts.Timeout, clock: opts.Clock, cluster: opts.Cluster,
		replicas: opts.Replicas, replicaWait: opts.ReplicaWait, unconfirmed: opts.Unconfirmed}
	return &Backend{conn: c, rooms: newRooms(c, opts.Batched), auctions: newAuctions(c), drops: newDrops(c), vault: &Vault{c},
		records: opts.Records, settings: opts.Settings}
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

// Run does the backend's background work until ctx ends: Record, as the recorder named consumer, and
// WatchSettings.
func (b *Backend) Run(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	var wg sync.WaitGroup
	wg.Go(func() { b.WatchSettings(ctx, log) })
	b.Record(ctx, consumer, rec, log)
	wg.Wait()
}

// Record copies the auctions' and drops' outboxes into rec until ctx ends, as the recorder named
// consumer: every instance runs it under its own name (see RunRecorder of Auctions and Drops). It also
// says every recordCheckEvery which record it writes to, and warns when the instances write to more
// than one (see watchRecords).
func (b *Backend) Record(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	var wg sync.WaitGroup
	wg.Go(func() { b.drops.RunRecorder(ctx, consumer, rec, log) })
	wg.Go(func() { b.watchRecords(ctx, rec.ID, log) })
	b.auctions.RunRecorder(ctx, consumer, rec, log)
	wg.Wait()
}

// recordCheckEvery is how often an instance says which SQL record it records into, and recordHorizon
// how long that word counts: an instance gone, or moved to another record, stops counting after it.
const (
	recordCheckEvery = 30 * time.Second
	recordHorizon    = 4 * recordCheckEvery
)

// watchRecords says every recordCheckEvery, from the start, that this instance records into the
// record id names (every second instead while id is "": the record has not opened yet), and hears
// how many different records the instances on this Redis record into. More
// than one is a misconfiguration that nothing else shows: each recorder writes the drops and auctions
// it holds the lease of into its own record, so the record of each is split between them, and putting
// one back after Redis lost its data finds only a part of it. It is logged when it starts and when it
// ends, and told to Options.Records.
func (b *Backend) watchRecords(ctx context.Context, id func() string, log *slog.Logger) {
	next := time.NewTimer(0)
	defer next.Stop()
	last := 1
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		name := id()
		if name == "" {
			next.Reset(time.Second)
			continue
		}
		next.Reset(recordCheckEvery)
		m, err := b.conn.run(ctx, seenScript, []string{b.conn.keys.records()}, name, itoa(recordHorizon.Milliseconds()))
		n, _ := m.AsInt64()
		switch {
		case err != nil || n < 1: // Redis is down: /healthz says so
		case n > 1 && int(n) != last:
			log.Warn("the instances on this Redis record into different SQL records: each records the drops and auctions it holds "+
				"into its own, and one put back after Redis loses its data finds only a part; give them all the same --postgres",
				"records", n)
		case n == 1 && last > 1:
			log.Info("the instances on this Redis record into one SQL record again")
		}
		if err == nil && n >= 1 {
			last = int(n)
			if b.records != nil {
				b.records(last)
			}
		}
	}
}

// Close closes the client.
func (b *Backend) Close() { b.conn.rdb.Close() }
