package room

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(`{"capacity": 50, "rate": {"admits": 10, "per": "1m"}, "opens_at": "2026-12-24T10:00:00+01:00"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	if c.Capacity != 50 || c.Rate.Admits != 10 || time.Duration(c.Rate.Per) != time.Minute || !c.OpensAt.Equal(want) {
		t.Fatalf("decoded %+v", c)
	}
	if time.Duration(c.SessionTTL) != DefaultSessionTTL || time.Duration(c.Grace) != DefaultGrace || time.Duration(c.IdleTimeout) != DefaultIdleTimeout {
		t.Fatalf("defaults not applied: %+v", c)
	}
	bad := map[string]string{
		`{}`:                                   "",
		`{"capacity": -1}`:                     "capacity",
		`{"capacity": 5, "grace": "soon"}`:     "",
		`{"capacity": 5, "grace": "-1s"}`:      "grace",
		`{"capacity": 5, "extra": 1}`:          "",
		`{"capacity": 5} {}`:                   "",
		`{"rate": {"admits": 0, "per": "1s"}}`: "rate.admits",
		`{"rate": {"admits": 1, "per": "0s"}}`: "rate.per",
		`{"capacity": "5"}`:                    "",
		`[`:                                    "",
		``:                                     "",
		`{"capacity": 5, "opens_at": "1900-01-01T00:00:00Z"}`: "opens_at",
		`{"capacity": 5, "site_url": "javascript:alert(1)"}`:  "site_url",
		`{"capacity": 5, "site_url": "/relative"}`:            "site_url",
	}
	for in, field := range bad {
		_, err := DecodeConfig([]byte(in))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a ConfigError", in, err)
			continue
		}
		if field != "" && ce.Field != field {
			t.Errorf("%s: field %q, want %q", in, ce.Field, field)
		}
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"capacity": 50, "rate": {"admits": 10, "per": "1m"}, "session_ttl": "5m", "opens_at": "2026-12-24T10:00:00Z", "paused": true}`))
	f.Add([]byte(`{"rate": {"admits": 1, "per": "1ms"}}`))
	f.Add([]byte(`{"capacity": 1e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("refusal is not a ConfigError: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded config does not validate: %v", err)
		}
		// What the API echoes back must decode to the same config.
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeConfig(out)
		if err != nil || !reflect.DeepEqual(normal(again), normal(c)) {
			t.Fatalf("round trip: %s -> %+v, %v", out, again, err)
		}
	})
}

func normal(c Config) Config {
	if c.OpensAt != nil {
		u := c.OpensAt.UTC()
		c.OpensAt = &u
	}
	return c
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"sale": true, "A-b_9": true, "": false, "a b": false, "é": false, "a{b}": false, "a/b": false,
		string(make([]byte, 65)): false, "0123456789012345678901234567890123456789012345678901234567890123": true,
	} {
		if got := rushgate.ValidID(id); got != want {
			t.Errorf("rushgate.ValidID(%q) = %v", id, got)
		}
	}
}

func TestTarget(t *testing.T) {
	c := Config{SiteURL: "https://shop.example.com/"}
	for in, want := range map[string]string{
		"": "https://shop.example.com/",
		"https://shop.example.com/checkout?item=1": "https://shop.example.com/checkout?item=1",
		"https://evil.example.com/steal":           "https://shop.example.com/",
		"http://shop.example.com/downgrade":        "https://shop.example.com/",
		"https://user@shop.example.com/":           "https://shop.example.com/",
		"//evil.example.com":                       "https://shop.example.com/",
		"/relative/path":                           "https://shop.example.com/",
		// rushgate's own drop and auction pages, as paths that stay on rushgate's site.
		"/d/coupon":           "/d/coupon",
		"/a/lot?lang=ko":      "/a/lot?lang=ko",
		"//d/x":               "/d/x",
		`/\d/x`:               "/d/x",
		"///evil.example/d/x": "https://shop.example.com/",
		"/d/x\\@evil.example": "https://shop.example.com/",
		`https://shop.example.com\@evil.example/`: "https://shop.example.com/",
		"https://shop.example.com@evil.example/":  "https://shop.example.com/",
		"https:evil.example.com":                  "https://shop.example.com/",
		"javascript:alert(1)":                     "https://shop.example.com/",
		// On the site's origin, a path that starts with // stays a path there: the Gate collapses it
		// when it redirects after adopting the token (admission.SitePath).
		"https://shop.example.com//evil.example/x": "https://shop.example.com//evil.example/x",
	} {
		if got := c.Target(in); got != want {
			t.Errorf("Target(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (Config{}).Target("https://x.example.com"); got != "" {
		t.Errorf("no site: %q", got)
	}
	if got := (Config{}).Target("/d/coupon"); got != "/d/coupon" {
		t.Errorf("no site, back to a drop's page: %q", got)
	}
}

// FuzzTarget: wherever a crafted return_to points, the visitor is sent to the room's site (its
// scheme and host, no user) or to a path of rushgate's own drop and auction pages: never elsewhere.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{"", "https://shop.example.com/x", "//evil.example", `/\evil.example`, "/d/x", "/a/y?z=1",
		"https://shop.example.com@evil.example/", "/d/x\\@evil.example", "https:evil", "javascript:alert(1)", "/d/\t/evil"} {
		f.Add(s, "https://shop.example.com/")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, returnTo, siteURL string) {
		site, err := url.Parse(siteURL)
		switch {
		case siteURL == "":
			site = nil
		case err != nil || site.Scheme != "http" && site.Scheme != "https" || site.Host == "" || site.User != nil:
			return // a site_url the config refuses
		}
		got := Config{SiteURL: siteURL}.Target(returnTo)
		if got == "" {
			if site != nil {
				t.Fatalf("Target(%q) with site %q is empty", returnTo, siteURL)
			}
			return
		}
		if strings.HasPrefix(got, "/") {
			if !strings.HasPrefix(got, "/d/") && !strings.HasPrefix(got, "/a/") || strings.ContainsAny(got, "\\\x00") {
				t.Fatalf("Target(%q) = %q: a path, but not to a drop's or an auction's page", returnTo, got)
			}
			if u, err := url.Parse(got); err == nil && u.Host != "" {
				t.Fatalf("Target(%q) = %q names a host", returnTo, got)
			}
			return
		}
		u, err := url.Parse(got)
		if site == nil || err != nil || u.Scheme != site.Scheme || u.Host != site.Host || u.User != nil {
			t.Fatalf("Target(%q) with site %q = %q: off the site", returnTo, siteURL, got)
		}
	})
}
