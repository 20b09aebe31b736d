package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// BenchmarkClients runs the join script from 64 concurrent callers on one core, as HTTP handlers would
// call it, through go-redis and through rueidis, to choose the client on measurement.
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
	s := New(ru, Options{Prefix: "cb"})
	if err := s.PutRoom(ctx, "r", room.Config{Capacity: 1, SessionTTL: room.Duration(3600e9), Grace: room.Duration(3600e9), IdleTimeout: room.Duration(3600e9), Paused: true}); err != nil {
		b.Fatal(err)
	}
	grScript := redis.NewScript(source("visit"))
	keys := s.keys.room("r")
	var n atomic.Int64
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	b.Run("go-redis", func(b *testing.B) {
		b.SetParallelism(64)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v := "g" + strconv.FormatInt(n.Add(1), 10)
				if err := grScript.Run(ctx, gr, keys, "", "r", 60, v, "join", 7).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("rueidis", func(b *testing.B) {
		b.SetParallelism(64)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v := "r" + strconv.FormatInt(n.Add(1), 10)
				if err := visitScript.Exec(ctx, ru, keys, []string{"", "r", "60", v, "join", "7"}).Error(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("rueidis-batched", func(b *testing.B) {
		b.SetParallelism(64)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v := "s" + strconv.FormatInt(n.Add(1), 10)
				if _, err := s.Join(ctx, "r", v); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
