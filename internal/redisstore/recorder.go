package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
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

// register lists the auction for the recorders and (re)creates its consumer group; Put calls it after
// the script, which may have dropped an old stream with its group.
func (a *Auctions) register(ctx context.Context, id string) error {
	if _, err := a.do(ctx, a.rdb.B().Sadd().Key(a.registry()).Member(id).Build()); err != nil {
		return err
	}
	_, err := a.do(ctx, a.rdb.B().XgroupCreate().Key(a.akeys(id)[1]).Group(recordGroup).Id("0").Mkstream().Build())
	if err != nil && strings.Contains(err.Error(), "BUSYGROUP") {
		return nil
	}
	return err
}

// RunRecorder runs a consumer of the record group until ctx ends: it reads each auction's new events
// and those another consumer left unacknowledged for ClaimIdle, writes them with rec, and acknowledges
// them only after the write has committed. Every instance runs one, under its own name.
func (a *Auctions) RunRecorder(ctx context.Context, consumer string, rec Recorder, log *slog.Logger) {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := a.RecordOnce(ctx, consumer, rec); err != nil && ctx.Err() == nil {
			log.Warn("recording auction events failed; will retry", "err", err)
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
	m, err := a.do(ctx, a.rdb.B().Smembers().Key(a.registry()).Build())
	if err != nil {
		return err
	}
	ids, _ := m.AsStrSlice()
	var errs []error
	for _, id := range ids {
		if err := a.recordAuction(ctx, id, consumer, rec); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *Auctions) recordAuction(ctx context.Context, id, consumer string, rec Recorder) error {
	stream := a.akeys(id)[1]
	var entries []rueidis.XRangeEntry
	claimed, err := a.do(ctx, a.rdb.B().Xautoclaim().Key(stream).Group(recordGroup).Consumer(consumer).
		MinIdleTime(itoa(a.ClaimIdle.Milliseconds())).Start("0-0").Count(100).Build())
	if err == nil {
		if parts, _ := claimed.ToArray(); len(parts) > 1 {
			entries, _ = parts[1].AsXRange()
		}
	} else if !errors.Is(err, errNil) {
		return err
	}
	fresh, err := a.do(ctx, a.rdb.B().Xreadgroup().Group(recordGroup, consumer).Count(100).Streams().Key(stream).Id(">").Build())
	if err == nil {
		streams, _ := fresh.AsXRead()
		entries = append(entries, streams[stream]...)
	} else if !errors.Is(err, errNil) {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
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
	if err := rec.Record(ctx, id, st, evs); err != nil {
		return err // not acknowledged: delivered again
	}
	ackIDs := make([]string, len(entries))
	for i, e := range entries {
		ackIDs[i] = e.ID
	}
	_, err = a.do(ctx, a.rdb.B().Xack().Key(stream).Group(recordGroup).Id(ackIDs...).Build())
	return err
}
