package record

import (
	"context"
	"fmt"

	"github.com/rushgate/rushgate/internal/room"
)

// RecordRoom writes a room's config, so that an embedded instance keeps its rooms across a restart.
func (r *DB) RecordRoom(ctx context.Context, id string, cfg room.Config) error {
	return r.putConfig(ctx, "rooms", id, cfg)
}

// ForgetRoom removes a deleted room's config.
func (r *DB) ForgetRoom(ctx context.Context, id string) error {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	if _, err := r.db.ExecContext(ctx, r.q(`DELETE FROM rooms WHERE id = ?`), id); err != nil {
		return r.wrote(ctx, fmt.Errorf("record: %w", err))
	}
	return r.wrote(ctx, nil)
}

// LoadRooms returns the config of every recorded room, for an embedded instance to resume from.
func (r *DB) LoadRooms(ctx context.Context) (map[string]room.Config, error) {
	return loadConfigs[room.Config](ctx, r, "rooms")
}
