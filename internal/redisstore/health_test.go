package redisstore

import (
	"context"
	"strconv"
	"testing"

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
