package record_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
)

// BenchmarkRecordClaims measures what the outbox costs per claim on the default SQLite record, in
// pages as the Redis recorder hands them over: ns/op is per claim.
func BenchmarkRecordClaims(b *testing.B) {
	for _, page := range []int{1, 25, 100, 500} {
		b.Run(fmt.Sprint("page=", page), func(b *testing.B) {
			r, err := record.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "r.db"), record.FsyncAlways)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			at := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
			claims := make([]drop.Claim, 0, page)
			seq := int64(0)
			b.ResetTimer()
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
		})
	}
}
