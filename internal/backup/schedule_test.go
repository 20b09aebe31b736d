package backup_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/room"
)

// outcomes collects what a Backups tells of each backup.
type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) observe(outcome string, _ time.Time) {
	o.mu.Lock()
	o.got = append(o.got, outcome)
	o.mu.Unlock()
}

func (o *outcomes) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// TestBackupsOneAtATime: a backup asked for while another is taken waits for it, and is refused with
// ErrRunning (no outcome) if its caller stops waiting first; taken and failed ones are told.
func TestBackupsOneAtATime(t *testing.T) {
	started, release := make(chan struct{}, 4), make(chan struct{})
	var fail error
	var o outcomes
	b := backup.New(backup.Source{Dir: t.TempDir(), Lines: func(w io.Writer) error {
		if fail != nil {
			return fail
		}
		started <- struct{}{}
		<-release
		_, err := w.Write([]byte("the lines"))
		return err
	}}, o.observe)
	done := make(chan error)
	go func() { done <- b.Backup(context.Background(), io.Discard) }()
	<-started
	// A second waits for the first while its caller does, then is refused; a third, asked for
	// meanwhile, is taken once the first is done.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.Backup(short, io.Discard); !errors.Is(err, backup.ErrRunning) {
		t.Errorf("a second backup at once: %v", err)
	}
	third := make(chan error)
	go func() { third <- b.Backup(context.Background(), io.Discard) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-started:
		t.Fatal("a backup started while another was taken")
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatalf("the backup that waited: %v", err)
	}
	fail = errors.New("disk full")
	if err := b.Backup(context.Background(), io.Discard); !errors.Is(err, fail) {
		t.Errorf("a failing backup: %v", err)
	}
	if got := o.all(); !slices.Equal(got, []string{"taken", "taken", "failed"}) {
		t.Errorf("told %v", got)
	}
	if st := b.Status(); st.LastTaken.IsZero() || st.LastFailed.Before(st.LastTaken) || !strings.HasSuffix(st.Failure, "disk full") || st.Dir != "" || st.Kept != nil {
		t.Errorf("status %+v", st)
	}
}

// TestKeepWaitsForADownload: a kept backup due while a download is taken waits for it, and then is
// kept, rather than failing and waiting ten minutes for its next try.
func TestKeepWaitsForADownload(t *testing.T) {
	src := source(t)
	lines := src.Lines
	started, release := make(chan struct{}, 1), make(chan struct{})
	var held atomic.Bool
	held.Store(true)
	src.Lines = func(w io.Writer) error {
		if held.CompareAndSwap(true, false) { // the download
			started <- struct{}{}
			<-release
		}
		return lines(w)
	}
	var o outcomes
	b := backup.New(src, o.observe)
	downloaded := make(chan error)
	go func() { downloaded <- b.Backup(context.Background(), io.Discard) }()
	<-started
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Keep(ctx, backup.Schedule{Dir: out, Every: time.Hour, Keep: 2, Log: slog.New(slog.DiscardHandler)})
	}()
	time.Sleep(100 * time.Millisecond) // the kept one is due at once, and waits
	close(release)
	if err := <-downloaded; err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); len(o.all()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("told %v in 10 s", o.all())
		}
	}
	cancel()
	<-stopped
	if got := o.all(); !slices.Equal(got, []string{"taken", "taken"}) || len(b.Status().Kept) != 1 {
		t.Fatalf("told %v, kept %v", got, b.Status().Kept)
	}
}

// cutAfter is a download whose client goes away after n bytes.
type cutAfter struct{ n int }

func (c *cutAfter) Write(p []byte) (int, error) {
	if len(p) > c.n {
		n := c.n
		c.n = 0
		return n, errors.New("write: broken pipe")
	}
	c.n -= len(p)
	return len(p), nil
}

