package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/rushgate/rushgate/internal/keyring"
)

// runVault checks a keeper of secrets ([keyring.Vault]): a secret is created once and then read back,
// a swap replaces it only if it still holds what the caller read, and keyrings rotating through the
// vault at once, as instances do, lose no key.
func runVault(t *testing.T, v keyring.Vault) {
	t.Run("LoadOrCreate", func(t *testing.T) {
		calls := 0
		create := func() ([]byte, error) { calls++; return []byte("s3cret"), nil }
		got, created, err := v.LoadOrCreate(ctx, "x", create)
		if err != nil || !created || string(got) != "s3cret" {
			t.Fatalf("first: %q %v %v", got, created, err)
		}
		got, created, err = v.LoadOrCreate(ctx, "x", create)
		if err != nil || created || string(got) != "s3cret" || calls != 1 {
			t.Fatalf("second: %q %v %v (create called %d times)", got, created, err, calls)
		}
	})
	t.Run("Swap", func(t *testing.T) {
		if _, _, err := v.LoadOrCreate(ctx, "y", func() ([]byte, error) { return []byte("one"), nil }); err != nil {
			t.Fatal(err)
		}
		if ok, err := v.Swap(ctx, "y", []byte("stale"), []byte("two")); ok || err != nil {
			t.Fatalf("swap from a stale value: %v %v", ok, err)
		}
		if ok, err := v.Swap(ctx, "y", []byte("one"), []byte("two")); !ok || err != nil {
			t.Fatalf("swap from the current value: %v %v", ok, err)
		}
		got, _, err := v.LoadOrCreate(ctx, "y", nil)
		if err != nil || string(got) != "two" {
			t.Fatalf("after swap: %q %v", got, err)
		}
	})
	t.Run("ConcurrentRotations", func(t *testing.T) {
		rings := make([]*keyring.Keyring, 3)
		for i := range rings {
			kr, err := keyring.Open(ctx, v, keyring.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rings[i] = kr
		}
		var mu sync.Mutex
		var made []string
		for _, k := range rings[0].KeySet().Keys {
			made = append(made, k.Kid)
		}
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				kid, _, err := rings[i%3].Rotate(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				made = append(made, kid)
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, kr := range rings {
			if err := kr.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range kr.KeySet().Keys {
				got = append(got, k.Kid)
			}
			slices.Sort(got)
			slices.Sort(made)
			if !slices.Equal(got, made) {
				t.Fatalf("keys %v, want every key made: %v", got, made)
			}
		}
	})
}
