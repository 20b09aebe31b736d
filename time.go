package rushgate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// MaxDuration bounds every duration a config names (a session, a rate window, a soft-close extension,
// an auction's length), so that a typo cannot create a timer that overflows.
const MaxDuration = 366 * 24 * time.Hour

// The window of instants a config may name. Anything outside is a typo, and far beyond it lies 2262,
// where Unix nanoseconds wrap: with every time before MaxTime and every duration at most MaxDuration, no
// sum the backends compute can wrap.
var (
	MinTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// TimeInRange reports whether t lies in [MinTime, MaxTime).
func TimeInRange(t time.Time) bool { return !t.Before(MinTime) && t.Before(MaxTime) }

// SameTime reports whether two optional instants (a closes_at, an opens_at) are both unset or equal.
func SameTime(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// TimeRangeReason is what a config error says of a time outside [MinTime, MaxTime).
const TimeRangeReason = "must be an RFC 3339 time from 2000 to 2199"

// Duration is a time.Duration that reads and writes itself as a Go duration string ("90s", "10m"), the
// form people type in config files.
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string. Its error is a *json.UnmarshalTypeError, which
// encoding/json completes with the field's path (soft_close.window), so that a form can show it there.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "not a string", Type: reflect.TypeFor[Duration]()}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("string %q", s), Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(v)
	return nil
}
