package memstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/rushgate/rushgate/internal/record"
)

// Undurable tells tests how many steps of an auction are decided and not yet committed.
func (a *Auctions) Undurable(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.auctions[id].undurable)
}

// OpenAt opens the backend as Open does, on clock's time.
func OpenAt(ctx context.Context, records *record.DB, dir string, fsync record.Fsync, log *slog.Logger, clock func() time.Time) (*Backend, error) {
	return open(ctx, records, dir, fsync, log, clock)
}

// Crash ends b as kill -9 would once its journal was written.
func Crash(b *Backend) { crash(b) }
