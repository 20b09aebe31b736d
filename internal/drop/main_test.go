package drop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: the service's retried releases
// end with Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
