package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
)

// Records is where the recorders copy the outbox: the SQL record. It must be idempotent per (auction,
// seq) and per (drop, seq), since the outbox delivers at least once.
type Records interface {
	Record(ctx context.Context, id string, st auction.State, evs []auction.Event) error
	RecordClaims(ctx context.Context, id string, claims []drop.Claim) error
	// ID names the record, the same for every instance that records into it (see watchRecords).
	ID() string
}

// Each drop's and auction's stream is its outbox to SQL, and one recorder at a time copies it, under a
// lease that it renews on each pass (lua/record_lease.lua): when an instance dies, its leases lapse
// after DefaultRecordLease and the other instances' recorders take its entities over. The lease's
// cursor says up to which sequence number the stream is recorded; a recorder reads on from there with
// XRANGE and moves the cursor only after its SQL commit, so every entry is written at least once, and
// again after a recorder died between its commit and the move (which Records ignores). Reading by
// sequence number costs Redis a fraction of what a consumer group did, which moved each entry into a
// pending list on delivery and out of it on acknowledgement (docs/benchmarks.md).

// DefaultRecordLease is how long a recorder's lease on an entity lasts unless it renews it: how long a
// dead instance's entities wait for another recorder.
const DefaultRecordLease = 5 * time.Second

// register lists an entity for the recorders; Put calls it after the script.
func (c *conn) register(ctx context.Context, registry, id string) error {
	_, err := c.do(ctx, c.rdb.B().Sadd().Key(registry).Member(id).Build())
	return err
}

// RunRecorder copies each auction's new events into rec until ctx ends, under the leases it holds
// (see DefaultRecordLease). Every instance runs one, under its own name.
func (a *Auctions) RunRecorder(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context, retire bool) (int, error) { return a.recordPass(ctx, consumer, rec, retire) })
}

// retireEvery is how many passes of a recorder go by between its checks for entities to retire, so
// that an idle open entity costs its lease and one stream read a pass and its state read about once a
// second.
const retireEvery = 10

// idlePass and busyPass are the pauses between a recorder's passes: busyPass after one that recorded
// a page or more, idlePass otherwise. Under a crowd short pauses spread the recording into small
// pieces: a pass that recorded the 1,800 claims of 100 ms held a one-core instance for about 10 ms,
// which its requests' latency showed. Below a page a pass (and commit) every 100 ms keeps each commit
// small anyway, and a commit's fixed cost is paid ten times less often than at busy pace: the accepted
// bids of a hot auction, a few thousand a second, came 24 to a commit. At rest the long pause bounds
// what each idle entity costs.
const (
	idlePass = 100 * time.Millisecond
	busyPass = 10 * time.Millisecond
)

// failedPassMax and remindEvery shape a recorder's retries while the SQL record fails: after a pass
// that failed and recorded nothing the pause doubles from idlePass up to failedPassMax, so that an
// outage of the record costs neither a connection attempt nor a log line every 100 ms per recorder
// (the outbox keeps what waits), and the log says so once when it starts, every remindEvery while it
// lasts, and once when it ends. A pass that failed in part but recorded the rest keeps the pace of
// what it recorded.
const (
	failedPassMax = 5 * time.Second
	remindEvery   = time.Minute
)

// runConsumer runs pass until ctx ends; pass reports how many entries it recorded.
func runConsumer(ctx context.Context, log *slog.Logger, pass func(ctx context.Context, retire bool) (int, error)) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	var failures int                // failed passes in a row
	var failedSince, told time.Time // when they began, and when the log last said so
	for n := 0; ; n++ {
		got, err := pass(ctx, n%retireEvery == 0)
		if ctx.Err() != nil {
			return
		}
		next := idlePass
		if now := time.Now(); err != nil {
			failures++
			switch {
			case failures == 1:
				failedSince, told = now, now
				log.Warn("recording to SQL failed; the outbox keeps what waits, retrying with backoff", "err", err)
			case now.Sub(told) >= remindEvery:
				told = now
				log.Warn("recording to SQL still fails", "for", now.Sub(failedSince).Round(time.Second), "passes", failures, "err", err)
			}
			if got == 0 {
				next = min(idlePass<<min(failures-1, 8), failedPassMax)
			}
		} else if failures > 0 {
			log.Info("recording to SQL resumed", "failed_for", now.Sub(failedSince).Round(time.Millisecond), "failed_passes", failures)
			failures = 0
		}
		if got >= recordPage {
			// A full page: more waits. Also when part of the pass failed (a Cluster master down, one
			// entity's rows refused) while the rest was recorded: the rest keeps its pace, or a busy
			// drop's record would fall behind for as long as the other part fails.
			next = busyPass
		}
		pause.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-pause.C:
		}
	}
}

