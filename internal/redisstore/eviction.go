package redisstore

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// evictionCheckEvery is how often an instance looks at its Redis's eviction policy: an operator, or a
// managed service's parameter group, may change it at any time.
const evictionCheckEvery = 30 * time.Second

// Evicting returns the nodes of this Redis that may evict keys, each as "ADDR (POLICY)", sorted: those
// with a maxmemory and a maxmemory-policy other than noeviction. Once full, such a node deletes keys to
// make room without a word: a visitor's place in line, an admission, the count of a drop's claims, an
// auction's state. Under noeviction it refuses the write that does not fit instead, which rushgate
// answers 503 and /healthz reports. It reads INFO, which managed services leave on where they turn
// CONFIG off. A node that does not answer fails the whole check.
func (b *Backend) Evicting(ctx context.Context) ([]string, error) {
	var evicting []string
	for addr, node := range b.conn.rdb.Nodes() {
		nctx, cancel := context.WithTimeout(ctx, b.conn.timeout)
		info, err := node.Do(nctx, node.B().Info().Section("memory").Build()).ToString()
		cancel()
		if err != nil {
			return nil, mapError(err)
		}
		limit, policy := infoField(info, "maxmemory"), infoField(info, "maxmemory_policy")
		if limit != "" && limit != "0" && policy != "" && policy != "noeviction" {
			evicting = append(evicting, addr+" ("+policy+")")
		}
	}
	slices.Sort(evicting)
	return evicting, nil
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

// WatchEviction checks, at once and every evictionCheckEvery until ctx ends, which nodes may evict
// keys (see Evicting), tells Options.Evicting, and logs an error when a node may and again whenever
// the list changes, and when none may any more. A check that fails (Redis down, which /healthz says
// on its own) changes nothing.
func (b *Backend) WatchEviction(ctx context.Context, log *slog.Logger) {
	next := time.NewTimer(0)
	defer next.Stop()
	var last []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		next.Reset(evictionCheckEvery)
		nodes, err := b.Evicting(ctx)
		if err != nil {
			continue
		}
		switch {
		case len(nodes) > 0 && !slices.Equal(nodes, last):
			log.Error("Redis may evict rushgate's keys once it is full: places in line, admissions, claims and bids vanish "+
				"without a word; set maxmemory-policy noeviction (then a full Redis refuses writes, which rushgate reports)",
				"nodes", nodes)
		case len(nodes) == 0 && len(last) > 0:
			log.Info("Redis no longer evicts keys: its maxmemory-policy is noeviction")
		}
		last = nodes
		if b.evicting != nil {
			b.evicting(nodes)
		}
	}
}
