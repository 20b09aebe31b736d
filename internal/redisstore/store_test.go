package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/storetest"
)

// harnesses returns a factory of stores on one client, each with its own key prefix and fake clock:
// the room, auction and drop stores and the vault of one backend value.
func harnesses(rdb rueidis.Client, cluster bool) func(t *testing.T) storetest.Harness {
	return func(t *testing.T) storetest.Harness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		b := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("t"), Clock: c.Now, Timeout: 5 * time.Second, Cluster: cluster})
		return storetest.Harness{Rooms: b.Rooms(), Auctions: b.Auctions(), Drops: b.Drops(), Vault: b.Vault(),
			History: b.History(), Audit: b.Audit(), Spent: b.Spent(),
			Advance: c.Advance, Now: c.Now}
	}
}

// TestConformanceStandalone runs the whole suite on one standalone redis-server.
func TestConformanceStandalone(t *testing.T) {
	addr := redistest.Shared(t)
	storetest.Run(t, harnesses(redistest.Client(t, addr), false))
}

// TestConformanceCluster runs the whole suite on one real 3-master Cluster.
func TestConformanceCluster(t *testing.T) {
	addrs := redistest.SharedCluster(t)
	storetest.Run(t, harnesses(redistest.Client(t, addrs...), true))
}

// TestServerClock runs a flow on the server's own TIME, without the test clock override.
func TestServerClock(t *testing.T) {
	addr := redistest.Shared(t)
	s := redisstore.New(redistest.Client(t, addr), redisstore.Options{Prefix: redistest.Prefix("clock")}).Rooms()
	ctx := context.Background()
	cfg := room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Minute), Grace: rushgate.Duration(100 * time.Millisecond), IdleTimeout: rushgate.Duration(time.Minute)}
	if err := s.PutRoom(ctx, "r", cfg); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Join(ctx, "r", room.Entrant{Visitor: "a", Switch: true})
	_, _ = s.Join(ctx, "r", room.Entrant{Visitor: "b", Switch: true})
	tk, err := s.Admit(ctx, "r", 10)
	if err != nil || len(tk.Admitted) != 1 {
		t.Fatalf("admit: %+v %v", tk, err)
	}
	if d := time.Until(tk.Admitted[0].Admission.ExpiresAt); d <= 0 || d > time.Second {
		t.Fatalf("grace expiry in %v, want about 100ms from the server's clock", d)
	}
	if tk.Next.IsZero() {
		t.Fatal("no next deadline")
	}
	time.Sleep(time.Until(tk.Next) + 20*time.Millisecond) // the one wait: real server time must pass
	tk, _ = s.Admit(ctx, "r", 10)
	if len(tk.Expired) != 1 || len(tk.Admitted) != 1 || tk.Admitted[0].Visitor != "b" {
		t.Fatalf("after grace: %+v", tk)
	}
}

// TestScriptFlush checks that scripts survive SCRIPT FLUSH (as after a restart or failover).
func TestScriptFlush(t *testing.T) {
	addr := redistest.Shared(t)
	rdb := redistest.Client(t, addr)
	s := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("flush")}).Rooms()
	ctx := context.Background()
	if err := s.PutRoom(ctx, "r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Minute), Grace: rushgate.Duration(time.Minute), IdleTimeout: rushgate.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, rdb.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Join(ctx, "r", room.Entrant{Visitor: "a", Switch: true}); err != nil || st.State != room.StateWaiting {
		t.Fatalf("join after SCRIPT FLUSH: %+v %v", st, err)
	}
}
