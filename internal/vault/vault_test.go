package vault

import (
	"context"
	"testing"
)

func TestDir(t *testing.T) {
	d := Dir(t.TempDir())
	ctx := context.Background()
	calls := 0
	create := func() ([]byte, error) { calls++; return []byte("s3cret"), nil }
	got, created, err := d.LoadOrCreate(ctx, "x", create)
	if err != nil || !created || string(got) != "s3cret" {
		t.Fatalf("first: %q %v %v", got, created, err)
	}
	got, created, err = d.LoadOrCreate(ctx, "x", create)
	if err != nil || created || string(got) != "s3cret" || calls != 1 {
		t.Fatalf("second: %q %v %v (create called %d times)", got, created, err, calls)
	}
	if err := d.Save(ctx, "x", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := d.LoadOrCreate(ctx, "x", create); string(got) != "new" {
		t.Fatalf("after save: %q", got)
	}
}
