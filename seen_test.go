package rushgate

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// TestSeen: an entity found over is due again a minute later, one found live or woken at once, and
// the memory of entities no longer read (deleted on another instance) does not grow without end.
func TestSeen(t *testing.T) {
	var s Seen[int]
	t0 := time.Now()
	if !s.Due("a", t0) {
		t.Fatal("an entity never read is not due")
	}
	s.Saw("a", 1, true, t0)
	if s.Due("a", t0.Add(QuietEvery-time.Second)) || !s.Due("a", t0.Add(QuietEvery)) {
		t.Fatal("an entity found over is not due exactly a minute later")
	}
	s.Saw("a", 1, false, t0.Add(time.Second))
	if !s.Due("a", t0.Add(2*time.Second)) {
		t.Fatal("an entity found live again is not due every second")
	}
	s.Saw("a", 1, true, t0)
	s.Wake("a")
	if !s.Due("a", t0.Add(time.Second)) {
		t.Fatal("a woken entity is not due")
	}
	// A change that wakes it while the sampler reads it: the read may predate the change, so the
	// entity is read again at the next second rather than a minute later, and then quiets again.
	s.Saw("c", 1, false, t0)
	s.Wake("c") // after the sampler's read of c, before its Saw
	s.Saw("c", 1, true, t0.Add(time.Second))
	if !s.Due("c", t0.Add(2*time.Second)) {
		t.Fatal("an entity woken during its read is not read again at the next second")
	}
	s.Saw("c", 1, true, t0.Add(2*time.Second))
	if s.Due("c", t0.Add(3*time.Second)) {
		t.Fatal("an entity found over twice, not woken between, is still due every second")
	}
	for i := range 1000 { // ended, then deleted elsewhere: never read again
		s.Saw(fmt.Sprint("gone", i), i, true, t0)
	}
	later := t0.Add(3 * QuietEvery)
	s.Saw("b", 2, true, later)
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d entities remembered after the others went unread for two minutes, want 1", n)
	}
}

// TestSeenEach: Each reports what was last read of each entity, an entity over only for SeenKeep
// after it was first found over (later reads of it over do not restart that hour), and nothing of an
// entity forgotten or not read for two minutes.
func TestSeenEach(t *testing.T) {
	var s Seen[int]
	t0 := time.Now()
	each := func(now time.Time) map[string]int {
		got := map[string]int{}
		s.Each(now, func(id string, v int) { got[id] = v })
		return got
	}
	s.Saw("live", 1, false, t0)
	s.Saw("ended", 5, true, t0)
	s.Saw("gone", 7, false, t0)
	s.Forget("gone")
	s.Saw("live", 2, false, t0.Add(time.Second))
	if got := each(t0.Add(time.Second)); !maps.Equal(got, map[string]int{"live": 2, "ended": 5}) {
		t.Fatalf("each: %v", got)
	}
	// The sampler reads the ended entity once a minute, and live keeps being read every second.
	at := t0
	for at.Sub(t0) <= SeenKeep {
		at = at.Add(QuietEvery)
		s.Saw("ended", 5, true, at)
		s.Saw("live", 3, false, at)
	}
	if got := slices.Collect(maps.Keys(each(at))); !slices.Equal(got, []string{"live"}) {
		t.Fatalf("an hour after it was first found over, each still names %v", got)
	}
	s.Saw("ended", 6, false, at) // reopened: reported again
	if got := each(at); got["ended"] != 6 {
		t.Fatalf("a reopened entity: %v", got)
	}
	if got := each(at.Add(2*QuietEvery + time.Second)); len(got) != 0 {
		t.Fatalf("entities not read for two minutes are still reported: %v", got)
	}
}
