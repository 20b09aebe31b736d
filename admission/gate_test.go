package admission

import (
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestGateRedirectStaysOnSite: after adopting a token from the query, the Gate redirects to a path on
// its own site, whatever the request path looked like; "//evil.example/x" once became a Location that
// browsers read as another host, reachable through the waiting room's return_to.
func TestGateRedirectStaysOnSite(t *testing.T) {
	v := NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)})
	g := &Gate{Verifier: v, Room: "sale", RoomURL: "https://queue.example/r/sale"}
	h := g.Wrap(http.NotFoundHandler())
	tok := mustSign(t, "k1", seed1, claims("sale", time.Now().Add(time.Hour)))
	for _, path := range []string{
		"//evil.example/x", "///evil.example/x", "/\\evil.example/x", "/\\/evil.example", "//\\evil.example",
		"/%2F%2Fevil.example", "/%5Cevil.example", "/shop/checkout", "/",
	} {
		req := httptest.NewRequest(http.MethodGet, "http://shop.example"+path+"?a=1&rg_admission="+tok, nil)
		req.URL.Path, req.URL.RawPath = "", "" // as net/http parses a request line, not an absolute URL
		if u, err := url.ParseRequestURI(path + "?a=1&rg_admission=" + tok); err == nil {
			req.URL = u
		} else {
			t.Fatalf("%s: %v", path, err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		loc := rec.Header().Get("Location")
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("%s: %d, want 303", path, rec.Code)
		}
		u, err := url.Parse(loc)
		if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(loc, "/") ||
			strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") || strings.Contains(loc, "rg_admission") {
			t.Errorf("%s: Location %q leaves the site or keeps the token", path, loc)
		}
		if u.Query().Get("a") != "1" {
			t.Errorf("%s: Location %q lost the query", path, loc)
		}
	}
}

func TestSitePath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "//a/b": "/a/b", `\/\a`: "/a", "/a//b": "/a//b"} {
		if got := SitePath(in, ""); got != want {
			t.Errorf("SitePath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := SitePath("/a", "x=1"); got != "/a?x=1" {
		t.Errorf("SitePath with a query = %q", got)
	}
}
