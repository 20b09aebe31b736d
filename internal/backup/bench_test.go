package backup_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
)

// BenchmarkBackup takes, checks and seals the backup of a record of 100,000 claims: what a kept backup
// costs the instance's CPU, once per --backup-every, and what sealing it adds.
func BenchmarkBackup(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := record.OpenSQLite(ctx, filepath.Join(dir, record.File), record.FsyncNo)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	at := time.Date(2026, 12, 5, 20, 0, 0, 0, time.UTC)
	const claims, page = 100_000, 1000
	for from := 0; from < claims; from += page {
		cs := make([]drop.Claim, page)
		for i := range cs {
			seq := int64(from + i + 1)
			cs[i] = drop.Claim{ID: fmt.Sprintf("d.%d", seq), Seq: seq, Code: fmt.Sprintf("CODE-%08d", seq),
				Visitor: fmt.Sprintf("visitor-%016d", seq), ClaimedAt: at}
		}
		if err := db.RecordClaims(ctx, "d", cs); err != nil {
			b.Fatal(err)
		}
	}
	ids, to := key(b)
	src := backup.Source{Dir: dir, Record: db}
	for _, c := range []struct {
		name  string
		to    []age.Recipient
		check bool
	}{{"take", nil, false}, {"take+check", nil, true}, {"sealed", to, false}, {"sealed+check", to, true}} {
		b.Run(c.name, func(b *testing.B) {
			bk := backup.New(src, nil, c.to...)
			var archive bytes.Buffer
			for b.Loop() {
				archive.Reset()
				if err := bk.Backup(ctx, &archive); err != nil {
					b.Fatal(err)
				}
				if c.check {
					if _, err := backup.Check(ctx, bytes.NewReader(archive.Bytes()), ids...); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(archive.Len())/(1<<20), "MiB")
		})
	}
}
