package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestSettings: a node with a maxmemory and a policy that evicts is named with its policy, on a
// standalone server and on one master of a Cluster; a node without a maxmemory (nothing to evict for)
// or under noeviction is not. A master without an append-only file is named apart. WatchSettings
// tells Options.Settings and logs what to set.
func TestSettings(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		ctx := context.Background()
		node := tp.Addrs[len(tp.Addrs)-1]
		direct := redistest.Client(t, node) // that node alone, also when it is a Cluster's
		set := func(kv ...string) {
			t.Helper()
			cmd := direct.B().ConfigSet().ParameterValue()
			for i := 0; i < len(kv); i += 2 {
				cmd = cmd.ParameterValue(kv[i], kv[i+1])
			}
			if err := direct.Do(ctx, cmd.Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { set("maxmemory", "0", "maxmemory-policy", "noeviction", "appendonly", "no") }) // the server is shared
		// What WatchSettings tells, look by look.
		told := make(chan redisstore.Settings, 8)
		b := redisstore.New(tp.Client(t), redisstore.Options{Prefix: redistest.Prefix(t.Name()), Cluster: tp.Cluster,
			Settings: func(s redisstore.Settings) { told <- s }})
		for _, c := range []struct {
			maxmemory, policy string
			evicts            bool
		}{
			{"0", "noeviction", false}, {"0", "allkeys-lru", false}, {"1gb", "allkeys-lru", true},
			{"1gb", "volatile-ttl", true}, {"1gb", "noeviction", false},
		} {
			set("maxmemory", c.maxmemory, "maxmemory-policy", c.policy)
			s, err := b.Settings(ctx)
			var want []string
			if c.evicts {
				want = []string{node + " (" + c.policy + ")"}
			}
			if err != nil || !slices.Equal(s.Evicting, want) {
				t.Fatalf("maxmemory %s, %s: Evicting is %q, %v; want %q", c.maxmemory, c.policy, s.Evicting, err, want)
			}
		}
		// The test's servers keep no append-only file: every master is named, until the node keeps one.
		s, err := b.Settings(ctx)
		if err != nil || len(s.Unlogged) != len(tp.Addrs) || !slices.Contains(s.Unlogged, node) {
			t.Fatalf("Unlogged is %q, %v; want the %d masters", s.Unlogged, err, len(tp.Addrs))
		}
		set("appendonly", "yes")
		if s, err := b.Settings(ctx); err != nil || len(s.Unlogged) != len(tp.Addrs)-1 || slices.Contains(s.Unlogged, node) {
			t.Fatalf("with an append-only file on %s, Unlogged is %q, %v", node, s.Unlogged, err)
		}

		set("maxmemory", "1gb", "maxmemory-policy", "allkeys-random", "appendonly", "no")
		var logs bytes.Buffer
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); b.WatchSettings(wctx, slog.New(slog.NewTextHandler(&logs, nil))) }()
		var first redisstore.Settings
		select {
		case first = <-told:
		case <-time.After(5 * time.Second):
		}
		stop()
		<-done
		if want := []string{node + " (allkeys-random)"}; !slices.Equal(first.Evicting, want) || len(first.Unlogged) != len(tp.Addrs) || len(told) != 0 {
			t.Fatalf("WatchSettings told %+v at its first look, then %d more; want %q evicting and the %d masters unlogged, once",
				first, len(told), want, len(tp.Addrs))
		}
		out := logs.String()
		for _, want := range []string{"level=ERROR", "set maxmemory-policy noeviction", node + " (allkeys-random)", "level=WARN", "set appendonly yes"} {
			if !strings.Contains(out, want) {
				t.Fatalf("WatchSettings logged %q, without %q", out, want)
			}
		}
	})
}

// TestSettingsRefused: a Redis user without the right to INFO, as a managed service may hand out, gets
// a warning that the settings go unchecked, once, and Options.Settings hears nothing.
func TestSettingsRefused(t *testing.T) {
	ctx := context.Background()
	told := false
	b := redisstore.New(redistest.ClientWithout(t, redistest.Shared(t), "info"), redisstore.Options{Prefix: redistest.Prefix("refused"),
		Settings: func(redisstore.Settings) { told = true }})
	if _, err := b.Settings(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Settings without INFO: %v", err)
	}
	var logs bytes.Buffer
	wctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	b.WatchSettings(wctx, slog.New(slog.NewTextHandler(&logs, nil)))
	if out := logs.String(); strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "cannot read Redis's settings") || told {
		t.Fatalf("WatchSettings without INFO logged %q, told %v", out, told)
	}
}
