package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestSlotOf: the slot rushgate computes for a key is the one Redis does (CLUSTER KEYSLOT), hash tags
// and their odd cases included, and each health key lands in the slot it was found for; a prefix
// holding a hash tag of its own keeps the one health key.
func TestSlotOf(t *testing.T) {
	rdb := redistest.Client(t, redistest.SharedCluster(t)...)
	ctx := context.Background()
	keyslot := func(key string) uint16 {
		n, err := rdb.Do(ctx, rdb.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return uint16(n)
	}
	cases := []string{"", "a", "rg:health", "{room:sale}:meta", "rg:{drop:d}:claims", "{}", "a{}b", "{}{a}", "{a",
		"a}", "}{a}", "{{a}}", "x{a}y{b}z", "한국어", "{한}"}
	for i := range 200 {
		cases = append(cases, "rg:{visitor:v"+strconv.Itoa(i)+"}:line")
	}
	for _, key := range cases {
		if got, want := slotOf(key), keyslot(key); got != want {
			t.Errorf("slotOf(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
	for _, prefix := range []string{"rg", "a{}", "{a"} {
		k := keys{prefix}
		for _, slot := range []uint16{0, 1, 5460, 5461, 10922, 16383} {
			if key := k.healthIn(slot); keyslot(key) != slot {
				t.Errorf("prefix %q: healthIn(%d) = %q, in slot %d", prefix, slot, key, keyslot(key))
			}
		}
	}
	if k := (keys{"{rg}"}); k.healthIn(7) != k.health() {
		t.Errorf("a prefix with a hash tag: healthIn(7) = %q, want %q", k.healthIn(7), k.health())
	}
}

// TestJudge: how the health checks of a Cluster's masters sum up, slots that no master serves
// included (which a test Cluster cannot be made to show without breaking it for the other tests).
func TestJudge(t *testing.T) {
	masters := []master{{"a:1", 0}, {"b:2", 5461}, {"c:3", 10923}}
	down := fmt.Errorf("%w: dial tcp: connection refused", rushgate.ErrUnavailable)
	full := fmt.Errorf("%w: OOM command not allowed", rushgate.ErrWritesRefused)
	lag := fmt.Errorf("%w (0 of 1 replicas)", rushgate.ErrUnconfirmed)
	for _, c := range []struct {
		errs     []error
		unserved int
		is       error
		says     string
	}{
		{[]error{nil, nil, nil}, 0, nil, ""},
		{[]error{nil, down, nil}, 0, rushgate.ErrPartlyUnavailable, "part of it does not answer: 1 of 3 masters: b:2: dial tcp: connection refused"},
		{[]error{full, down, nil}, 0, rushgate.ErrPartlyUnavailable,
			"2 of 3 masters: a:1: it refuses writes: OOM command not allowed; b:2: dial tcp: connection refused"},
		{[]error{nil, nil, nil}, 100, rushgate.ErrPartlyUnavailable, "part of it does not answer: 100 slots served by no master"},
		{[]error{down, nil, nil}, 100, rushgate.ErrPartlyUnavailable, "1 of 3 masters: a:1: dial tcp: connection refused; 100 slots served by no master"},
		{[]error{full, down, down}, 0, rushgate.ErrWritesRefused, "OOM command not allowed"},
		{[]error{lag, nil, lag}, 0, rushgate.ErrUnconfirmed, "a:1, c:3"},
		{[]error{lag, down, nil}, 0, rushgate.ErrPartlyUnavailable, "1 of 3 masters: b:2"},
	} {
		err := judge(masters, c.errs, c.unserved)
		if c.is == nil && err != nil || c.is != nil && (!errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("judge(%v, %d unserved) = %v; want %v saying %q", c.errs, c.unserved, err, c.is, c.says)
		}
	}
}
