package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestEvicting: a node with a maxmemory and a policy that evicts is named with its policy, on a
// standalone server and on one master of a Cluster; a node without a maxmemory (nothing to evict for)
// or under noeviction is not. WatchEviction tells Options.Evicting and logs what to set.
func TestEvicting(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		ctx := context.Background()
		node := tp.Addrs[len(tp.Addrs)-1]
		direct := redistest.Client(t, node) // that node alone, also when it is a Cluster's
		set := func(maxmemory, policy string) {
			t.Helper()
			cmd := direct.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", maxmemory).ParameterValue("maxmemory-policy", policy).Build()
			if err := direct.Do(ctx, cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { set("0", "noeviction") }) // the server is shared
		var (
			mu   sync.Mutex
			told [][]string
		)
		b := redisstore.New(tp.Client(t), redisstore.Options{Prefix: redistest.Prefix(t.Name()), Cluster: tp.Cluster,
			Evicting: func(nodes []string) { mu.Lock(); told = append(told, nodes); mu.Unlock() }})
		for _, c := range []struct {
			maxmemory, policy string
			evicts            bool
		}{
			{"0", "noeviction", false}, {"0", "allkeys-lru", false}, {"1gb", "allkeys-lru", true},
			{"1gb", "volatile-ttl", true}, {"1gb", "noeviction", false},
		} {
			set(c.maxmemory, c.policy)
			got, err := b.Evicting(ctx)
			want := []string{}
			if c.evicts {
				want = []string{node + " (" + c.policy + ")"}
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("maxmemory %s, %s: Evicting says %q, %v; want %q", c.maxmemory, c.policy, got, err, want)
			}
		}

		set("1gb", "allkeys-random")
		var logs bytes.Buffer
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); b.WatchEviction(wctx, slog.New(slog.NewTextHandler(&logs, nil))) }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(told)
			mu.Unlock()
			if n > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		<-done
		if want := []string{node + " (allkeys-random)"}; len(told) != 1 || !slices.Equal(told[0], want) {
			t.Fatalf("WatchEviction told %q at its first check, want %q", told, want)
		}
		if out := logs.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "set maxmemory-policy noeviction") ||
			!strings.Contains(out, node) {
			t.Fatalf("WatchEviction logged %q", out)
		}
	})
}
