package record_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/record"
)

// TestCopyWhileClaiming: copies taken while eight writers record claims, ten a transaction, each hold
// every claim recorded before the copy began and whole transactions only; the record goes on taking
// claims after each copy.
func TestCopyWhileClaiming(t *testing.T) {
	ctx, dir, r := copySource(t)
	const writers, batch = 8, 10
	var recorded [writers]atomic.Int64 // claims each writer's drop has on disk
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := int64(0); ; n += batch {
				select {
				case <-stop:
					return
				default:
				}
				claims := make([]drop.Claim, batch)
				for i := range claims {
					seq := n + int64(i) + 1
					claims[i] = drop.Claim{ID: fmt.Sprintf("d%d.%d", w, seq), Seq: seq, Code: fmt.Sprint("C", seq),
						Visitor: fmt.Sprint("v", seq), ClaimedAt: time.Now()}
				}
				if err := r.RecordClaims(ctx, fmt.Sprint("d", w), claims); err != nil {
					t.Error(err)
					return
				}
				recorded[w].Store(n + batch)
			}
		})
	}
	for i := range 5 {
		time.Sleep(20 * time.Millisecond)
		var before [writers]int64
		for w := range writers {
			before[w] = recorded[w].Load()
		}
		path := filepath.Join(dir, fmt.Sprintf("copy%d.db", i))
		if err := r.CopyTo(ctx, path); err != nil {
			t.Fatal(err)
		}
		c, err := record.OpenSQLite(ctx, path, record.FsyncAlways)
		if err != nil {
			t.Fatalf("the copy does not open: %v", err)
		}
		for w := range writers {
			got, err := c.Claims(ctx, fmt.Sprint("d", w))
			if err != nil {
				t.Fatal(err)
			}
			n := int64(len(got))
			if n < before[w] || n%batch != 0 {
				t.Errorf("copy %d holds %d claims of drop d%d; %d were recorded before it, in transactions of %d", i, n, w, before[w], batch)
			}
			for k, cl := range got {
				if cl.Seq != int64(k+1) {
					t.Fatalf("copy %d: claim %d of d%d has seq %d", i, k, w, cl.Seq)
				}
			}
		}
		c.Close()
	}
	close(stop)
	wg.Wait()
	for w := range writers {
		if recorded[w].Load() == 0 {
			t.Errorf("writer %d recorded nothing", w)
		}
	}
}

// TestCopyRefused: a copy never overwrites a file, leaves nothing when given up, and is not taken of a
// PostgreSQL record.
func TestCopyRefused(t *testing.T) {
	ctx, dir, r := copySource(t)
	there := filepath.Join(dir, "there.db")
	if err := os.WriteFile(there, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyTo(ctx, there); err == nil {
		t.Error("a copy over an existing file was taken")
	}
	if b, _ := os.ReadFile(there); string(b) != "mine" {
		t.Errorf("the existing file now holds %q", b)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	path := filepath.Join(dir, "given-up.db")
	if err := r.CopyTo(gone, path); !errors.Is(err, context.Canceled) {
		t.Errorf("a given-up copy: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a given-up copy left %s: %v", path, err)
	}
	pg, err := record.OpenPostgres(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.CopyTo(ctx, filepath.Join(dir, "pg.db")); !errors.Is(err, record.ErrNotSQLite) {
		t.Errorf("a copy of PostgreSQL: %v", err)
	}
}

// copySource opens a SQLite record in a directory of its own, closed when the test ends.
func copySource(t *testing.T) (context.Context, string, *record.DB) {
	t.Helper()
	dir := t.TempDir()
	r, err := record.OpenSQLite(context.Background(), filepath.Join(dir, record.File), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return context.Background(), dir, r
}
