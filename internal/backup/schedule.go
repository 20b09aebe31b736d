package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"filippo.io/age"
)

// ErrRunning says that a backup of the data directory is being taken already: one at a time, since
// each clears away what an earlier one left of its working files.
var ErrRunning = errors.New("backup: a backup is being taken")

// ErrAbandoned says that the receiver of a backup stopped taking it (a download whose client went
// away): not a failure of the backup, which the status and the alerts on failures leave out.
var ErrAbandoned = errors.New("backup: its receiver stopped taking it")

// Backups takes the backups of one data directory, asked for over HTTP or kept on a schedule, one at a
// time, and tells each one's outcome.
type Backups struct {
	src     Source
	observe func(outcome string, at time.Time)
	to      []age.Recipient // sealed to them; none: plain archives
	busy    chan struct{}   // holds a token while a backup is taken

	// Wait is how long Backup waits for a backup being taken to end before it says ErrRunning; New
	// sets WaitForRunning. Change it before the first backup.
	Wait time.Duration

	mu     sync.Mutex
	status Status // but Kept and Encrypted, found when asked
}

// Status is what an operator sees of the backups: the last taken and the last that failed, whether
// asked for or kept, and what the schedule keeps.
type Status struct {
	LastTaken  time.Time // zero when none was, since the start
	LastFailed time.Time
	Failure    string        // why the last that failed did
	Dir        string        // where the schedule keeps them; "" without one
	Every      time.Duration // how often
	Kept       []Archive     // the schedule's archives in Dir, the newest first
	Encrypted  bool          // whether backups are sealed to recipients (age files)
}

// Archive is one archive a schedule kept.
type Archive struct {
	Name    string
	Size    int64
	TakenAt time.Time
}

// New returns the backups of src. observe, when set, hears the outcome of each, "taken", "failed" or
// "abandoned" (see ErrAbandoned), and when it ended: what the metrics count, and the alert on backups
// that stopped reads. With recipients every backup, downloaded or kept, is sealed to them.
func New(src Source, observe func(outcome string, at time.Time), to ...age.Recipient) *Backups {
	return &Backups{src: src, observe: observe, to: to, busy: make(chan struct{}, 1), Wait: WaitForRunning}
}

// WaitForRunning is how long a backup asked for waits for one being taken to end: a nightly download
// that meets a kept backup (which takes a second or so) gets its own after it, rather than a refusal.
const WaitForRunning = time.Minute

// Backup writes an archive of the data directory to w, as [Take], sealed when New was given
// recipients. While another is taken it waits for it, up to b.Wait and while ctx lasts; then
// ErrRunning.
func (b *Backups) Backup(ctx context.Context, w io.Writer) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-b.busy }()
	to := &receiver{w: w}
	err := b.take(ctx, to)
	if err != nil && (to.err != nil || ctx.Err() != nil) {
		if b.observe != nil {
			b.observe("abandoned", time.Now())
		}
		return fmt.Errorf("%w: %w", ErrAbandoned, err)
	}
	b.tell(err)
	return err
}

// acquire takes the one backup's turn, waiting up to b.Wait, while ctx lasts, for a backup being
// taken.
func (b *Backups) acquire(ctx context.Context) error {
	select {
	case b.busy <- struct{}{}: // free: taken even with ctx done, whose backup then says it was abandoned
		return nil
	default:
	}
	wait := time.NewTimer(b.Wait)
	defer wait.Stop()
	select {
	case b.busy <- struct{}{}:
		return nil
	case <-wait.C:
		return ErrRunning
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrRunning, ctx.Err())
	}
}

// receiver keeps the first error of the writer a backup is taken to, which is the receiver's failing
// rather than the backup's.
type receiver struct {
	w   io.Writer
	err error
}

func (r *receiver) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// take writes an archive to w, sealed when there are recipients.
func (b *Backups) take(ctx context.Context, w io.Writer) error {
	if len(b.to) == 0 {
		return Take(ctx, w, b.src)
	}
	s := &sealed{w: w, to: b.to}
	if err := Take(ctx, s, b.src); err != nil {
		return err
	}
	return s.Close()
}

func (b *Backups) tell(err error) {
	now := time.Now()
	b.mu.Lock()
	if err == nil {
		b.status.LastTaken = now
	} else {
		b.status.LastFailed, b.status.Failure = now, err.Error()
	}
	b.mu.Unlock()
	if b.observe == nil {
		return
	}
	outcome := "taken"
	if err != nil {
		outcome = "failed"
	}
	b.observe(outcome, now)
}

// Sealed reports whether backups are sealed to recipients (age files).
func (b *Backups) Sealed() bool { return len(b.to) > 0 }

// Status says how the backups went, and lists what the schedule keeps.
func (b *Backups) Status() Status {
	b.mu.Lock()
	st := b.status
	b.mu.Unlock()
	st.Encrypted = b.Sealed()
	if st.Dir == "" {
		return st
	}
	names := archives(st.Dir)
	for i := len(names) - 1; i >= 0; i-- {
		if fi, err := os.Stat(filepath.Join(st.Dir, names[i])); err == nil {
			st.Kept = append(st.Kept, Archive{Name: names[i], Size: fi.Size(), TakenAt: fi.ModTime()})
		}
	}
	return st
}

