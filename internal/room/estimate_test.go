package room

import (
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

// TestEstimateBounded: a wait computed from a tiny rate, a far opening or a huge position is capped at
// maxETA, never a wrapped or negative duration.
func TestEstimateBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	far := rushgate.MaxTime.Add(-time.Second)
	var e estimator
	for _, c := range []struct {
		name     string
		position int64
		cfg      Config
	}{
		{"slow rate", 1 << 40, Config{Rate: &Rate{Admits: 1, Per: rushgate.Duration(rushgate.MaxDuration)}}},
		{"far opening", 1, Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Minute), OpensAt: &far}},
		{"both", 1 << 62, Config{Capacity: 1, SessionTTL: rushgate.Duration(rushgate.MaxDuration), OpensAt: &far}},
	} {
		if got := e.estimate(now, c.position, c.cfg); got != maxETA {
			t.Errorf("%s: %v, want the cap %v", c.name, got, maxETA)
		}
	}
	if got := e.estimate(now, 10, Config{Capacity: 5, SessionTTL: rushgate.Duration(time.Minute)}); got != 2*time.Minute {
		t.Errorf("10 behind 5 slots of a minute: %v, want 2m", got)
	}
}
