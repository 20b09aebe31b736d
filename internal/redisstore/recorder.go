package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
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
}

// recordGroup is the consumer group that copies auction streams into the SQL record.
const recordGroup = "recorders"

// DefaultClaimIdle is how long an event may sit unacknowledged with a consumer before another takes
// it: a consumer that died before acknowledging is replaced by the others after this.
const DefaultClaimIdle = 5 * time.Second

// register lists an entity for the recorders and (re)creates the consumer group on its stream; Put
// calls it after the script, which may have dropped an old stream with its group.
func (s *conn) register(ctx context.Context, registry, id, stream string) error {
	if _, err := s.do(ctx, s.rdb.B().Sadd().Key(registry).Member(id).Build()); err != nil {
		return err
	}
	_, err := s.do(ctx, s.rdb.B().XgroupCreate().Key(stream).Group(recordGroup).Id("0").Mkstream().Build())
	if err != nil && strings.Contains(err.Error(), "BUSYGROUP") {
		return nil
	}
	return err
}

// RunRecorder runs a consumer of the record group until ctx ends: it reads each auction's new events
// and those another consumer left unacknowledged for ClaimIdle, writes them with rec, and acknowledges
// them only after the write has committed. Every instance runs one, under its own name.
func (a *Auctions) RunRecorder(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context, retire bool) (int, error) { return a.recordPass(ctx, consumer, rec, retire) })
}

// retireEvery is how many passes of a recorder go by between its checks for entities to retire, so
// that an idle open entity costs its two stream reads a pass and its state read about once a second.
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

