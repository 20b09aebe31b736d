package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
)

// settingsCheckEvery is how often an instance looks at its Redis's settings: an operator, or a managed
// service's parameter group, may change them at any time.
const settingsCheckEvery = 30 * time.Second

// Settings is what a look at the nodes of a Redis found that puts rushgate's data at risk. Each node
// is named "ADDR" or "ADDR (POLICY)", in order.
type Settings struct {
	// Evicting are the nodes with a maxmemory and a maxmemory-policy other than noeviction. Once
	// full, such a node deletes keys to make room without a word: a visitor's place in line, an
	// admission, the count of a drop's claims, an auction's state. Under noeviction it refuses the
	// write that does not fit instead, which rushgate answers 503 and /healthz reports.
	Evicting []string
	// Unlogged are the masters without an append-only file (appendonly no): a restart of one loses
	// what came after its last snapshot, places in line and the claims and bids its outbox held for
	// the SQL record, though they were answered.
	Unlogged []string
}

// Settings reads INFO of every node this backend's client knows (all masters and replicas of a
// Cluster), which managed services leave on where they turn CONFIG off. A node that does not answer
// fails the whole look.
func (b *Backend) Settings(ctx context.Context) (Settings, error) {
	var s Settings
	for addr, node := range b.conn.rdb.Nodes() {
		nctx, cancel := context.WithTimeout(ctx, b.conn.timeout)
		info, err := node.Do(nctx, node.B().Info().Build()).ToString()
		cancel()
		if err != nil {
			return Settings{}, mapError(err)
		}
		limit, policy := infoField(info, "maxmemory"), infoField(info, "maxmemory_policy")
		if limit != "" && limit != "0" && policy != "" && policy != "noeviction" {
			s.Evicting = append(s.Evicting, addr+" ("+policy+")")
		}
		if infoField(info, "role") == "master" && infoField(info, "aof_enabled") == "0" {
			s.Unlogged = append(s.Unlogged, addr)
		}
	}
	slices.Sort(s.Evicting)
	slices.Sort(s.Unlogged)
	return s, nil
}

// infoField returns the value of one field of an INFO answer ("name:value" lines), or "".
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// WatchSettings looks at the Redis's settings (see Settings) at once and every settingsCheckEvery
// until ctx ends, and tells Options.Settings what it found. It logs an error when a node
// may evict keys, a warning when a master keeps no append-only file, each again whenever its list
// changes, and when none does any more. A look that fails changes nothing: Redis down is for /healthz
// to say, and a refusal (a user without the right to INFO, as managed services may give) is logged
// once, since nothing is checked meanwhile.
func (b *Backend) WatchSettings(ctx context.Context, log *slog.Logger) {
	next := time.NewTimer(0)
	defer next.Stop()
	var last Settings
	refused := false // and said so
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		next.Reset(settingsCheckEvery)
		s, err := b.Settings(ctx)
		if err != nil {
			if !refused && !errors.Is(err, rushgate.ErrUnavailable) && ctx.Err() == nil {
				refused = true
				log.Warn("cannot read Redis's settings (INFO): whether it may evict keys, or keeps no append-only file, goes unchecked",
					"err", err)
			}
			continue
		}
		refused = false
		switch {
		case len(s.Evicting) > 0 && !slices.Equal(s.Evicting, last.Evicting):
			log.Error("Redis may evict rushgate's keys once it is full: places in line, admissions, claims and bids vanish "+
				"without a word; set maxmemory-policy noeviction (then a full Redis refuses writes, which rushgate reports)",
				"nodes", s.Evicting)
		case len(s.Evicting) == 0 && len(last.Evicting) > 0:
			log.Info("Redis may no longer evict keys: noeviction, or no maxmemory")
		}
		switch {
		case len(s.Unlogged) > 0 && !slices.Equal(s.Unlogged, last.Unlogged):
			log.Warn("Redis keeps no append-only file: a restart of it loses the places in line since its last snapshot, "+
				"and the claims and bids answered but not yet in the SQL record; set appendonly yes", "masters", s.Unlogged)
		case len(s.Unlogged) == 0 && len(last.Unlogged) > 0:
			log.Info("Redis keeps an append-only file again")
		}
		last = s
		if b.settings != nil {
			b.settings(s)
		}
	}
}
