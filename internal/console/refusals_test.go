package console_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

// koreanReasons returns the patterns of REASONS_KO in console.js, each as `[/pattern/, 'Korean'],` on a
// line of its own, as Go regular expressions (the patterns keep to the syntax both languages share).
func koreanReasons(t *testing.T) []*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	for _, m := range regexp.MustCompile(`(?m)^\s*\[/(.+)/, '[^']+'\],$`).FindAllStringSubmatch(string(b), -1) {
		re, err := regexp.Compile(m[1])
		if err != nil {
			t.Fatalf("pattern %s: %v", m[1], err)
		}
		out = append(out, re)
	}
	if len(out) < 30 {
		t.Fatalf("found %d Korean reasons in console.js", len(out))
	}
	return out
}

// TestRefusalsInKorean: whatever the API says when it refuses a config, the Korean console says in
// Korean: every reason that decoding a room's, a drop's or an auction's config gives is matched by a
// pattern of console.js. A new reason without one fails here.
func TestRefusalsInKorean(t *testing.T) {
	patterns := koreanReasons(t)
	const opens = `"opens_at": "2030-01-01T00:00:00Z"`
	const times = `"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-02T00:00:00Z"`
	const lot = `"title": "Lot", "currency": "KRW", "start_price": 100, "increment": 10, `
	manyCodes := `"` + strings.Repeat(`x", "`, drop.MaxCodes) + `y"`
	type refused struct {
		kind, config string
		decode       func(string) error
	}
	var cases []refused
	add := func(kind string, decode func(string) error, configs []string) {
		for _, c := range configs {
			cases = append(cases, refused{kind, c, decode})
		}
	}
	rooms := []string{`{"capacity": -1}`, `{}`, `{"rate": {"admits": 0, "per": "1m"}}`,
		`{"capacity": 1, "challenge": {"difficulty": 99}}`, `{"capacity": 1, "challenge": {"difficulty": 10, "max": 5}}`,
		`{"capacity": 1, "entry": "x"}`, `{"capacity": 1, "drop": "no such id!"}`, `{"capacity": 1, "mode": "x"}`,
		`{"capacity": 1, "opens_at": "1999-01-01T00:00:00Z"}`, `{"capacity": 1, "site_url": "ftp://x"}`,
		`{"capacity": 1, "grace": "-1s"}`, `{"capacity": 1, "page": {"title": "` + strings.Repeat("t", 201) + `"}}`,
		`{"capacity": 1, "page": {"message": "` + strings.Repeat("m", 2001) + `"}}`, `{"capacity": 1, "page": {"language": "` + strings.Repeat("l", 17) + `"}}`,
		`{"capacity": 1, "page": {"logo_url": "logo.png"}}`, `{"capacity": 1, "page": {"brand_color": "red"}}`,
		`{"capacity": "x"}`, `{"capacity": 1, "nope": 1}`, `{"capacity": 1} {}`, ``, `{"capacity": 1`, `{"capacity": 1,}`,
		`{"capacity": 1, "capacity": 2}`, `{"capacity": 1, "grace": 5}`, `{"capacity": 1, "grace": "soon"}`,
		`{"capacity": 1, "opens_at": "tomorrow"}`, `{"capacity": 1, "opens_at": 5}`, `[{"capacity": 1}]`, `null`,
		`{"capacity": 1, "paused": "yes"}`, `{"capacity": 1, "page": "x"}`, `{"capacity": 1, "rate": {"admits": 1, "per": 60}}`}
	add("room", func(s string) error { _, err := room.DecodeConfig([]byte(s)); return err }, rooms)
	drops := []string{`{"stock": 0, ` + opens + `}`, `{"title": "` + strings.Repeat("t", 201) + `", "stock": 1, ` + opens + `}`, `{"stock": 1, "per_visitor": 2, ` + opens + `}`, `{"stock": 1}`,
		`{"stock": 1, "opens_at": "2300-01-01T00:00:00Z"}`, `{"stock": 1, ` + opens + `, "closes_at": "2300-01-01T00:00:00Z"}`,
		`{"stock": 1, ` + opens + `, "closes_at": "2029-01-01T00:00:00Z"}`, `{"stock": 1, ` + opens + `, "room": "no such id!"}`,
		`{"stock": 1, ` + opens + `, "release_on_claim": true}`, `{"stock": 3, ` + opens + `, "codes": ["a", "b"]}`,
		`{` + opens + `, "codes": [` + manyCodes + `]}`, `{"stock": 1, ` + opens + `, "identity": "x"}`,
		`{"stock": 1, ` + opens + `, "identity": "room"}`, `{` + opens + `, "codes": ["a", "a"]}`,
		`{"stock": 1.5, ` + opens + `}`, `{"stock": 1, ` + opens + `, "title": 5}`, `{"stock": 1, ` + opens + `, "codes": "a"}`}
	add("drop", func(s string) error { _, err := drop.DecodeConfig([]byte(s)); return err }, drops)
	auctions := []string{`{"title": "", "currency": "KRW", "start_price": 100, "increment": 10, ` + times + `}`,
		`{"title": "Lot", "currency": "won", "start_price": 100, "increment": 10, ` + times + `}`,
		`{"title": "Lot", "currency": "KRW", "start_price": 0, "increment": 10, ` + times + `}`,
		`{` + lot + `"reserve_price": 50, ` + times + `}`, `{` + lot + `"buy_now_price": 100, ` + times + `}`,
		`{` + lot + `"starts_at": "2030-01-01T00:00:00Z"}`, `{` + lot + `"starts_at": "1999-01-01T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"}`,
		`{` + lot + `"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2300-01-01T00:00:00Z"}`,
		`{` + lot + `"starts_at": "2030-01-02T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"}`,
		`{` + lot + `"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2032-01-01T00:00:00Z"}`,
		`{` + lot + times + `, "soft_close": {"window": "0s", "extend": "1m"}}`, `{` + lot + times + `, "room": "no such id!"}`,
		`{` + lot + times + `, "identity": "x"}`, `{` + lot + times + `, "identity": "room"}`,
		`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": [], ` + times + `}`,
		`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": [{"from": 0, "step": 0}], ` + times + `}`,
		`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": [{"from": 5, "step": 1}], ` + times + `}`,
		`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": [{"from": 0, "step": 1}, {"from": 0, "step": 2}], ` + times + `}`,
		fmt.Sprintf(`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": [{"from": 0, "step": 1}, {"from": %d, "step": 2}], `+times+`}`, auction.MaxAmount+1),
		`{"title": "Lot", "currency": "KRW", "start_price": 100, "increment": "x", ` + times + `}`,
		`{` + lot + times + `, "soft_close": {"window": 60, "extend": "1m"}}`}
	add("auction", func(s string) error { _, err := auction.DecodeConfig([]byte(s)); return err }, auctions)

	reasons := map[string]bool{}
	for _, c := range cases {
		err := c.decode(c.config)
		field, reason := refusal(err)
		if err == nil || reason == "" {
			t.Errorf("%s config %.80s: refused with %v", c.kind, c.config, err)
			continue
		}
		reasons[reason] = true
		matched := false
		for _, re := range patterns {
			if re.MatchString(reason) {
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("no Korean for the refusal of %s's %q: %q", c.kind, field, reason)
		}
	}
	if len(reasons) < 40 {
		t.Errorf("the cases gave %d different reasons; they should give every one decoding has", len(reasons))
	}
}

// refusal returns the field and reason of a config error of any domain.
func refusal(err error) (field, reason string) {
	var re *room.ConfigError
	var de *drop.ConfigError
	var ae *auction.ConfigError
	switch {
	case errors.As(err, &re):
		return re.Field, re.Reason
	case errors.As(err, &de):
		return de.Field, de.Reason
	case errors.As(err, &ae):
		return ae.Field, ae.Reason
	}
	return "", ""
}
