package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestMain fails the package if a test leaves a goroutine running: serve, run in-process by some
// tests, must stop every goroutine it started when its context ends. The idle keep-alive connections
// of the tests' own HTTP clients are not serve's (rushgate opens no outgoing HTTP connection), so their
// loops are ignored. The binary the tests built and the PostgreSQL and Redis servers they share go at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) {
			if binary.dir != "" {
				_ = os.RemoveAll(binary.dir)
			}
			pgtest.Stop()
			redistest.Stop()
			os.Exit(code)
		}),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		// rueidis's Cluster client closes the connections a slot-map refresh dropped five seconds
		// later, from a goroutine of its own that outlives a closed client by that long (as in
		// internal/redisstore's TestMain).
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