// RecordOnce makes one pass of the recorder over the registered auctions, retiring those that are over
// and fully recorded (see retire).
func (a *Auctions) RecordOnce(ctx context.Context, consumer string, rec Records) error {
	_, err := a.recordPass(ctx, consumer, rec, true)
	return err
}

func (a *Auctions) recordPass(ctx context.Context, consumer string, rec Records, retire bool) (int, error) {
	return a.eachRegistered(ctx, a.keys.auctions(), func(id string) (int, error) {
		return a.recordOne(ctx, a.keys.auctionOutbox(id), consumer, a.RecordLease, retire, a.over, func(entries []rueidis.XRangeEntry) error {
			evs := make([]auction.Event, len(entries))
			for i, e := range entries {
				evs[i] = eventOfEntry(e)
			}
			st, err := a.Get(ctx, id)
			if err != nil {
				return err
			}
			return rec.Record(ctx, id, st, evs)
		})
	})
}

// outbox names what a recorder needs of one entity: the registry it is listed in, its id, its stream
// and its recording keys (see keys.recording).
type outbox struct {
	registry, id, stream string
	recording            []string
}

// dropOutbox and auctionOutbox name an entity's outbox, as its recorder and Backlog read it.
func (k keys) dropOutbox(id string) outbox {
	return outbox{registry: k.drops(), id: id, stream: k.drop(id)[1], recording: k.recording("drop:" + id)}
}

func (k keys) auctionOutbox(id string) outbox {
	return outbox{registry: k.auctions(), id: id, stream: k.auction(id)[1], recording: k.recording("auction:" + id)}
}

// recordOne is one entity's share of a recorder pass: it hands handle the entries of the entity's
// stream (see consume) and, on a pass that retires, takes the entity out of its registry if it was over
// before the stream was read and the pass, holding the lease, found nothing left to record (see
// retire). It returns how many entries it recorded.
func (c *conn) recordOne(ctx context.Context, box outbox, recorder string, lease time.Duration, retire bool,
	over func(context.Context, string) (bool, error), handle func([]rueidis.XRangeEntry) error) (int, error) {
	wasOver := false
	if retire { // read before the stream: see retire
		var err error
		if wasOver, err = over(ctx, box.id); err != nil {
			return 0, err
		}
	}
	n, held, err := c.consume(ctx, box, recorder, lease, handle)
	total := n
	// A full read means more may be waiting: a crowd appends thousands a second to one stream, more
	// than a commit's worth per pass, so the pass reads on (up to a bound, for the other entities' sake).
	for commits := 1; err == nil && n >= recordPage*pagesPerCommit && commits < maxCommitsPerPass; commits++ {
		n, held, err = c.consume(ctx, box, recorder, lease, handle)
		total += n
	}
	if err != nil || total > 0 || !held || !wasOver {
		return total, err
	}
	return 0, c.retire(ctx, box, over)
}

// recordPage is how many entries a recorder reads from a stream in one command, and pagesPerCommit
// how many pages at most go into one SQL transaction. Each read holds Redis, which serves no claim
// meanwhile: pages of 1,000 put the p99 of claims above 10 ms at 64 connections. A commit's fixed
// cost, though, is paid per transaction: in transactions of 500 claims SQLite spends a third less CPU
// a claim than in ones of 100 (BenchmarkRecordClaims). So the recorder reads small pages and commits a
// few together. maxCommitsPerPass bounds one entity's share of a pass: 6,000 entries, far above what
// one drop or auction takes between passes.
const (
	recordPage        = 100
	pagesPerCommit    = 3
	maxCommitsPerPass = 20
)

