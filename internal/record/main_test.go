package record_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/internal/pgtest"
)

// TestMain fails the package if any test leaves a goroutine running: every goroutine has an owner
// that stops it. The PostgreSQL server the tests share is stopped at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { pgtest.Stop(); os.Exit(code) }))
}
