package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redistest"
)

// BenchmarkScripts measures what a claim and a bid cost Redis itself, in batches of the size a crowd
// at 64 connections makes (14 claims, 13 bids a script call), as Redis reports it: the script's time
// in INFO commandstats, per claim or bid (redis-µs/op). Redis runs every instance's scripts on one
// thread, so this, not the wall time per op, bounds what a fleet of instances can serve. Most of the
// bids are refused as too low, as in a hot auction.
func BenchmarkScripts(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redistest.Client(b, srv.Addr)
	be := New(rdb, Options{Prefix: redistest.Prefix("bs")})
	ctx := context.Background()
	opens := time.Now().Add(-time.Minute)
	runs := 0 // each run gets a drop or auction of its own

	b.Run("claim", func(b *testing.B) {
		const batch = 14
		runs++
		id := "d" + strconv.Itoa(runs)
		if err := be.Drops().Put(ctx, id, drop.Config{Stock: b.N + batch, PerVisitor: 1, OpensAt: opens}); err != nil {
			b.Fatal(err)
		}
		reqs := make([]claimReq, batch)
		resetStats(b, rdb)
		for n := 0; n < b.N; n += batch {
			for i := range reqs {
				reqs[i] = claimReq{visitor: "v" + strconv.Itoa(n+i), code: drop.NewCode()}
			}
			if _, err := be.Drops().sendClaims(ctx, revision{id: id}, reqs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(scriptMicros(b, rdb)/float64(b.N), "redis-µs/op")
	})

	b.Run("bid", func(b *testing.B) {
		const batch = 13
		runs++
		id := "a" + strconv.Itoa(runs)
		cfg := auction.Config{Title: "Lot", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(1),
			StartsAt: opens, EndsAt: opens.Add(time.Hour)}
		if err := be.Auctions().Put(ctx, id, cfg); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		accepted := 0
		reqs := make([]stepReq, batch)
		resetStats(b, rdb)
		for n := 0; n < b.N; n += batch {
			for i := range reqs {
				// Maxima rise with the bids, spread so that about one bid in eight is taken, as in bench/auction-bids.sh.
				reqs[i] = stepReq{op: "bid", bidder: "b" + strconv.Itoa(n+i), max: 100 + int64(n+i) + rng.Int64N(200)}
			}
			out, err := be.Auctions().sendSteps(ctx, revision{id: id}, reqs)
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range out {
				if o.err == nil {
					accepted++
				}
			}
		}
		b.ReportMetric(scriptMicros(b, rdb)/float64(b.N), "redis-µs/op")
		b.ReportMetric(float64(accepted)/float64(b.N), "accepted/op")
	})
}

func resetStats(b *testing.B, rdb rueidis.Client) {
	b.Helper()
	if err := rdb.Do(context.Background(), rdb.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
}

// scriptMicros returns the microseconds Redis spent in EVALSHA since the last resetStats.
func scriptMicros(b *testing.B, rdb rueidis.Client) float64 {
	b.Helper()
	b.StopTimer()
	us := commandStat(b, rdb, "evalsha", "usec")
	if us == 0 {
		b.Fatal("INFO commandstats shows no EVALSHA")
	}
	return us
}
