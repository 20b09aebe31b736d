package redisstore

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestMain fails the package if any test leaves a goroutine running: every goroutine has an owner
// that stops it. rueidis's Cluster client, when it refreshes its slot map, closes the connections it
// dropped five seconds later from a goroutine of its own, which outlives a closed client by that long;
// it is rueidis's, and ends by itself. The Redis servers the tests shared go at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.Cleanup(func(code int) { redistest.Stop(); os.Exit(code) }))
}
