package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
)

// FuzzClientAddr feeds arbitrary peers and forwarding headers to clientAddr: it never panics, believes
// headers only from a trusted peer, and never answers with a trusted proxy's address when the chain
// names a client beyond it.
func FuzzClientAddr(f *testing.F) {
	f.Add("127.0.0.1:5000", `for="[2001:db8::1]:4711";proto=https`, "")
	f.Add("127.0.0.1:5000", "", "203.0.113.9, 198.51.100.1")
	f.Add("192.0.2.1:80", "for=unknown", "10.0.0.1")
	f.Add("[::1]:80", "for=_hidden, for=127.0.0.2", "")
	s := &Server{trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	f.Fuzz(func(t *testing.T, peer, forwarded, xff string) {
		r := &http.Request{RemoteAddr: peer, Header: http.Header{}}
		if forwarded != "" {
			r.Header.Set("Forwarded", forwarded)
		}
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		got := s.clientAddr(r)
		host, _, err := net.SplitHostPort(peer)
		if err != nil {
			host = peer
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !proxies(s.trusted).trustedAddr(a) {
			if got != host {
				t.Fatalf("untrusted peer %q with headers: client %q, want the peer", peer, got)
			}
			return
		}
		if ga, err := netip.ParseAddr(got); err == nil && proxies(s.trusted).trustedAddr(ga) && len(forwardedFor(r.Header)) > 0 {
			for _, h := range forwardedFor(r.Header) {
				if ha, err := parseHop(h); err != nil || !proxies(s.trusted).trustedAddr(ha) {
					t.Fatalf("chain %q names a client beyond our proxies, but got the proxy %q", forwardedFor(r.Header), got)
				}
			}
		}
	})
}
