package backup_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/rushgate/rushgate/internal/backup"
)

// key returns a new identity and the recipients of it.
func key(t testing.TB) ([]age.Identity, []age.Recipient) {
	t.Helper()
	id, rec, err := backup.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := backup.ParseIdentities(strings.NewReader("# a comment, as age-keygen writes\n" + id + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	to, err := backup.ParseRecipients(rec)
	if err != nil {
		t.Fatal(err)
	}
	return ids, to
}

// TestSealed: backups sealed to a recipient are age files that restore with its identity alone; a
// sealed archive changed on the way is refused, and a backup that fails writes no byte.
func TestSealed(t *testing.T) {
	ctx := context.Background()
	ids, to := key(t)
	other, _ := key(t)
	b := backup.New(source(t), nil, to...)
	var archive bytes.Buffer
	if err := b.Backup(ctx, &archive); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(archive.Bytes(), []byte("age-encryption.org/v1\n")) || !b.Status().Encrypted {
		t.Fatalf("a sealed backup begins %q", archive.Bytes()[:min(30, archive.Len())])
	}
	for name, with := range map[string][]age.Identity{"no identity": nil, "another's": other} {
		parent := t.TempDir()
		if _, err := backup.Restore(ctx, bytes.NewReader(archive.Bytes()), filepath.Join(parent, "r"), with...); !errors.Is(err, backup.ErrEncrypted) {
			t.Errorf("restored with %s: %v", name, err)
		}
		if e := entries(t, parent); len(e) > 0 {
			t.Errorf("a refused restore left %v", e)
		}
	}
	got, err := backup.Restore(ctx, bytes.NewReader(archive.Bytes()), filepath.Join(t.TempDir(), "r"), ids...)
	if err != nil || got.Record == nil || got.Record.Rooms != 1 || got.Lines == nil || got.Lines.Waiting != 1 {
		t.Fatalf("restored with the identity: %+v %v", got, err)
	}
	changed := bytes.Clone(archive.Bytes())
	changed[len(changed)-40] ^= 1
	parent := t.TempDir()
	if _, err := backup.Restore(ctx, bytes.NewReader(changed), filepath.Join(parent, "r"), ids...); !errors.Is(err, backup.ErrArchive) {
		t.Errorf("restored a changed archive: %v", err)
	}
	if e := entries(t, parent); len(e) > 0 {
		t.Errorf("a refused restore left %v", e)
	}

	failing := backup.New(backup.Source{Dir: t.TempDir(), Lines: func(io.Writer) error { return errors.New("disk full") }}, nil, to...)
	var none bytes.Buffer
	if err := failing.Backup(ctx, &none); err == nil || none.Len() != 0 {
		t.Errorf("a failing sealed backup: %v, %d bytes written", err, none.Len())
	}
}

// TestKeepSealed: a schedule with recipients keeps age files only, checked before they were sealed,
// with nothing of the plain archive left beside them.
func TestKeepSealed(t *testing.T) {
	ids, to := key(t)
	out := t.TempDir()
	var o outcomes
	b := backup.New(source(t), o.observe, to...)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Keep(ctx, backup.Schedule{Dir: out, Every: time.Hour, Keep: 2, Log: slog.New(slog.DiscardHandler)})
	}()
	for start := time.Now(); len(o.all()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("nothing kept in 20 s")
		}
	}
	cancel()
	<-stopped
	names := entries(t, out)
	if len(names) != 1 || !strings.HasSuffix(names[0], ".tar.gz.age") || o.all()[0] != "taken" {
		t.Fatalf("kept %v, told %v", names, o.all())
	}
	if st := b.Status(); len(st.Kept) != 1 || st.Kept[0].Name != names[0] || !st.Encrypted {
		t.Errorf("status %+v", st)
	}
	f, err := os.Open(filepath.Join(out, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := backup.Check(context.Background(), f, ids...); err != nil || got.Record == nil || got.Record.Rooms != 1 {
		t.Errorf("checked %s: %+v %v", names[0], got, err)
	}
}

// TestRecipientsRefused: what is not an age public key is refused as a recipient, a secret key above
// all, whose holder would seal backups to itself while it leaks.
func TestRecipientsRefused(t *testing.T) {
	id, rec, err := backup.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "not a key", id, rec + ",nope"} {
		if _, err := backup.ParseRecipients(bad); err == nil {
			t.Errorf("recipients %q taken", bad)
		}
	}
	if to, err := backup.ParseRecipients(rec + ", " + rec); err != nil || len(to) != 2 {
		t.Errorf("two recipients: %v %v", to, err)
	}
	// A post-quantum key may not be mixed with classic ones: refused at once, not at the first backup.
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.ParseRecipients(pq.Recipient().String()); err != nil {
		t.Errorf("a post-quantum recipient: %v", err)
	}
	if _, err := backup.ParseRecipients(pq.Recipient().String() + "," + rec); err == nil {
		t.Error("a post-quantum recipient mixed with a classic one taken")
	}
}
