package record_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/record"
)

// BenchmarkRecordClaims measures what the outbox costs per claim on the default SQLite record, in
// pages as the Redis recorder hands them over: ns/op is per claim.
func BenchmarkRecordClaims(b *testing.B) {
	benchClaims(b, []int{1, 25, 100, 500, 2000}, openBench)
}

// BenchmarkRecordClaimsPostgres is BenchmarkRecordClaims on PostgreSQL, the production record:
// cpu-ns/op is what the writing instance spends per claim (the server's own work is in its processes).
func BenchmarkRecordClaimsPostgres(b *testing.B) {
	benchClaims(b, []int{100, 500}, func(b *testing.B) (*record.DB, context.Context, time.Time) {
		r, err := record.OpenPostgres(context.Background(), pgtest.Database(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r, context.Background(), time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	})
}

func benchClaims(b *testing.B, pages []int, open func(b *testing.B) (*record.DB, context.Context, time.Time)) {
	for _, page := range pages {
		b.Run(fmt.Sprint("page=", page), func(b *testing.B) {
			r, ctx, at := open(b)
			claims := make([]drop.Claim, 0, page)
			seq := int64(0)
			b.ResetTimer()
			cpu := cpuTimer()
			for i := 0; i < b.N; i += page {
				claims = claims[:0]
				for range min(page, b.N-i) {
					seq++
					claims = append(claims, drop.Claim{Seq: seq, ID: fmt.Sprint("d.", seq), Code: drop.NewCode(),
						Visitor: fmt.Sprintf("v_%026d", seq), ClaimedAt: at})
				}
				if err := r.RecordClaims(ctx, "d", claims); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cpu()/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkRecordBids measures a group commit of the embedded backend's bids on the default SQLite
// record: the auction's state and, per accepted bid, its event, in one transaction with one fsync, as
// the committer writes them under a crowd (about three accepted bids a commit at 64 connections).
// ns/op is per commit.
func BenchmarkRecordBids(b *testing.B) {
	for _, bids := range []int{1, 3, 20} {
		b.Run(fmt.Sprint("bids=", bids), func(b *testing.B) {
			r, ctx, at := openBench(b)
			st := auction.New(auction.Config{Title: "bench", Currency: "EUR", StartPrice: 1, Increment: auction.Fixed(1), StartsAt: at, EndsAt: at.Add(time.Hour)})
			b.ResetTimer()
			cpu := cpuTimer()
			for range b.N {
				var batch record.Batch
				for range bids {
					st.Seq++
					st.Bids++
					st.Price++
					st.Leader = fmt.Sprintf("v_%026d", st.Seq%64)
					batch.AddAuction("hot", st, []auction.Event{{Seq: st.Seq, Kind: auction.EventBid, Bidder: st.Leader,
						Price: st.Price, At: at, EndsAt: st.EndsAt}})
				}
				if err := r.Commit(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cpu()/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTimer returns a function that tells the process's CPU time (user and system) in nanoseconds since
// cpuTimer was called: an fsync's wall time says more about the disk than about the record's code, so
// the benchmarks report both.
func cpuTimer() func() float64 {
	used := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := used()
	return func() float64 { return used() - start }
}

// openBench opens a fresh SQLite record, fsync on, for one benchmark, with a context and a fixed time.
func openBench(b *testing.B) (*record.DB, context.Context, time.Time) {
	r, err := record.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r, context.Background(), time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
}

// BenchmarkCopy copies a record of 100,000 claims (rushgate's backup): for that long, claims and bids
// wait for the record.
func BenchmarkCopy(b *testing.B) {
	r, ctx, at := openBench(b)
	const claims, page = 100_000, 1000
	for from := 0; from < claims; from += page {
		cs := make([]drop.Claim, page)
		for i := range cs {
			seq := int64(from + i + 1)
			cs[i] = drop.Claim{ID: fmt.Sprintf("d.%d", seq), Seq: seq, Code: fmt.Sprintf("CODE-%08d", seq),
				Visitor: fmt.Sprintf("visitor-%016d", seq), ClaimedAt: at}
		}
		if err := r.RecordClaims(ctx, "d", cs); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		path := filepath.Join(dir, fmt.Sprint(n, ".db"))
		if err := r.CopyTo(ctx, path); err != nil {
			b.Fatal(err)
		}
		if n == 1 {
			st, _ := os.Stat(path)
			b.ReportMetric(float64(st.Size())/(1<<20), "MiB")
		}
		os.Remove(path)
	}
}
