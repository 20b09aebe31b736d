package protect

import "time"

// HoldFlushes makes the proxy hold parts of answers of unknown length for d, so that a test can count
// writes on a slow machine, and returns what puts the delay back.
func HoldFlushes(d time.Duration) (restore func()) {
	old := flushDelay
	flushDelay = d
	return func() { flushDelay = old }
}

// KeepIdle makes the proxy close connections to the origin idle for d, and returns what puts the
// timeout back.
func KeepIdle(d time.Duration) (restore func()) {
	old := idleTimeout
	idleTimeout = d
	return func() { idleTimeout = old }
}

// CleanPath is cleanPath, for the fuzz test.
var CleanPath = cleanPath

// UploadIdle makes the proxy give up on a request body that pauses for d, and returns what puts the
// bound back.
func UploadIdle(d time.Duration) (restore func()) {
	old := uploadIdle
	uploadIdle = d
	return func() { uploadIdle = old }
}
