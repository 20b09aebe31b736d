package keyring

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: every goroutine has an owner
// that stops it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