// TestBackupAbandoned: a download its client stops taking, or whose request ends, is abandoned, not
// failed: the status keeps no failure, and the alerts on failures hear nothing. A plain and a sealed
// one alike.
func TestBackupAbandoned(t *testing.T) {
	_, to := key(t)
	for _, sealed := range []bool{false, true} {
		var o outcomes
		var recipients []age.Recipient
		if sealed {
			recipients = to
		}
		b := backup.New(source(t), o.observe, recipients...)
		if err := b.Backup(context.Background(), &cutAfter{n: 100}); !errors.Is(err, backup.ErrAbandoned) {
			t.Fatalf("sealed %v, cut after 100 bytes: %v", sealed, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.Backup(ctx, io.Discard); !errors.Is(err, backup.ErrAbandoned) {
			t.Fatalf("sealed %v, its request over: %v", sealed, err)
		}
		if got := o.all(); !slices.Equal(got, []string{"abandoned", "abandoned"}) {
			t.Fatalf("sealed %v: told %v", sealed, got)
		}
		if st := b.Status(); !st.LastFailed.IsZero() || st.Failure != "" || !st.LastTaken.IsZero() {
			t.Fatalf("sealed %v: status %+v", sealed, st)
		}
		if err := b.Backup(context.Background(), io.Discard); err != nil {
			t.Fatal(err)
		}
		if got := o.all(); got[2] != "taken" {
			t.Fatalf("told %v", got)
		}
	}
}

// source returns the Source of an embedded backend with a room and one visitor in line.
func source(t *testing.T) backup.Source {
	dir := t.TempDir()
	db, b := open(t, dir)
	ctx := context.Background()
	if err := b.Rooms().PutRoom(ctx, "r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Rooms().Join(ctx, "r", room.Entrant{Visitor: "v", New: true}); err != nil {
		t.Fatal(err)
	}
	return backup.Source{Dir: dir, Record: db, Lines: b.Rooms().Save, Secrets: true}
}

// hourly is a clock for names that moves an hour at each look, and remembers the names it gave.
type hourly struct {
	mu    sync.Mutex
	at    time.Time
	names []string
}

func (h *hourly) now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = h.at.Add(time.Hour)
	h.names = append(h.names, "rushgate-backup-"+h.at.Format("20060102T150405Z")+".tar.gz")
	return h.at
}

// TestKeep: on a schedule, backups land in their directory whole and checked, the newest Keep of
// them stay, and files that are not the schedule's are left alone but for what a crash left of one
// being written.
func TestKeep(t *testing.T) {
	out := t.TempDir()
	for name, body := range map[string]string{"notes.txt": "the operator's", ".rushgate-backup-123": "half an archive"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(out, ".rushgate-backup-check-123", "data"), 0o700); err != nil { // a check cut short
		t.Fatal(err)
	}
	var o outcomes
	b := backup.New(source(t), o.observe)
	clock := &hourly{at: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Keep(ctx, backup.Schedule{Dir: out, Every: 20 * time.Millisecond, Keep: 2, Log: slog.New(slog.DiscardHandler), Now: clock.now})
	}()
	for start := time.Now(); len(o.all()) < 4; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("kept %v in 20 s", o.all())
		}
	}
	cancel()
	<-stopped
	if got := o.all(); slices.Contains(got, "failed") {
		t.Fatalf("told %v", got)
	}
	clock.mu.Lock()
	want := append([]string{"notes.txt"}, clock.names[len(clock.names)-2:]...)
	clock.mu.Unlock()
	slices.Sort(want)
	if got := entries(t, out); !slices.Equal(got, want) {
		t.Fatalf("the directory holds %v, want %v", got, want)
	}
	st := b.Status()
	if st.Dir != out || st.Every != 20*time.Millisecond || len(st.Kept) != 2 || st.Kept[0].Name != want[2] || st.Kept[1].Name != want[1] ||
		st.Kept[0].Size == 0 || st.LastTaken.IsZero() || !st.LastFailed.IsZero() {
		t.Errorf("status %+v, kept %v", st, want)
	}
	for _, name := range want {
		if !strings.HasSuffix(name, ".tar.gz") {
			continue
		}
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := backup.Check(context.Background(), f)
		f.Close()
		if err != nil || got.Lines == nil || got.Lines.Waiting != 1 || got.Record == nil || got.Record.Rooms != 1 {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
}

// TestKeepAfterARestart: the first backup of a schedule comes once the newest one already kept is
// Every old, so that a restart neither takes one early nor puts the next one off.
func TestKeepAfterARestart(t *testing.T) {
	for _, c := range []struct {
		age  time.Duration
		want bool
	}{{time.Minute, false}, {2 * time.Hour, true}} {
		out := t.TempDir()
		old := filepath.Join(out, "rushgate-backup-20261201T000000Z.tar.gz")
		if err := os.WriteFile(old, backedUp(t), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-c.age)
		if err := os.Chtimes(old, at, at); err != nil {
			t.Fatal(err)
		}
		var o outcomes
		b := backup.New(source(t), o.observe)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		b.Keep(ctx, backup.Schedule{Dir: out, Every: time.Hour, Keep: 3, Log: slog.New(slog.DiscardHandler)})
		cancel()
		if got := o.all(); (len(got) > 0) != c.want || len(entries(t, out)) != 1+len(got) {
			t.Errorf("the newest kept %v ago: told %v, the directory holds %v", c.age, got, entries(t, out))
		}
	}
}

// TestKeepRefusesTheDataDirectory: backups kept among the files a backup copies would be copied into
// the next ones.
func TestKeepRefusesTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := backup.CheckDir(dir+"/.", dir); err == nil {
		t.Error("the data directory taken to keep backups in")
	}
	if err := backup.CheckDir(filepath.Join(dir, "backups"), dir); err != nil {
		t.Errorf("a directory inside the data directory: %v", err)
	}
}
