package memstore

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

type entry struct {
	score  int64
	member string
}

func compare(a, b entry) int {
	if c := cmp.Compare(a.score, b.score); c != 0 {
		return c
	}
	return cmp.Compare(a.member, b.member)
}

// TestSkiplistAgainstModel drives the skip list and a sorted slice with the same random operations,
// mostly appends at the back as joins are, and compares every rank, count and minimum.
func TestSkiplistAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := newSkiplist()
		var model []entry
		next := int64(0)
		for op := range 3000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(model) == 0: // append at the back
				next += int64(rng.IntN(3))
				e := entry{next, "m" + strconv.Itoa(op)}
				l.insert(e.score, e.member)
				model = append(model, e)
				slices.SortFunc(model, compare)
			case r < 7: // insert anywhere
				e := entry{rng.Int64N(next + 1), "m" + strconv.Itoa(op)}
				l.insert(e.score, e.member)
				model = append(model, e)
				slices.SortFunc(model, compare)
			default: // remove anyone, often the front
				i := 0
				if r == 9 {
					i = rng.IntN(len(model))
				}
				l.remove(model[i].score, model[i].member)
				model = slices.Delete(model, i, i+1)
			}
			if l.length != len(model) {
				t.Fatalf("seed %d op %d: length %d, model %d", seed, op, l.length, len(model))
			}
			if len(model) == 0 {
				if l.min() != nil {
					t.Fatal("min of an empty list")
				}
				continue
			}
			if m := l.min(); m.member != model[0].member {
				t.Fatalf("seed %d op %d: min %s, want %s", seed, op, m.member, model[0].member)
			}
			i := rng.IntN(len(model))
			if got := l.rank(model[i].score, model[i].member); got != i+1 {
				t.Fatalf("seed %d op %d: rank of %v = %d, want %d", seed, op, model[i], got, i+1)
			}
			last := len(model) - 1
			if got := l.rank(model[last].score, model[last].member); got != last+1 {
				t.Fatalf("seed %d op %d: rank of last = %d, want %d", seed, op, got, last+1)
			}
			s := model[i].score
			want, _ := slices.BinarySearchFunc(model, entry{s + 1, ""}, compare)
			if got := l.countAtMost(s); got != want {
				t.Fatalf("seed %d op %d: countAtMost(%d) = %d, want %d", seed, op, s, got, want)
			}
		}
	}
}
