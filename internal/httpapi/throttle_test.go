package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"
)

// TestKeyThrottle: a client address that presented KeysPerMinute wrong keys is locked, others are not,
// and one key's worth of allowance comes back every three seconds.
func TestKeyThrottle(t *testing.T) {
	k := NewKeyThrottle(nil)
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	k.wrong.now = func() time.Time { return now }
	guesser := httptest.NewRequest("GET", "/v1/rooms", nil)
	guesser.RemoteAddr = "203.0.113.9:5000"
	other := httptest.NewRequest("GET", "/v1/rooms", nil)
	other.RemoteAddr = "198.51.100.7:5000"
	for i := range KeysPerMinute {
		if k.Locked(guesser) {
			t.Fatalf("locked after %d wrong keys", i)
		}
		k.Failed(guesser)
	}
	if !k.Locked(guesser) || k.Locked(other) {
		t.Fatalf("after %d wrong keys: the guesser locked %v, another address %v", KeysPerMinute, k.Locked(guesser), k.Locked(other))
	}
	now = now.Add(k.RetryAfter())
	if k.Locked(guesser) {
		t.Fatal("still locked once a key's allowance came back")
	}
	k.Failed(guesser)
	if !k.Locked(guesser) {
		t.Fatal("a wrong key after the pause did not lock again")
	}
	var none *KeyThrottle // a server without one locks nobody
	none.Failed(guesser)
	if none.Locked(guesser) {
		t.Fatal("a nil throttle locked")
	}
}
