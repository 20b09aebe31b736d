package rushgate

import (
	"fmt"
	"testing"
	"time"
)

// TestQuiet: an entity found over is due again a minute later, one found live or woken at once, and
// the memory of entities no longer read (deleted on another instance) does not grow without end.
func TestQuiet(t *testing.T) {
	var q Quiet
	t0 := time.Now()
	if !q.Due("a", t0) {
		t.Fatal("an entity never read is not due")
	}
	q.Saw("a", true, t0)
	if q.Due("a", t0.Add(QuietEvery-time.Second)) || !q.Due("a", t0.Add(QuietEvery)) {
		t.Fatal("an entity found over is not due exactly a minute later")
	}
	q.Saw("a", false, t0.Add(time.Second))
	if !q.Due("a", t0.Add(2*time.Second)) {
		t.Fatal("an entity found live again is not due every second")
	}
	q.Saw("a", true, t0)
	q.Wake("a")
	if !q.Due("a", t0.Add(time.Second)) {
		t.Fatal("a woken entity is not due")
	}
	for i := range 1000 { // ended, then deleted elsewhere: never read again
		q.Saw(fmt.Sprint("gone", i), true, t0)
	}
	later := t0.Add(3 * QuietEvery)
	q.Saw("b", true, later)
	n := 0
	q.until.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d entities remembered after the others went unread for two minutes, want 1", n)
	}
}
