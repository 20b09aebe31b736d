package challenge_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/challenge"
)

// Solve finds a nonce for c, as a client does.
func Solve(c challenge.Challenge) string {
	for n := 0; ; n++ {
		nonce := strconv.Itoa(n)
		if challenge.Solves(c.Token, nonce, c.Difficulty) {
			return c.Token + ":" + nonce
		}
	}
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	iss := challenge.NewIssuer([]byte("secret"), clock)
	c := iss.Issue("sale", "a:203.0.113.9", 12)
	sol := Solve(c)
	if got, err := iss.Verify(sol, "sale", "a:203.0.113.9"); err != nil || got.Token != c.Token || !got.ExpiresAt.Equal(c.ExpiresAt) {
		t.Fatalf("a right solution: %+v %v", got, err)
	}
	tok, nonce, _ := strings.Cut(sol, ":")
	unsolved := "x"
	for challenge.Solves(tok, unsolved, 12) {
		unsolved += "x"
	}
	other := challenge.NewIssuer([]byte("another secret"), clock)
	cases := map[string]struct {
		sol, room, client string
		want              error
	}{
		"wrong nonce":    {tok + ":" + unsolved, "sale", "a:203.0.113.9", challenge.ErrUnsolved},
		"other room":     {sol, "other", "a:203.0.113.9", challenge.ErrOtherRoom},
		"other client":   {sol, "sale", "a:198.51.100.7", challenge.ErrInvalid},
		"other server":   {Solve(other.Issue("sale", "a:203.0.113.9", 4)), "sale", "a:203.0.113.9", challenge.ErrInvalid},
		"no nonce":       {tok, "sale", "a:203.0.113.9", challenge.ErrInvalid},
		"garbage":        {"abc:1", "sale", "a:203.0.113.9", challenge.ErrInvalid},
		"tampered level": {strings.Replace(tok, tok[:3], tok[:2]+"B", 1) + ":" + nonce, "sale", "a:203.0.113.9", challenge.ErrInvalid},
	}
	for name, tc := range cases {
		if _, err := iss.Verify(tc.sol, tc.room, tc.client); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	now = now.Add(challenge.TTL)
	if _, err := iss.Verify(sol, "sale", "a:203.0.113.9"); !errors.Is(err, challenge.ErrExpired) {
		t.Fatalf("an expired challenge: %v", err)
	}
}

// FuzzVerify: no header, however made, panics the verifier or passes for a challenge it did not solve.
func FuzzVerify(f *testing.F) {
	iss := challenge.NewIssuer([]byte("secret"), nil)
	c := iss.Issue("sale", "a:x", 8)
	f.Add(Solve(c))
	f.Add("")
	f.Add("a.b:c")
	f.Add(c.Token + ":")
	f.Fuzz(func(t *testing.T, h string) {
		sol, err := iss.Verify(h, "sale", "a:x")
		if err == nil && !challenge.Solves(sol.Token, h[len(sol.Token)+1:], 8) {
			t.Fatalf("%q verified without solving", h)
		}
	})
}

// BenchmarkVerify is the server's cost of a verified join's challenge: it must stay a few µs.
func BenchmarkVerify(b *testing.B) {
	iss := challenge.NewIssuer([]byte("secret"), nil)
	sol := Solve(iss.Issue("sale", "a:203.0.113.9", 16))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Verify(sol, "sale", "a:203.0.113.9"); err != nil {
			b.Fatal(err)
		}
	}
}
