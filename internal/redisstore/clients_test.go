package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// BenchmarkClients runs the join script from 64 concurrent callers on one core, as HTTP handlers would
// call it, through go-redis and through rueidis, to choose the client on measurement; and through the
// store, whose batching lets concurrent joins share script calls.
func BenchmarkClients(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	gr := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 128})
	defer gr.Close()
	ru, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ru.Close()
	s := New(ru, Options{Prefix: redistest.Prefix("cb")}).Rooms()
	if err := s.PutRoom(ctx, "r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(3600e9), Grace: rushgate.Duration(3600e9), IdleTimeout: rushgate.Duration(3600e9), Paused: true}); err != nil {
		b.Fatal(err)
	}
	grScript := redis.NewScript(source("visit"))
	keys := s.keys.room("r")
	var n atomic.Int64
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	// each runs one join script call per visitor from 64 goroutines, each visitor new
	each := func(prefix string, join func(v string) error) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(64)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := join(prefix + strconv.FormatInt(n.Add(1), 10)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	b.Run("go-redis", each("g", func(v string) error {
		return grScript.Run(ctx, gr, keys, "", "r", 60, v, "join", 7).Err()
	}))
	b.Run("rueidis", each("r", func(v string) error {
		return visitScript.Exec(ctx, ru, keys, []string{"", "r", "60", v, "join", "7"}).Error()
	}))
	// the store, whose concurrent joins share script calls
	b.Run("rueidis-batched", each("s", func(v string) error {
		_, err := s.Join(ctx, "r", room.Entrant{Visitor: v, Switch: true})
		return err
	}))
}