// over reports whether an auction can append no more events: closed, sold, or gone.
func (a *Auctions) over(ctx context.Context, id string) (bool, error) {
	m, err := a.do(ctx, a.rdb.B().Hmget().Key(a.keys.auction(id)[0]).Field("closed", "sold", "price").Build())
	if err != nil {
		return false, err
	}
	f, _ := m.AsStrSlice()
	return len(f) < 3 || f[2] == "" || f[0] == "1" || f[1] == "1", nil
}

// retire takes an entity that is over (no event can come any more) out of the registry the recorders
// poll, once its stream is recorded to its end, so that the recorders' work grows with the live
// entities rather than with every entity ever created. A Put may start the entity afresh at any time
// and registers it after its script; retire looks again after removing it and puts it back if it is no
// longer over, so that whichever order the two run in, a live entity stays registered.
//
// recordOne calls retire only if the entity was over before its pass read the stream and the pass,
// holding the lease, found nothing after the cursor: the step that makes an entity over appends its
// last event in the same script, so that event was in the stream before the pass read it.
func (c *conn) retire(ctx context.Context, box outbox, over func(context.Context, string) (bool, error)) error {
	if _, err := c.do(ctx, c.rdb.B().Srem().Key(box.registry).Member(box.id).Build()); err != nil {
		return err
	}
	if done, err := over(ctx, box.id); err != nil || !done {
		_, serr := c.do(ctx, c.rdb.B().Sadd().Key(box.registry).Member(box.id).Build())
		return errors.Join(err, serr)
	}
	return nil
}

