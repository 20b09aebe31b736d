package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
)

// Recorder makes auction events durable; the SQL record store is one. It must be idempotent per
// (auction, seq): the outbox delivers at least once.
type Recorder interface {
	Record(ctx context.Context, id string, st auction.State, evs []auction.Event) error
}

// recordGroup is the consumer group that copies auction streams into the SQL record.
const recordGroup = "recorders"

// DefaultClaimIdle is how long an event may sit unacknowledged with a consumer before another takes
// it: a consumer that died before acknowledging is replaced by the others after this.
const DefaultClaimIdle = 5 * time.Second

func (a *Auctions) registry() string { return a.keys.prefix + ":auctions" }

// register lists an entity for the recorders and (re)creates the consumer group on its stream; Put
// calls it after the script, which may have dropped an old stream with its group.
func (s *Store) register(ctx context.Context, registry, id, stream string) error {
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
func (a *Auctions) RunRecorder(ctx context.Context, consumer string, rec Recorder, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context) error { return a.RecordOnce(ctx, consumer, rec) })
}

func runConsumer(ctx context.Context, log *slog.Logger, once func(context.Context) error) {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := once(ctx); err != nil && ctx.Err() == nil {
			log.Warn("recording to SQL failed; will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// RecordOnce makes one pass of the consumer over the registered auctions.
func (a *Auctions) RecordOnce(ctx context.Context, consumer string, rec Recorder) error {
	return a.eachRegistered(ctx, a.registry(), func(id string) error {
		return a.consume(ctx, a.akeys(id)[1], consumer, a.ClaimIdle, func(entries []rueidis.XRangeEntry) error {
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

func (s *Store) eachRegistered(ctx context.Context, registry string, fn func(id string) error) error {
	m, err := s.do(ctx, s.rdb.B().Smembers().Key(registry).Build())
	if err != nil {
		return err
	}
	ids, _ := m.AsStrSlice()
	var errs []error
	for _, id := range ids {
		if err := fn(id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// consume hands handle the stream's entries that another consumer left unacknowledged for idle, and
// its new ones, then acknowledges them if handle succeeded; otherwise they are delivered again.
func (s *Store) consume(ctx context.Context, stream, consumer string, idle time.Duration, handle func([]rueidis.XRangeEntry) error) error {
	var entries []rueidis.XRangeEntry
	claimed, err := s.do(ctx, s.rdb.B().Xautoclaim().Key(stream).Group(recordGroup).Consumer(consumer).
		MinIdleTime(itoa(idle.Milliseconds())).Start("0-0").Count(100).Build())
	if err == nil {
		if parts, _ := claimed.ToArray(); len(parts) > 1 {
			entries, _ = parts[1].AsXRange()
		}
	} else if !errors.Is(err, errNil) {
		return err
	}
	fresh, err := s.do(ctx, s.rdb.B().Xreadgroup().Group(recordGroup, consumer).Count(100).Streams().Key(stream).Id(">").Build())
	if err == nil {
		streams, _ := fresh.AsXRead()
		entries = append(entries, streams[stream]...)
	} else if !errors.Is(err, errNil) {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if err := handle(entries); err != nil {
		return err // not acknowledged: delivered again
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	_, err = s.do(ctx, s.rdb.B().Xack().Key(stream).Group(recordGroup).Id(ids...).Build())
	return err
}

// ClaimRecorder makes drop claims durable; the SQL record store is one. It must be idempotent per
// (drop, seq).
type ClaimRecorder interface {
	RecordClaims(ctx context.Context, id string, claims []drop.Claim) error
}

// RunRecorder copies every drop's claims stream into rec, as the auctions' recorder does.
func (d *Drops) RunRecorder(ctx context.Context, consumer string, rec ClaimRecorder, log *slog.Logger) {
	runConsumer(ctx, log, func(ctx context.Context) error { return d.RecordOnce(ctx, consumer, rec) })
}

// RecordOnce makes one pass of the consumer over the registered drops.
func (d *Drops) RecordOnce(ctx context.Context, consumer string, rec ClaimRecorder) error {
	return d.eachRegistered(ctx, d.registry(), func(id string) error {
		return d.consume(ctx, d.dkeys(id)[1], consumer, DefaultClaimIdle, func(entries []rueidis.XRangeEntry) error {
			claims := make([]drop.Claim, len(entries))
			for i, e := range entries {
				claims[i] = claimOfEntry(e)
			}
			return rec.RecordClaims(ctx, id, claims)
		})
	})
}
