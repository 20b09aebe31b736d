package redisstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestConsumerPassesSoonerWhileBusy: a recorder that found a page of work or more passes again after
// busyPass, so that a crowd's records come in small pieces, and one that found less waits idlePass.
func TestConsumerPassesSoonerWhileBusy(t *testing.T) {
	passes := func(found int) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*idlePass)
		defer cancel()
		var n atomic.Int64
		runConsumer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context, bool) (int, error) {
			n.Add(1)
			return found, nil
		})
		return n.Load()
	}
	// About 30 passes fit in three idle pauses at busy pace; a third of that leaves room for a slow host.
	if busy := passes(recordPage); busy < int64(idlePass/busyPass) {
		t.Errorf("%d passes in %v while each found work; want about %d", busy, 3*idlePass, 3*idlePass/busyPass)
	}
	for _, found := range []int{0, recordPage - 1} {
		if idle := passes(found); idle > 4 {
			t.Errorf("%d passes in %v while each found %d entries; want at most 4", idle, 3*idlePass, found)
		}
	}
}

// TestConsumerBacksOffWhileTheRecordFails: while passes fail (the SQL record is down) a recorder
// waits longer after each, up to failedPassMax, instead of retrying every idlePass, and its log says
// so once when the failures start and once when a pass succeeds again, not once per pass.
func TestConsumerBacksOffWhileTheRecordFails(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	down := errors.New("connection refused")
	var n atomic.Int64
	// Failing for 2 s: retrying every idlePass would make 20 passes; backing off from 100 ms makes
	// five (at 0, 100, 300, 700 and 1,500 ms), and the sixth, at 3.1 s, succeeds.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3700*time.Millisecond)
	defer cancel()
	runConsumer(ctx, log, func(context.Context, bool) (int, error) {
		n.Add(1)
		if time.Since(start) < 2*time.Second {
			return 0, down
		}
		return 0, nil
	})
	// After it succeeds it passes every idlePass again: about five more passes before 3.7 s.
	if got := n.Load(); got < 6 || got > 12 {
		t.Errorf("%d passes in 3.7 s, failing for the first 2 s; want 6 (backing off) plus a few idle ones", got)
	}
	out := logs.String()
	if c := strings.Count(out, "recording to SQL failed"); c != 1 {
		t.Errorf("the failure was logged %d times; want once:\n%s", c, out)
	}
	if c := strings.Count(out, "recording to SQL resumed"); c != 1 || !strings.Contains(out, "failed_passes=5") {
		t.Errorf("the recovery was logged %d times; want once, after 5 failed passes:\n%s", c, out)
	}
}

// TestConsumerKeepsPaceWhilePartFails: a pass that fails for some entities (a Cluster master down)
// but records a page or more of the others' entries passes again after busyPass, not after a growing
// backoff, so that a busy drop on a master that answers is not held back for as long as another
// master is down; the failure is still logged once.
func TestConsumerKeepsPaceWhilePartFails(t *testing.T) {
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*idlePass)
	defer cancel()
	var n atomic.Int64
	runConsumer(ctx, slog.New(slog.NewTextHandler(&logs, nil)), func(context.Context, bool) (int, error) {
		n.Add(1)
		return recordPage, errors.New("dial tcp 10.0.0.7:6379: connection refused")
	})
	if got := n.Load(); got < int64(idlePass/busyPass) {
		t.Errorf("%d passes in %v while each recorded a page and failed in part; want about %d", got, 3*idlePass, 3*idlePass/busyPass)
	}
	if c := strings.Count(logs.String(), "recording to SQL failed"); c != 1 {
		t.Errorf("the failure was logged %d times; want once:\n%s", c, logs.String())
	}
}

// TestRecordLease holds lua/record_lease.lua to its rules: one holder at a time until its lease lapses,
// and a cursor that only moves forward, whoever moves it.
func TestRecordLease(t *testing.T) {
	b := New(redistest.Client(t, redistest.Shared(t)), Options{Prefix: redistest.Prefix("lease")})
	c := b.drops.conn
	ctx := context.Background()
	box := outbox{id: "d", recording: c.keys.recording("drop:d")}
	step := func(who string, ttl time.Duration, recorded, wantCursor int64, wantHeld bool) {
		t.Helper()
		cursor, held, err := c.lease(ctx, box, who, ttl, recorded)
		if err != nil || held != wantHeld || (held && cursor != wantCursor) {
			t.Fatalf("%s moving to %d: cursor %d, held %v, %v; want %d, %v", who, recorded, cursor, held, err, wantCursor, wantHeld)
		}
	}
	step("a", time.Minute, 0, 0, true)
	step("b", time.Minute, 0, 0, false)
	step("a", time.Minute, 5, 5, true)
	step("b", time.Minute, 9, 0, false) // refused: neither the lease nor the cursor moves
	step("a", 50*time.Millisecond, 3, 5, true)
	time.Sleep(100 * time.Millisecond) // a's lease lapses
	step("b", time.Minute, 0, 5, true)
	step("a", time.Minute, 0, 0, false)
}
