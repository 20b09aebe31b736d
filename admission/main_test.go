package admission

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: a remote verifier's background
// refetch ends with its fetch.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
