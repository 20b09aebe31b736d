package vault_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/internal/vault"
)

var ctx = context.Background()

// TestRacingCreates: callers that race to create one secret all get the one that was stored.
func TestRacingCreates(t *testing.T) {
	d := vault.Dir(t.TempDir())
	const n = 16
	got := make([]string, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, c, err := d.LoadOrCreate(ctx, "s", func() ([]byte, error) { return []byte(strconv.Itoa(i)), nil })
			if err != nil {
				t.Error(err)
			}
			got[i], created[i] = string(b), c
		}()
	}
	wg.Wait()
	stored, _, err := d.LoadOrCreate(ctx, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	makers := 0
	for i := range n {
		if got[i] != string(stored) {
			t.Fatalf("caller %d got %q; the vault holds %q", i, got[i], stored)
		}
		if created[i] {
			makers++
		}
	}
	if makers != 1 {
		t.Fatalf("%d callers say they created the secret", makers)
	}
}

// TestSwapLosesNothing: compare-and-swap increments from many goroutines all land, and no temporary
// file is left.
func TestSwapLosesNothing(t *testing.T) {
	dir := t.TempDir()
	d := vault.Dir(dir)
	const n, each = 8, 25
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					cur, _, err := d.LoadOrCreate(ctx, "count", func() ([]byte, error) { return []byte("0"), nil })
					if err != nil {
						t.Error(err)
						return
					}
					v, _ := strconv.Atoi(string(cur))
					ok, err := d.Swap(ctx, "count", cur, []byte(strconv.Itoa(v+1)))
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(dir + "/count")
	if err != nil || string(b) != strconv.Itoa(n*each) {
		t.Fatalf("count = %q, %v; want %d", b, err, n*each)
	}
	if err := d.Save(ctx, "count", []byte("x")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	if st, _ := os.Stat(dir + "/count"); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
