package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: serve, run in-process by some
// tests, must stop every goroutine it started when its context ends. The idle keep-alive connections
// of the tests' own HTTP clients are not serve's (rushgate opens no outgoing HTTP connection), so their
// loops are ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}
