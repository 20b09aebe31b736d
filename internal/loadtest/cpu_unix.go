//go:build unix

package loadtest

import (
	"syscall"
	"time"
)

// ownCPUTime returns the user plus system CPU time the load tool has used.
func ownCPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
