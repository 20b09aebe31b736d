package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// TestReleasedSweepsInBulk: the releases whose tokens expired are dropped as the map grows, those that
// run are kept, and the sweeps are few however many releases are live.
func TestReleasedSweepsInBulk(t *testing.T) {
	var r released
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	for i := range 5000 {
		r.add(fmt.Sprint("old.", i), past)
	}
	sweeps := 0
	for i := range 50000 {
		before := r.sweepAt
		r.add(fmt.Sprint("live.", i), future)
		if r.sweepAt != before {
			sweeps++
		}
	}
	if !r.has("live.0") || !r.has("live.49999") {
		t.Fatal("a live release was dropped")
	}
	if r.has("old.4999") || len(r.ids) != 50000 {
		t.Fatalf("%d entries kept, want the 50,000 live ones alone", len(r.ids))
	}
	if sweeps > 10 { // doubling from 1,024 to 50,000 and more takes a handful
		t.Fatalf("%d sweeps for 50,000 live releases; a sweep at every add is quadratic", sweeps)
	}
}

// BenchmarkReleasedAdd is an add among 100,000 live releases: a constant, not a scan of them.
func BenchmarkReleasedAdd(b *testing.B) {
	var r released
	future := time.Now().Add(time.Hour)
	for i := range 100000 {
		r.add(fmt.Sprint("live.", i), future)
	}
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprint("more.", i)
	}
	for i := 0; b.Loop(); i++ {
		r.add(ids[i%len(ids)], future)
	}
}
