package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads a comma-separated list of CIDR prefixes or single addresses, such as
// "10.0.0.0/8,192.0.2.7", for Config.TrustedProxies.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR prefix nor an address", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// clientAddr returns the address a per-client limit counts a request against. It is the TCP peer,
// unless the peer is a trusted proxy: then it is the nearest address, walking the forwarding chain
// (Forwarded, or else X-Forwarded-For) from the right, that is not itself a trusted proxy. Entries to
// the left of it were written by the client and prove nothing, so they are never read.
func (s *Server) clientAddr(r *http.Request) string { return proxies(s.trusted).clientAddr(r) }

// ClientAddr returns r's client address as the API tells it behind the trusted proxies: for what is
// served beside the API and logs who asked (the console's sign-ins).
func ClientAddr(trusted []netip.Prefix, r *http.Request) string {
	return proxies(trusted).clientAddr(r)
}

// proxies are the trusted proxies (Config.TrustedProxies), whose forwarding headers name the client.
type proxies []netip.Prefix

func (s proxies) clientAddr(r *http.Request) string {
	peer, trusted := s.peer(r)
	if !trusted {
		return peer
	}
	hops := forwardedFor(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := parseHop(hops[i])
		if err != nil {
			return hops[i] // an obfuscated or "unknown" node, as a trusted proxy saw it
		}
		if !s.trustedAddr(a) {
			return a.String()
		}
	}
	if len(hops) > 0 {
		return hops[0] // every hop is a proxy of ours: the first is as near the client as we know
	}
	return peer
}

// FromTrustedProxy reports whether r's TCP peer is one of Config.TrustedProxies, whose forwarding
// headers may then be believed (the protecting proxy passes them on to the site).
func (s *Server) FromTrustedProxy(r *http.Request) bool {
	_, trusted := proxies(s.trusted).peer(r)
	return trusted
}

// peer returns r's TCP peer address, and whether it is a trusted proxy.
func (s proxies) peer(r *http.Request) (string, bool) {
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if len(s) == 0 {
		return peer, false
	}
	a, err := netip.ParseAddr(peer)
	return peer, err == nil && s.trustedAddr(a)
}

func (s proxies) trustedAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor lists the client-side addresses of the forwarding chain, nearest the client first: the
// for= parameters of every Forwarded header (RFC 7239) when there is one, else X-Forwarded-For.
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, line := range h.Values("Forwarded") {
		for _, elem := range strings.Split(line, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					hops = append(hops, strings.Trim(v, `"`))
				}
			}
		}
	}
	if len(hops) > 0 {
		return hops
	}
	for _, line := range h.Values("X-Forwarded-For") {
		for _, f := range strings.Split(line, ",") {
			if f = strings.TrimSpace(f); f != "" {
				hops = append(hops, f)
			}
		}
	}
	return hops
}

// parseHop reads one forwarded address: "192.0.2.1", "192.0.2.1:80", "[2001:db8::1]:80" or "2001:db8::1".
func parseHop(h string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return a.Unmap(), err
}