// eachRegistered runs fn for every entity of registry and adds up what they recorded.
func (c *conn) eachRegistered(ctx context.Context, registry string, fn func(id string) (int, error)) (int, error) {
	m, err := c.do(ctx, c.rdb.B().Smembers().Key(registry).Build())
	if err != nil {
		return 0, err
	}
	ids, _ := m.AsStrSlice()
	var errs []error
	total := 0
	for _, id := range ids {
		n, err := fn(id)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// consume takes or renews the recorder's lease on the entity and, holding it, hands handle the
// stream's entries after the cursor, read a page at a time while pages come back full
// (pagesPerCommit at most), then moves the cursor past them if handle succeeded; otherwise they are
// read again. It returns how many entries it handed over, and whether the recorder held the lease.
func (c *conn) consume(ctx context.Context, box outbox, recorder string, lease time.Duration,
	handle func([]rueidis.XRangeEntry) error) (int, bool, error) {
	cursor, held, err := c.lease(ctx, box, recorder, lease, 0)
	if err != nil || !held {
		return 0, held, err
	}
	var entries []rueidis.XRangeEntry
	for range pagesPerCommit {
		page, err := c.entriesAfter(ctx, box.stream, cursor, recordPage)
		if err != nil {
			return 0, true, err
		}
		entries = append(entries, page...)
		if len(page) < recordPage {
			break
		}
		cursor = seqOfID(page[len(page)-1].ID)
	}
	if len(entries) == 0 {
		return 0, true, nil
	}
	if err := handle(entries); err != nil {
		return 0, true, err // the cursor stays: read again
	}
	// A recorder whose lease lapsed meanwhile is refused the move; whoever holds the lease now writes
	// the same entries again.
	_, held, err = c.lease(ctx, box, recorder, lease, seqOfID(entries[len(entries)-1].ID))
	return len(entries), held, err
}

// lease runs lua/record_lease.lua for the entity: it takes or renews the recorder's lease and, when
// recorded is a sequence number (they start at 1; 0 is none), moves the cursor to it. It returns the
// cursor, and false when another recorder holds the lease.
func (c *conn) lease(ctx context.Context, box outbox, recorder string, lease time.Duration, recorded int64) (int64, bool, error) {
	var upTo string
	if recorded > 0 {
		upTo = itoa(recorded)
	}
	m, err := c.run(ctx, leaseScript, box.recording, recorder, itoa(lease.Milliseconds()), upTo)
	if errors.Is(err, errNil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	cursor, err := m.AsInt64()
	return cursor, err == nil, err
}

// Backlog counts what the outboxes hold that the SQL record does not yet: the claims of every live drop
// and the events of every live auction after their recorded cursors. While the record fails or falls
// behind, those rest on Redis alone (its AOF), so an operator watches it as a queue's length.
func (b *Backend) Backlog(ctx context.Context) (claims, events int64, err error) {
	k := b.conn.keys
	if claims, err = b.conn.backlog(ctx, k.drops(), k.dropOutbox); err != nil {
		return 0, 0, err
	}
	events, err = b.conn.backlog(ctx, k.auctions(), k.auctionOutbox)
	return claims, events, err
}

// backlog adds up, over the entities of registry, how far each stream runs past its cursor; outboxOf
// names an entity's stream and cursor. The entities' reads go in one pipeline.
func (c *conn) backlog(ctx context.Context, registry string, outboxOf func(id string) outbox) (int64, error) {
	m, err := c.do(ctx, c.rdb.B().Smembers().Key(registry).Build())
	if err != nil {
		return 0, err
	}
	ids, _ := m.AsStrSlice()
	if len(ids) == 0 {
		return 0, nil
	}
	cmds := make(rueidis.Commands, 0, 2*len(ids))
	for _, id := range ids {
		box := outboxOf(id)
		cmds = append(cmds, c.rdb.B().Xrevrange().Key(box.stream).End("+").Start("-").Count(1).Build(),
			c.rdb.B().Get().Key(box.recording[1]).Build())
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var total int64
	res := c.rdb.DoMulti(ctx, cmds...)
	for i := 0; i < len(res); i += 2 {
		last, err := res[i].AsXRange()
		if err != nil {
			return 0, mapError(err)
		}
		recorded, err := res[i+1].AsInt64()
		if err != nil && !rueidis.IsRedisNil(err) {
			return 0, mapError(err)
		}
		if len(last) == 1 {
			total += max(0, seqOfID(last[0].ID)-recorded)
		}
	}
	return total, nil
}

// seqOfID is the sequence number of a stream entry of a drop or an auction, as a number.
func seqOfID(id string) int64 {
	n, _ := strconv.ParseInt(seqOf(id), 10, 64)
	return n
}

// RunRecorder copies every drop's claims into rec, as the auctions' recorder does their events.
func (d *Drops) RunRecorder(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context, retire bool) (int, error) { return d.recordPass(ctx, consumer, rec, retire) })
}

// RecordOnce makes one pass of the recorder over the registered drops, retiring those that are sold
// out and fully recorded.
func (d *Drops) RecordOnce(ctx context.Context, consumer string, rec Records) error {
	_, err := d.recordPass(ctx, consumer, rec, true)
	return err
}

func (d *Drops) recordPass(ctx context.Context, consumer string, rec Records, retire bool) (int, error) {
	return d.eachRegistered(ctx, d.keys.drops(), func(id string) (int, error) {
		return d.recordOne(ctx, d.keys.dropOutbox(id), consumer, DefaultRecordLease, retire, d.over, func(entries []rueidis.XRangeEntry) error {
			claims := make([]drop.Claim, len(entries))
			for i, e := range entries {
				claims[i] = claimOfEntry(e)
			}
			return rec.RecordClaims(ctx, id, claims)
		})
	})
}

// over reports whether a drop can take no more claims: gone, sold out, or closed (lua/drop_over.lua).
// Whether it has closed is judged by Redis's clock, as the claim script judges it, and only
// closedMargin after its closing time: a claim the script took just before can be in the stream by
// then, never after it. A drop reopened later is registered again by its Schedule or Put.
func (d *Drops) over(ctx context.Context, id string) (bool, error) {
	m, err := d.run(ctx, dropOverScript, d.keys.drop(id)[:1], d.now(), itoa(closedMargin.Milliseconds()))
	if err != nil {
		return false, err
	}
	n, err := m.AsInt64()
	return n == 1, err
}

// closedMargin is how long after its closing time, by Redis's clock, a drop counts as over for the
// recorders: a margin for a step back of that clock.
const closedMargin = 5 * time.Second
