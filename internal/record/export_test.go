package record

import (
	"testing"
	"time"
)

// SetTimeouts shortens the bounds of operations and health probes for t, so that a test of a stalled
// database runs in a second rather than in ten.
func SetTimeouts(t *testing.T, op, probe time.Duration) {
	oldOp, oldProbe := opTimeout, probeTimeout
	opTimeout, probeTimeout = op, probe
	t.Cleanup(func() { opTimeout, probeTimeout = oldOp, oldProbe })
}
