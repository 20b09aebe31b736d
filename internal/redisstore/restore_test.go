package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestRestoreWaitsForTheOneUnderWay: a restore of a drop while another one holds it waits rather
// than clearing the other's pieces (racing restores used to clear each other until all gave up), then
// finds the drop restored; and a holder that died lets the next restore take over once its hold
// lapses.
func TestRestoreWaitsForTheOneUnderWay(t *testing.T) {
	rdb := redistest.Client(t, redistest.Shared(t))
	d := New(rdb, Options{Prefix: redistest.Prefix("restorehold")}).Drops()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	cfg := drop.Config{Stock: 10, PerVisitor: 1, OpensAt: now.Add(-time.Minute)}
	claims := make([]drop.Claim, 3)
	var piece []string
	for i := range claims {
		seq := int64(i + 1)
		claims[i] = drop.Claim{Seq: seq, ID: drop.ClaimID("d", seq), Code: fmt.Sprint("C", seq), Visitor: fmt.Sprint("v", seq), ClaimedAt: now}
		piece = append(piece, itoa(seq), claims[i].ID, claims[i].Code, claims[i].Visitor, itoa(now.UnixMilli()), "")
	}
	keys := append(d.keys.drop("d"), d.keys.restoring("drop:d"))
	other := func(args ...string) error { return d.runCode(ctx, dropRestScript, keys, &dropErrors, args...) }

	// Another restore has sent its first piece: two of the three claims.
	if err := other(append([]string{"first", "other"}, piece[:12]...)...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Restore(ctx, "d", cfg, claims) }()
	select {
	case err := <-done:
		t.Fatalf("a restore while another holds the drop returned at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n, err := rdb.Do(ctx, rdb.B().Xlen().Key(keys[1]).Build()).AsInt64(); err != nil || n != 2 {
		t.Fatalf("the holder's pieces: %d claims (%v), want its 2", n, err)
	}
	args, err := configArgs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := other(append([]string{"more", "other"}, piece[12:]...)...); err != nil {
		t.Fatal(err)
	}
	if err := other(append([]string{"last", "other", "3"}, args...)...); err != nil {
		t.Fatalf("the holder's last call: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, drop.ErrStarted) {
			t.Fatalf("the waiting restore: %v, want it to find the drop restored", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting restore still waits after the holder finished")
	}
	if info, err := d.Get(ctx, "d"); err != nil || info.Claimed != 3 {
		t.Fatalf("the drop: %+v %v", info, err)
	}

	// A holder that dies: its hold lapses (here at once) and the next restore takes over.
	keys = append(d.keys.drop("e"), d.keys.restoring("drop:e"))
	if err := other("first", "dead"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, rdb.B().Pexpire().Key(keys[5]).Milliseconds(200).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		claims[i].ID = drop.ClaimID("e", claims[i].Seq)
	}
	if err := d.Restore(ctx, "e", cfg, claims); err != nil {
		t.Fatalf("a restore after a dead holder's hold lapsed: %v", err)
	}
	if info, err := d.Get(ctx, "e"); err != nil || info.Claimed != 3 {
		t.Fatalf("the drop restored after the dead holder: %+v %v", info, err)
	}
}
