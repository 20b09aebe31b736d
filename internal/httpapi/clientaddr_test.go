package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/room"
)

// TestTrustedProxies: behind a trusted proxy the new-visitor limit counts the client the proxy names,
// not the proxy; entries a client wrote itself (left of the proxy's) are ignored, and so are the
// headers of a peer that is not trusted.
func TestTrustedProxies(t *testing.T) {
	join := func(e *env, header, value string) int {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/rooms/r/join", nil)
		if header != "" {
			req.Header.Set(header, value)
		}
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	trusted, err := httpapi.ParseTrustedProxies("127.0.0.0/8, ::1")
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.NewVisitorsPerMinute, c.TrustedProxies = 1, trusted })
	e.do(http.MethodPut, "/v1/rooms/r", adminKey, `{"capacity": 100}`)
	steps := []struct {
		header, value string
		want          int
	}{
		{"X-Forwarded-For", "198.51.100.1", 200},
		{"X-Forwarded-For", "198.51.100.1", 429},
		{"X-Forwarded-For", "198.51.100.2", 200},                   // another client behind the proxy
		{"X-Forwarded-For", "203.0.113.9, 198.51.100.1", 429},      // a spoofed entry on the left changes nothing
		{"X-Forwarded-For", "198.51.100.3, 127.0.0.5", 200},        // two proxies of ours: the client is left of both
		{"Forwarded", `for="[2001:db8::1]:4711";proto=https`, 200}, // RFC 7239, with a port
		{"Forwarded", `for=192.0.2.1, for="[2001:db8::1]"`, 429},   // the nearest untrusted hop counts
		{"Forwarded", `For=198.51.100.4;by=127.0.0.1`, 200},
	}
	for i, st := range steps {
		if got := join(e, st.header, st.value); got != st.want {
			t.Fatalf("step %d (%s: %s): %d, want %d", i, st.header, st.value, got, st.want)
		}
	}

	// Without trusted proxies, the headers are the client's own words: everyone is the TCP peer.
	plain := setup(t, func(c *httpapi.Config, _ *room.Store) { c.NewVisitorsPerMinute = 1 })
	plain.do(http.MethodPut, "/v1/rooms/r", adminKey, `{"capacity": 100}`)
	if join(plain, "X-Forwarded-For", "198.51.100.1") != 200 || join(plain, "X-Forwarded-For", "198.51.100.2") != 429 {
		t.Fatal("an untrusted peer's X-Forwarded-For was believed")
	}
}

func TestParseTrustedProxies(t *testing.T) {
	if p, err := httpapi.ParseTrustedProxies("10.0.0.0/8,192.0.2.7, 2001:db8::/32"); err != nil || len(p) != 3 || p[1].Bits() != 32 {
		t.Fatalf("%v %v", p, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "1.2.3"} {
		if _, err := httpapi.ParseTrustedProxies(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
