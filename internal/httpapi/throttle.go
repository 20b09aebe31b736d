package httpapi

import (
	"net/http"
	"net/netip"
	"time"
)

// KeysPerMinute is how many wrong keys one client address may present a minute, to the admin API and
// the console's sign-in together, before it is refused for a while: enough for any typist, far too
// few to guess even a short admin key.
const KeysPerMinute = 20

// KeyThrottle refuses a client address that presented too many wrong keys: the admin key may be one an
// operator chose (--admin-key, 16 characters at least), which online guessing must not reach. The API
// and the console share one, so that neither is a way around the other.
type KeyThrottle struct {
	trusted proxies
	wrong   *limiter
}

// NewKeyThrottle returns a throttle of KeysPerMinute wrong keys per client address, the address told
// as the API tells it behind the trusted proxies.
func NewKeyThrottle(trusted []netip.Prefix) *KeyThrottle {
	return &KeyThrottle{trusted: trusted, wrong: newLimiter(KeysPerMinute)}
}

// Locked reports whether r's client has used up its wrong keys: it is refused, right key or not,
// until its allowance comes back (one key every three seconds).
func (k *KeyThrottle) Locked(r *http.Request) bool {
	return k != nil && k.wrong.empty(k.trusted.clientAddr(r))
}

// Failed counts a wrong key from r's client.
func (k *KeyThrottle) Failed(r *http.Request) {
	if k != nil {
		k.wrong.allow(k.trusted.clientAddr(r))
	}
}

// RetryAfter is how long a locked client waits for its next try.
func (k *KeyThrottle) RetryAfter() time.Duration { return time.Minute / KeysPerMinute }
