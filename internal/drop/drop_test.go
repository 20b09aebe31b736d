package drop

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(`{"codes": ["A", "B"], "opens_at": "2026-12-24T10:00:00Z"}`))
	if err != nil || c.Stock != 2 || c.PerVisitor != 1 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for in, field := range map[string]string{
		`{"stock": 0, "opens_at": "2026-12-24T10:00:00Z"}`: "stock",
		`{"stock": 5}`: "opens_at",
		`{"stock": 5, "per_visitor": 6, "opens_at": "2026-12-24T10:00:00Z"}`:                    "per_visitor",
		`{"stock": 5, "opens_at": "2026-12-24T10:00:00Z", "closes_at": "2026-12-24T09:00:00Z"}`: "closes_at",
		`{"stock": 5, "opens_at": "2026-12-24T10:00:00Z", "release_on_claim": true}`:            "release_on_claim",
		`{"stock": 3, "opens_at": "2026-12-24T10:00:00Z", "codes": ["A", "A", "B"]}`:            "codes",
		`{"stock": 3, "opens_at": "2026-12-24T10:00:00Z", "codes": ["A"]}`:                      "codes",
		`{"stock": 3, "opens_at": "2026-12-24T10:00:00Z", "room": "no spaces"}`:                 "room",
		`{"stock": 3, "bogus": true}`:                         "bogus",
		`{"stock": 3, "opens_at": "2026-12-24T10:00:00Z"}}`:   "", // trailing data, once accepted
		`{"stock": 3, "opens_at": "2026-12-24T10:00:00Z"} {}`: "",
	} {
		var ce *ConfigError
		if _, err := DecodeConfig([]byte(in)); !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: %v, want a ConfigError on %q", in, err, field)
		}
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"stock": 10, "per_visitor": 2, "opens_at": "2026-12-24T10:00:00Z", "closes_at": "2026-12-24T11:00:00Z", "room": "r", "release_on_claim": true}`))
	f.Add([]byte(`{"codes": ["X", "Y"], "opens_at": "2026-12-24T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("refusal is not a ConfigError: %v", err)
			}
			return
		}
		out, _ := json.Marshal(c)
		again, err := DecodeConfig(out)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip %s: %+v %v", out, again, err)
		}
		if c.Stock > 1000 {
			return
		}
		s := New(c) // a valid config hands out exactly its stock to distinct visitors, then refuses
		for i := range c.Stock {
			claim, created, err := s.Decide("d", fmt.Sprint("v", i), "", fmt.Sprint("G", i), c.OpensAt)
			if err != nil || !created {
				t.Fatalf("claim %d of %d refused: %v", i+1, c.Stock, err)
			}
			s.Take(claim)
		}
		if _, _, err := s.Decide("d", "late", "", "G", c.OpensAt); !errors.Is(err, ErrSoldOut) || s.Remaining() != 0 {
			t.Fatalf("past the stock of %s: %v, %d remaining", out, err, s.Remaining())
		}
	})
}

// FuzzGeneratedSeq: the number a lookup reads from a code is the one GeneratedCode wrote, whatever the
// drawn part; any other text gives a positive number or none, and never a panic.
func FuzzGeneratedSeq(f *testing.F) {
	f.Add("7KQ2M9XDPT4ZABCD", int64(17), "7KQ2M9XDPT4ZABCD-17")
	f.Add("A-B", int64(1), "-+1")
	f.Add("", int64(9223372036854775807), "X-9223372036854775808")
	f.Fuzz(func(t *testing.T, drawn string, seq int64, any string) {
		if seq >= 1 {
			if got, ok := generatedSeq(GeneratedCode(drawn, seq)); !ok || got != seq {
				t.Fatalf("generatedSeq(GeneratedCode(%q, %d)) = %d, %v", drawn, seq, got, ok)
			}
		}
		if got, ok := generatedSeq(any); ok && got < 1 {
			t.Fatalf("generatedSeq(%q) = %d", any, got)
		}
	})
}
