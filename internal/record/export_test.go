package record

import (
	"testing"
	"time"
)

// SetRetryOpen shortens how often a record opened later tries its database again, for t.
func SetRetryOpen(t *testing.T, d time.Duration) {
	old := retryOpen
	retryOpen = d
	t.Cleanup(func() { retryOpen = old })
}

// SetTimeouts shortens the bounds of operations and health probes for t, so that a test of a stalled
// database runs in a second rather than in ten.
func SetTimeouts(t *testing.T, op, probe time.Duration) {
	oldOp, oldProbe := opTimeout, probeTimeout
	opTimeout, probeTimeout = op, probe
	t.Cleanup(func() { opTimeout, probeTimeout = oldOp, oldProbe })
}
