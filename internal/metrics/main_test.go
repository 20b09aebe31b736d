package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: a scrape's readers of the rooms'
// counts end with the scrape.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
