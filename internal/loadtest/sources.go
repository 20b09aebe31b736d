package loadtest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// A crowd comes from many addresses and a rehearsal from one machine from one, while the server bounds
// what one client address holds (--streams-per-address): past it, a rehearsal's visitors would be
// refused streams that a crowd's would hold, and wait by polling, which changes the line's pace and
// what the report says of its estimates. Every 127.x.y.z is this machine's, so against a target on the
// IPv4 loopback each visitor comes from one of many of them, as each person of a crowd comes from
// their own.

// defaultSources is how many loopback addresses a rehearsal comes from unless --sources says:
// 127.0.0.1 to 127.0.0.250, which hold 25,000 streams under the server's default bound.
const defaultSources = 250

// sources hands each visitor the client of its address: the i-th visitor's connections all come from
// the (i mod n)-th loopback address, whichever of them it opens. A system that has only 127.0.0.1 (as
// macOS has by default) gets connections from there instead, and the report says one address.
type sources struct {
	n       int
	mu      sync.Mutex
	clients map[int]*http.Client
	one     atomic.Bool // the system refused an address of the loopback
}

// newSources returns the sources of a rehearsal of host from n addresses; n is 1 for a host that is
// not an IPv4 loopback address or localhost, whose visitors all come from this machine's one.
func newSources(host string, n int) *sources {
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || ip.To4() == nil || !ip.IsLoopback()) {
		n = 1
	}
	return &sources{n: max(1, min(n, 254)), clients: map[int]*http.Client{}}
}

// client returns the client of visitor i's address.
func (s *sources) client(i int) *http.Client {
	i %= s.n
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[i]
	if c == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: 1024}
		if s.n > 1 {
			tr.DialContext = s.dialFrom(net.IPv4(127, 0, 0, byte(1+i)))
		}
		c = &http.Client{Transport: tr}
		s.clients[i] = c
	}
	return c
}

// dialFrom dials from ip, or from wherever the system picks once it refused a loopback address.
func (s *sources) dialFrom(ip net.IP) func(ctx context.Context, network, addr string) (net.Conn, error) {
	from := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var system net.Dialer
		if s.one.Load() {
			return system.DialContext(ctx, network, addr)
		}
		c, err := from.DialContext(ctx, network, addr)
		var noSuch *net.AddrError // localhost on the IPv6 loopback alone
		if errors.Is(err, syscall.EADDRNOTAVAIL) || errors.As(err, &noSuch) {
			s.one.Store(true)
			return system.DialContext(ctx, network, addr)
		}
		return c, err
	}
}

// used is how many addresses the visitors came from.
func (s *sources) used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.one.Load() {
		return 1
	}
	return max(1, len(s.clients))
}

// close closes the idle connections of every address.
func (s *sources) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		c.CloseIdleConnections()
	}
}
