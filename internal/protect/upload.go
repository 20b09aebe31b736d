package protect

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// uploadIdle is how long a visitor's request body may pause before the proxy gives up on it. The
// server's ReadTimeout bounds a whole request, which suits rushgate's own small bodies but cut off a
// photo uploaded over a slow phone link to the site behind the proxy; a bound on pauses still frees
// the connections of a visitor who stopped sending. A variable for tests only.
var uploadIdle = time.Minute

// upload is a visitor's request body on its way to the origin: each read moves the connection's read
// deadline uploadIdle on, and a read that fails is kept for the error handler, which answers a stalled
// upload as the visitor's timeout rather than the origin's failure.
type upload struct {
	io.ReadCloser
	rc     *http.ResponseController
	failed atomic.Pointer[error]
}

// Read reads on with the deadline moved.
func (u *upload) Read(p []byte) (int, error) {
	_ = u.rc.SetReadDeadline(time.Now().Add(uploadIdle))
	n, err := u.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		u.failed.Store(&err)
	}
	return n, err
}

type uploadKey struct{}

// stalled reports whether the body of r (or of the request made from it for the origin) stopped
// arriving: its last read ran out of time.
func stalled(r *http.Request) bool {
	u, ok := r.Context().Value(uploadKey{}).(*upload)
	if !ok {
		return false
	}
	err := u.failed.Load()
	return err != nil && errors.Is(*err, os.ErrDeadlineExceeded)
}
