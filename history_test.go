package rushgate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

// samples is a History that returns its samples taken after since, or fails with err.
type samples struct {
	rushgate.History
	all []rushgate.Sample
	err error
}

func (s samples) Since(_ context.Context, _ string, since time.Time) ([]rushgate.Sample, error) {
	var out []rushgate.Sample
	for _, x := range s.all {
		if x.At.After(since) {
			out = append(out, x)
		}
	}
	return out, s.err
}

// TestPoints: a point for each sample after since with the sample before it, even the first (read
// from up to a minute before since), none for a pair with too few figures; none and no error without
// a history; the history's error.
func TestPoints(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	h := samples{all: []rushgate.Sample{
		{At: t0.Add(-30 * time.Second), Figures: []int64{0, 7}},
		{At: t0.Add(time.Second), Figures: []int64{10, 7}},
		{At: t0.Add(2 * time.Second), Figures: []int64{30}}, // an older version's: too few
		{At: t0.Add(3 * time.Second), Figures: []int64{40, 9}},
	}}
	rate := func(prev, cur rushgate.Sample) float64 { return rushgate.PerSecond(prev, cur, 0) }
	got, err := rushgate.Points(ctx, h, "e", t0, 2, rate)
	if err != nil || len(got) != 1 || got[0] != 10.0/31 {
		t.Fatalf("points %v %v, want one: 10 in the 31 s since the sample before since", got, err)
	}
	if got, err := rushgate.Points(ctx, nil, "e", t0, 2, rate); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("without a history: %#v %v, want an empty list", got, err)
	}
	h.err = errors.New("down")
	if _, err := rushgate.Points(ctx, h, "e", t0, 2, rate); err == nil {
		t.Fatal("the history's error was lost")
	}
}