// Schedule says where and how often [Backups.Keep] keeps backups.
type Schedule struct {
	Dir   string           // where the archives go: not the data directory, whose files a backup copies
	Every time.Duration    // how often
	Keep  int              // how many of the newest archives stay; older ones are removed
	Log   *slog.Logger     // hears of each; nil means slog.Default()
	Now   func() time.Time // names the archives; nil means time.Now
}

// keptNames matches the archives of a schedule, plain or sealed, which sort by the time they were taken.
const keptNames = "rushgate-backup-*.tar.gz*"

// Keep takes a backup into s.Dir every s.Every until ctx ends. The first comes once the newest archive
// already there is s.Every old, at once if there is none, so that restarts do not put backups off.
// Each is written aside, synced, read through as a restore would ([Check], in s.Dir), and only then
// renamed into place; then all but the newest s.Keep are removed. One that finds a download under way
// waits for it, as a download waits for a kept one (up to WaitForRunning); one that fails is tried
// again within ten minutes.
func (b *Backups) Keep(ctx context.Context, s Schedule) {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	b.mu.Lock()
	b.status.Dir, b.status.Every = s.Dir, s.Every
	b.mu.Unlock()
	stale, _ := filepath.Glob(filepath.Join(s.Dir, ".rushgate-backup-*"))
	for _, p := range stale {
		os.RemoveAll(p) // what a crash left of one being written or checked
	}
	wait := time.Duration(0)
	if names := archives(s.Dir); len(names) > 0 {
		if st, err := os.Stat(filepath.Join(s.Dir, names[len(names)-1])); err == nil {
			wait = max(0, time.Until(st.ModTime().Add(s.Every)))
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		began := time.Now()
		name, size, err := b.keepOne(ctx, s)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.Log.Warn("backup: not kept; trying again", "dir", s.Dir, "in", min(s.Every, 10*time.Minute), "err", err)
			timer.Reset(min(s.Every, 10*time.Minute))
			continue
		}
		s.Log.Info("backup kept", "file", filepath.Join(s.Dir, name), "bytes", size, "took", time.Since(began).Round(time.Millisecond))
		if names := archives(s.Dir); len(names) > s.Keep {
			for _, old := range names[:len(names)-s.Keep] {
				if err := os.Remove(filepath.Join(s.Dir, old)); err != nil {
					s.Log.Warn("backup: an old one not removed", "file", old, "err", err)
				}
			}
		}
		timer.Reset(s.Every)
	}
}

// keepOne writes one checked archive into s.Dir and returns its name and size. One to be sealed is
// checked before it is, since the instance cannot open what it seals.
func (b *Backups) keepOne(ctx context.Context, s Schedule) (string, int64, error) {
	if err := b.acquire(ctx); err != nil {
		return "", 0, err
	}
	defer func() { <-b.busy }()
	name := "rushgate-backup-" + s.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
	if len(b.to) > 0 {
		name += ".age"
	}
	var size int64
	err := writeAside(s.Dir, name, func(f *os.File) error {
		if len(b.to) == 0 {
			return b.checked(ctx, f, s.Dir)
		}
		return writeAside(s.Dir, "", func(plain *os.File) error {
			if err := b.checked(ctx, plain, s.Dir); err != nil {
				return err
			}
			if _, err := plain.Seek(0, io.SeekStart); err != nil {
				return err
			}
			w := &sealed{w: f, to: b.to}
			_, err := io.Copy(w, plain)
			return errors.Join(err, w.Close())
		})
	})
	if err == nil {
		if fi, serr := os.Stat(filepath.Join(s.Dir, name)); serr == nil {
			size = fi.Size()
		}
		err = syncDir(s.Dir)
	}
	if ctx.Err() == nil {
		b.tell(err)
	}
	return name, size, err
}

// checked writes a plain archive to f and reads it back as a restore would, unpacked in dir.
func (b *Backups) checked(ctx context.Context, f *os.File, dir string) error {
	if err := Take(ctx, f, b.src); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil { // synced by writeAside when it is the one kept
		return err
	}
	_, err := checkIn(ctx, f, dir, ".rushgate-backup-check-*")
	return err
}

// writeAside has fill write a new file in dir, hidden until it is whole and synced, then renamed to
// name; one that fails, or has no name to keep (a working file), is removed.
func writeAside(dir, name string, fill func(*os.File) error) error {
	f, err := os.CreateTemp(dir, ".rushgate-backup-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	err = fill(f)
	if err == nil && name != "" {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil && name != "" {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	return err
}

// archives returns the names of a schedule's archives in dir, oldest first.
func archives(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, keptNames))
	names := make([]string, 0, len(paths))
	for _, p := range paths {
		if name := filepath.Base(p); strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tar.gz.age") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// CheckDir refuses a directory to keep backups in that would be copied into them: the data directory
// itself, whose every file a backup copies.
func CheckDir(dir, data string) error {
	a, errA := filepath.Abs(dir)
	b, errB := filepath.Abs(data)
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("backups kept in the data directory would be copied into the next ones: give another directory")
	}
	return nil
}
