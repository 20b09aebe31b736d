package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: every goroutine has an owner
// that stops it. rueidis's Cluster client, when it refreshes its slot map, closes the connections it
// dropped five seconds later from a goroutine of its own, which outlives a closed client by that long;
// it is rueidis's, and ends by itself.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
