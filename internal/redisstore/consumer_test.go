package redisstore

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
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
