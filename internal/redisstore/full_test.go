package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestFullRedisRefusesAsUnavailable: a Redis at its maxmemory under noeviction refuses writes with
// OOM. A join and a claim then fail as ErrUnavailable (503 store_unavailable, to retry), not as a bug
// (500), and leave nothing behind, and the health check says the store refuses writes; once there is
// room again all three go through.
func TestFullRedisRefusesAsUnavailable(t *testing.T) {
	srv := redistest.Start(t) // its own: the test fills it
	rdb := redistest.Client(t, srv.Addr)
	b := redisstore.New(rdb, redisstore.Options{Prefix: redistest.Prefix("full")})
	ctx := context.Background()
	hour := rushgate.Duration(time.Hour)
	if err := b.Rooms().PutRoom(ctx, "r", room.Config{Capacity: 10, Paused: true, SessionTTL: hour, Grace: hour, IdleTimeout: hour}); err != nil {
		t.Fatal(err)
	}
	if err := b.Drops().Put(ctx, "d", drop.Config{Stock: 10, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// Two megabytes of data, then a maxmemory below them: Redis is full until they go.
	filler := strings.Repeat("x", 64<<10)
	for i := range 32 {
		if err := rdb.Do(ctx, rdb.B().Set().Key(fmt.Sprint("filler:", i)).Value(filler).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1mb"}} {
		if err := rdb.Do(ctx, rdb.B().ConfigSet().ParameterValue().ParameterValue(kv[0], kv[1]).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Do(ctx, rdb.B().Set().Key("probe").Value("x").Build()).Error(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("a write to the full Redis: %v; want OOM, or the test proves nothing", err)
	}

	_, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: "v1", Switch: true})
	if !errors.Is(err, rushgate.ErrWritesRefused) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("join on a full Redis: %v; want ErrWritesRefused (so ErrUnavailable) naming OOM", err)
	}
	_, _, err = b.Drops().Claim(ctx, "d", "", "v1", "")
	if !errors.Is(err, rushgate.ErrWritesRefused) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("claim on a full Redis: %v; want ErrWritesRefused (so ErrUnavailable) naming OOM", err)
	}
	// Redis answers PING all the same: the health check writes, and says that it is full.
	if err := b.Rooms().Ping(ctx); !errors.Is(err, rushgate.ErrWritesRefused) {
		t.Errorf("Ping of a full Redis: %v; want ErrWritesRefused", err)
	}
	if info, err := b.Drops().Get(ctx, "d"); err != nil || info.Claimed != 0 {
		t.Errorf("after the refused claim the drop shows %+v, %v; want nothing claimed", info, err)
	}
	if st, err := b.Rooms().Stats(ctx, "r"); err != nil || st.Waiting != 0 {
		t.Errorf("after the refused join the room shows %+v, %v; want nobody waiting", st, err)
	}

	if err := rdb.Do(ctx, rdb.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", "0").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := b.Rooms().Ping(ctx); err != nil {
		t.Errorf("Ping once memory is free: %v", err)
	}
	if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: "v1", Switch: true}); err != nil {
		t.Errorf("join once memory is free: %v", err)
	}
	if _, _, err := b.Drops().Claim(ctx, "d", "", "v1", ""); err != nil {
		t.Errorf("claim once memory is free: %v", err)
	}
}
