package loadtest

import (
	"net"
	"net/http"
	"testing"
)

// TestSources: only a target on the IPv4 loopback is rehearsed from many addresses, each visitor from
// one of them, all of its connections from that one, and the count stays within the loopback's 254.
func TestSources(t *testing.T) {
	for host, want := range map[string]int{"127.0.0.1": 250, "127.3.2.1": 250, "localhost": 250, "::1": 1,
		"10.0.0.1": 1, "example.com": 1, "": 1} {
		if got := newSources(host, 250).n; got != want {
			t.Errorf("%q: %d addresses, want %d", host, got, want)
		}
	}
	if got := newSources("127.0.0.1", 1000).n; got != 254 {
		t.Errorf("1000 asked: %d addresses", got)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		w.Write([]byte(host))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	s := newSources("127.0.0.1", 3)
	defer s.close()
	from := func(visitor int) string {
		t.Helper()
		res, err := s.client(visitor).Get("http://" + ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b := make([]byte, 64)
		n, _ := res.Body.Read(b)
		return string(b[:n])
	}
	got := []string{from(0), from(1), from(2), from(3), from(1)}
	if s.one.Load() {
		t.Skip("this system has no loopback address but 127.0.0.1")
	}
	want := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1", "127.0.0.2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("visitors' requests came from %v, want %v", got, want)
		}
	}
	if s.used() != 3 {
		t.Fatalf("%d addresses used, want 3", s.used())
	}
}
