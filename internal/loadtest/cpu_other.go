//go:build !unix

package loadtest

import (
	"errors"
	"time"
)

// ownCPUTime is measured on Unix systems only, as the other processes' times are read from Linux's
// /proc: -cpu says so on the others.
func ownCPUTime() (time.Duration, error) {
	return 0, errors.New("CPU times are measured on Linux only")
}
