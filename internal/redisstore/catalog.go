package redisstore

import (
	"context"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
)

// catalogue adds or removes id in the catalog of its kind. It is a step of its own beside the entity's
// script (the catalog is in another slot); an id listed without its entity, left by a failure between
// the two, is skipped by the lists' readers (see made).
func (c *conn) catalogue(ctx context.Context, kind, id string, add bool) error {
	var err error
	if add {
		_, err = c.do(ctx, c.rdb.B().Zadd().Key(c.keys.catalog(kind)).ScoreMember().ScoreMember(0, id).Build())
	} else {
		_, err = c.do(ctx, c.rdb.B().Zrem().Key(c.keys.catalog(kind)).Member(id).Build())
	}
	return err
}

// made runs script, which makes or replaces an entity of kind, between the steps that list it
// in the recorders' registry and in the catalog (other slots). They come first, so that a failure or a
// crash between the steps leaves at most an id listed without an entity, which the lists skip and the
// recorders retire, never an entity whose claims or bids no recorder reads; and the registry hears of
// it again after, in case a recorder's pass took the id out in between as an entity that was gone (see
// retire). A script that fails leaves the ids listed.
func (c *conn) made(ctx context.Context, registry, kind, id string, script func() error) error {
	if err := c.register(ctx, registry, id); err != nil {
		return err
	}
	if err := c.catalogue(ctx, kind, id, true); err != nil {
		return err
	}
	if err := script(); err != nil {
		return err
	}
	return c.register(ctx, registry, id)
}

// list pages through the catalog of kind in id order.
func (c *conn) list(ctx context.Context, kind, after string, limit int) ([]string, error) {
	min := "-"
	if after != "" {
		min = "(" + after
	}
	m, err := c.do(ctx, c.rdb.B().Zrange().Key(c.keys.catalog(kind)).Min(min).Max("+").Bylex().Limit(0, int64(limit)).Build())
	if err != nil {
		return nil, err
	}
	return m.AsStrSlice()
}

// List implements [drop.Store].
func (d *Drops) List(ctx context.Context, after string, limit int) ([]string, error) {
	return d.list(ctx, "drops", after, limit)
}

// List implements [auction.Store].
func (a *Auctions) List(ctx context.Context, after string, limit int) ([]string, error) {
	return a.list(ctx, "auctions", after, limit)
}

var (
	_ drop.Store    = (*Drops)(nil)
	_ auction.Store = (*Auctions)(nil)
)
