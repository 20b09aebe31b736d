package memstore

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modelWaiter is the line's reference model: a plain slice kept in line order.
type modelWaiter struct {
	id   string
	pre  bool
	draw int64
	seq  int
	seen int64
}

func modelLess(a, b modelWaiter) int {
	switch {
	case a.pre != b.pre:
		if a.pre {
			return -1
		}
		return 1
	case a.pre && a.draw != b.draw:
		return int(a.draw - b.draw)
	case a.pre:
		return strings.Compare(a.id, b.id)
	}
	return a.seq - b.seq
}

// TestLineAgainstModel drives a line and a sorted slice with the same random joins (mostly arrivals,
// some into the pre-queue, some with ids too long to hold inline), leaves, presence and admissions from
// the front, through enough churn to compact the arrival order many times, and compares every position,
// the front, the idlest waiter and the length after each step.
func TestLineAgainstModel(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 11))
		idx := newIndex()
		l, other := newLine(idx, 1), newLine(idx, 2)
		var model []modelWaiter
		seq, now, next := 0, int64(0), 0
		for step := range 20000 {
			now += int64(rng.IntN(3))
			switch op := rng.IntN(100); {
			case op < 45 || len(model) == 0:
				next++
				id := "v" + strconv.Itoa(next)
				if rng.IntN(10) == 0 {
					id += strings.Repeat("x", 40) // held by digest
				}
				pre := rng.IntN(8) == 0
				draw := rng.Int64N(1000)
				seq++
				k := keyOf(id)
				l.add(id, &k, now, pre, draw)
				model = append(model, modelWaiter{id: id, pre: pre, draw: draw, seq: seq, seen: now})
				slices.SortStableFunc(model, modelLess)
			case op < 55:
				k := rng.IntN(len(model))
				i, ok := find(&l, model[k].id)
				if !ok {
					t.Fatalf("seed %d step %d: %s not found", seed, step, model[k].id)
				}
				l.remove(i)
				model = slices.Delete(model, k, k+1)
			case op < 60: // joins another room, which moves it out of this line
				k := rng.IntN(len(model))
				key := keyOf(model[k].id)
				_, prev, moved := other.add(model[k].id, &key, now, false, 0)
				if !moved || prev.room != 1 {
					t.Fatalf("seed %d step %d: moving %s found no place in the first line", seed, step, model[k].id)
				}
				l.moved(prev.slot, &key)
				model = slices.Delete(model, k, k+1)
			case op < 80:
				k := rng.IntN(len(model))
				i, _ := find(&l, model[k].id)
				l.touch(i, now)
				model[k].seen = now
			default:
				i, ok := l.front()
				if !ok || l.id(i) != model[0].id {
					t.Fatalf("seed %d step %d: front = %v %q, want %q", seed, step, ok, l.id(i), model[0].id)
				}
				l.remove(i)
				model = model[1:]
			}
			checkLine(t, &l, model, seed, step)
		}
	}
}

func find(l *line, id string) (int32, bool) {
	k := keyOf(id)
	return l.find(&k)
}

// TestLineSkipsStaleWaiters checks that a visitor who has joined another room, but whose old waiter
// is not yet taken out, is neither found, admitted nor reported idle by its old line.
func TestLineSkipsStaleWaiters(t *testing.T) {
	idx := newIndex()
	a, b := newLine(idx, 1), newLine(idx, 2)
	for i, id := range []string{"x", "y", "z"} {
		k := keyOf(id)
		a.add(id, &k, int64(i), false, 0)
	}
	k := keyOf("x")
	if _, prev, moved := b.add("x", &k, 10, false, 0); !moved || prev != (place{1, 0}) {
		t.Fatalf("moved = %v from %v", moved, prev)
	}
	if _, ok := find(&a, "x"); ok {
		t.Fatal("the old line still finds a visitor who moved")
	}
	if i, seen, ok := a.idlest(); !ok || a.id(i) != "y" || seen != 1 {
		t.Fatalf("idlest = %q %d %v, want y", a.id(i), seen, ok)
	}
	if i, ok := a.front(); !ok || a.id(i) != "y" {
		t.Fatalf("front = %q %v, want y", a.id(i), ok)
	}
	if a.Len() != 2 {
		t.Fatalf("Len = %d after the stale waiter was skipped, want 2", a.Len())
	}
	a.moved(0, &k) // late clean-up: the waiter is gone already, nothing happens
	if a.Len() != 2 || b.Len() != 1 {
		t.Fatalf("Len = %d and %d", a.Len(), b.Len())
	}
	if i, ok := find(&b, "x"); !ok || b.position(i) != 1 {
		t.Fatal("the visitor lost its new place")
	}
}

func checkLine(t *testing.T, l *line, model []modelWaiter, seed uint64, step int) {
	t.Helper()
	if l.Len() != len(model) {
		t.Fatalf("seed %d step %d: Len = %d, want %d", seed, step, l.Len(), len(model))
	}
	idlest := -1
	for k, w := range model {
		if idlest < 0 || w.seen < model[idlest].seen {
			idlest = k
		}
	}
	if i, seen, ok := l.idlest(); ok != (idlest >= 0) || ok && seen != model[idlest].seen {
		t.Fatalf("seed %d step %d: idlest = %d %d %v, want seen %d", seed, step, i, seen, ok, model[idlest].seen)
	}
	if step%97 != 0 {
		return
	}
	for k, w := range model {
		i, ok := find(l, w.id)
		if !ok || l.id(i) != w.id {
			t.Fatalf("seed %d step %d: %s lost", seed, step, w.id)
		}
		if got := l.position(i); got != int64(k+1) {
			t.Fatalf("seed %d step %d: position of %s = %d, want %d", seed, step, w.id, got, k+1)
		}
	}
}

// TestFenwickPush checks that a tree built by appends answers like one built at once.
func TestFenwickPush(t *testing.T) {
	var f fenwick
	var want []int32
	for i := range 3000 {
		v := int32(i%3) - 1
		f.push(v)
		want = append(want, v)
	}
	var sum int32
	for i, v := range want {
		sum += v
		if got := f.sum(i + 1); got != sum {
			t.Fatalf("sum(%d) = %d, want %d", i+1, got, sum)
		}
	}
	f.reset(1500)
	for i := 1; i <= 1500; i++ {
		if got := f.sum(i); got != int32(i) {
			t.Fatalf("after reset sum(%d) = %d", i, got)
		}
	}
}