// runConsumer runs pass until ctx ends; pass reports how many entries it recorded.
func runConsumer(ctx context.Context, log *slog.Logger, pass func(ctx context.Context, retire bool) (int, error)) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for n := 0; ; n++ {
		got, err := pass(ctx, n%retireEvery == 0)
		if err != nil && ctx.Err() == nil {
			log.Warn("recording to SQL failed; will retry", "err", err)
		}
		next := idlePass
		if got >= recordPage {
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

// RecordOnce makes one pass of the consumer over the registered auctions, retiring those that are over
// and fully recorded (see retire).
func (a *Auctions) RecordOnce(ctx context.Context, consumer string, rec Records) error {
	_, err := a.recordPass(ctx, consumer, rec, true)
	return err
}

func (a *Auctions) recordPass(ctx context.Context, consumer string, rec Records, retire bool) (int, error) {
	return a.eachRegistered(ctx, a.keys.auctions(), func(id string) (int, error) {
		return a.recordOne(ctx, a.keys.auctions(), id, a.keys.auction(id)[1], consumer, a.ClaimIdle, retire, a.over, func(entries []rueidis.XRangeEntry) error {
			evs := make([]auction.Event, 0, len(entries))
			for _, e := range entries {
				seq, _, _ := strings.Cut(e.ID, "-")
				fv := e.FieldValues
				evs = append(evs, event([]string{seq, fv["kind"], fv["at"], fv["bidder"], fv["price"], fv["proxy"], fv["ends_at"]}))
			}
			st, err := a.Get(ctx, id)
			if err != nil {
				return err
			}
			return rec.Record(ctx, id, st, evs)
		})
	})
}

// recordOne is one entity's share of a recorder pass: it hands handle the entries of the entity's
// stream (see consume) and, on a pass that retires, takes the entity out of registry if it was over
// before the stream was read and the pass found nothing left to record (see retire). It returns how
// many entries it recorded.
func (s *conn) recordOne(ctx context.Context, registry, id, stream, consumer string, idle time.Duration, retire bool,
	over func(context.Context, string) (bool, error), handle func([]rueidis.XRangeEntry) error) (int, error) {
	wasOver := false
	if retire { // read before the stream: see retire
		var err error
		if wasOver, err = over(ctx, id); err != nil {
			return 0, err
		}
	}
	n, err := s.consume(ctx, stream, consumer, idle, handle)
	total := n
	// A full read means more may be waiting: a crowd appends thousands a second to one stream, more
	// than a commit's worth per pass, so the pass reads on (up to a bound, for the other entities' sake).
	for commits := 1; err == nil && n >= recordPage*pagesPerCommit && commits < maxCommitsPerPass; commits++ {
		n, err = s.consume(ctx, stream, consumer, idle, handle)
		total += n
	}
	if err != nil || total > 0 || !wasOver {
		return total, err
	}
	return 0, s.retire(ctx, registry, id, stream, over)
}

// recordPage is how many new entries a recorder reads from a stream in one command, and
// pagesPerCommit how many pages at most go into one SQL transaction. Each read holds Redis, which
// serves no claim meanwhile, for about 2.5 µs an entry: pages of 1,000 put the p99 of claims above
// 10 ms at 64 connections. A commit's fixed cost, though, is paid per transaction: in transactions of
// 500 claims SQLite spends a third less CPU a claim than in ones of 100 (BenchmarkRecordClaims). So
// the recorder reads small pages and commits a few together. maxCommitsPerPass bounds one entity's share of a
// pass: 6,000 entries, far above what one drop or auction takes between passes.
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
// poll, once every event of its stream is acknowledged, so that the recorders' work grows with the
// live entities rather than with every entity ever created. A Put may start the entity afresh at any
// time and registers it after its script; retire looks again after removing it and puts it back if it
// is no longer over, so that whichever order the two run in, a live entity stays registered.
//
// recordOne reads whether the entity is over before its pass reads the stream, and calls retire only
// if it was and the pass found nothing: the step that makes an entity over appends its last event in
// the same script, so that event was in the stream before the pass read it.
func (s *conn) retire(ctx context.Context, registry, id, stream string, over func(context.Context, string) (bool, error)) error {
	m, err := s.do(ctx, s.rdb.B().Xpending().Key(stream).Group(recordGroup).Build())
	if err != nil && !isNoGroup(err) {
		return err
	}
	if r, _ := m.ToArray(); len(r) > 0 && integer(r[0]) > 0 {
		return nil // another consumer still holds events of it
	}
	if _, err := s.do(ctx, s.rdb.B().Srem().Key(registry).Member(id).Build()); err != nil {
		return err
	}
	if done, err := over(ctx, id); err != nil || !done {
		_, serr := s.do(ctx, s.rdb.B().Sadd().Key(registry).Member(id).Build())
		return errors.Join(err, serr)
	}
	return nil
}

// isNoGroup reports a stream, or its consumer group, that is not there (a deleted entity).
func isNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// eachRegistered runs fn for every entity of registry and adds up what they recorded.
func (s *conn) eachRegistered(ctx context.Context, registry string, fn func(id string) (int, error)) (int, error) {
	m, err := s.do(ctx, s.rdb.B().Smembers().Key(registry).Build())
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

// consume hands handle the stream's entries that another consumer left unacknowledged for idle, and
// new ones read a page at a time while pages come back full (pagesPerCommit at most), then
// acknowledges them if handle succeeded; otherwise they are delivered again. It returns how many
// entries it handed over.
func (s *conn) consume(ctx context.Context, stream, consumer string, idle time.Duration, handle func([]rueidis.XRangeEntry) error) (int, error) {
	var entries []rueidis.XRangeEntry
	claimed, err := s.do(ctx, s.rdb.B().Xautoclaim().Key(stream).Group(recordGroup).Consumer(consumer).
		MinIdleTime(itoa(idle.Milliseconds())).Start("0-0").Count(recordPage).Build())
	if err == nil {
		if parts, _ := claimed.ToArray(); len(parts) > 1 {
			entries, _ = parts[1].AsXRange()
		}
	} else if !errors.Is(err, errNil) {
		return 0, err
	}
	for range pagesPerCommit {
		fresh, err := s.do(ctx, s.rdb.B().Xreadgroup().Group(recordGroup, consumer).Count(recordPage).Streams().Key(stream).Id(">").Build())
		if errors.Is(err, errNil) {
			break
		}
		if err != nil {
			return 0, err // what was read stays pending with this consumer: delivered again after idle
		}
		streams, _ := fresh.AsXRead()
		page := streams[stream]
		entries = append(entries, page...)
		if len(page) < recordPage {
			break
		}
	}
	if len(entries) == 0 {
		return 0, nil
	}
	if err := handle(entries); err != nil {
		return 0, err // not acknowledged: delivered again
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	// Acknowledged a page at a time, for the same reason pages are read so.
	for len(ids) > 0 {
		k := min(len(ids), recordPage)
		if _, err := s.do(ctx, s.rdb.B().Xack().Key(stream).Group(recordGroup).Id(ids[:k]...).Build()); err != nil {
			return 0, err
		}
		ids = ids[k:]
	}
	return len(entries), nil
}

// RunRecorder copies every drop's claims stream into rec, as the auctions' recorder does.
func (d *Drops) RunRecorder(ctx context.Context, consumer string, rec Records, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context, retire bool) (int, error) { return d.recordPass(ctx, consumer, rec, retire) })
}

// RecordOnce makes one pass of the consumer over the registered drops, retiring those that are sold
// out and fully recorded.
func (d *Drops) RecordOnce(ctx context.Context, consumer string, rec Records) error {
	_, err := d.recordPass(ctx, consumer, rec, true)
	return err
}

func (d *Drops) recordPass(ctx context.Context, consumer string, rec Records, retire bool) (int, error) {
	return d.eachRegistered(ctx, d.keys.drops(), func(id string) (int, error) {
		return d.recordOne(ctx, d.keys.drops(), id, d.keys.drop(id)[1], consumer, DefaultClaimIdle, retire, d.over, func(entries []rueidis.XRangeEntry) error {
			claims := make([]drop.Claim, len(entries))
			for i, e := range entries {
				claims[i] = claimOfEntry(e)
			}
			return rec.RecordClaims(ctx, id, claims)
		})
	})
}

// over reports whether a drop can take no more claims: sold out, or gone. A drop past its closing time
// stays registered: whether it has closed is the script's to judge by Redis's clock, and a closed drop
// with claims left is rare and costs only its polling.
func (d *Drops) over(ctx context.Context, id string) (bool, error) {
	m, err := d.do(ctx, d.rdb.B().Hmget().Key(d.keys.drop(id)[0]).Field("stock", "claimed").Build())
	if err != nil {
		return false, err
	}
	f, _ := m.AsStrSlice()
	if len(f) < 2 || f[0] == "" {
		return true, nil
	}
	stock, _ := strconv.ParseInt(f[0], 10, 64)
	claimed, _ := strconv.ParseInt(f[1], 10, 64)
	return claimed >= stock, nil
}
