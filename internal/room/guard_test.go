package room

import (
	"testing"
	"time"
)

// TestDifficultyFollowsPressure: a challenge with a max climbs one bit per doubling of the joins per
// second past PressureFrom, up to max; without a max it stays.
func TestDifficultyFollowsPressure(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := &Service{opts: Options{Clock: func() time.Time { return at }}}
	c := &Challenge{Difficulty: 16, Max: 19}
	if d := s.Difficulty("r", c); d != 16 {
		t.Fatalf("quiet: %d", d)
	}
	for _, tc := range []struct{ joins, want int }{{PressureFrom - 1, 16}, {PressureFrom, 17}, {2 * PressureFrom, 18}, {100 * PressureFrom, 19}} {
		p, _ := s.pressure.Load("r")
		pr := p.(*pressure)
		pr.mu.Lock()
		pr.last, pr.count = 0, 0
		at = at.Add(2 * time.Second) // a quiet second between the cases
		pr.mu.Unlock()
		for range tc.joins {
			s.pressed("r")
		}
		if d := s.Difficulty("r", c); d != tc.want {
			t.Errorf("%d joins this second: difficulty %d, want %d", tc.joins, d, tc.want)
		}
	}
	at = at.Add(time.Second) // the last whole second had 6,400 joins
	if d := s.Difficulty("r", c); d != 19 {
		t.Errorf("the second after: %d", d)
	}
	at = at.Add(2 * time.Second)
	if d := s.Difficulty("r", c); d != 16 {
		t.Errorf("quiet again: %d", d)
	}
	if d := s.Difficulty("r", &Challenge{Difficulty: 12}); d != 12 {
		t.Errorf("without max: %d", d)
	}
}
