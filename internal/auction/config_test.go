package auction

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const good = `{"title": "Guitar", "currency": "EUR", "start_price": 1000, "increment": [{"from": 0, "step": 50}, {"from": 10000, "step": 500}],
	"reserve_price": 5000, "buy_now_price": 20000, "starts_at": "2026-12-24T10:00:00Z", "ends_at": "2026-12-24T12:00:00Z",
	"soft_close": {"window": "2m", "extend": "2m"}, "room": "sale"}`

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Increment.Step(9999) != 50 || c.Increment.Step(10000) != 500 || *c.ReservePrice != 5000 {
		t.Fatalf("decoded %+v", c)
	}
	if f, err := DecodeConfig([]byte(`{"title": "x", "currency": "USD", "start_price": 1, "increment": 25, "starts_at": "2026-12-24T10:00:00Z", "ends_at": "2026-12-24T12:00:00Z"}`)); err != nil || f.Increment.Step(1e9) != 25 {
		t.Fatalf("fixed increment: %+v %v", f, err)
	}
	for in, field := range map[string]string{
		`{"title": ""}`:                                       "title",
		`{"title": "x", "currency": "euro"}`:                  "currency",
		`{"title": "x", "currency": "EUR", "start_price": 0}`: "start_price",
		`{"title": "x", "currency": "EUR", "start_price": 5, "increment": [{"from": 5, "step": 1}]}`:                                                  "increment",
		`{"title": "x", "currency": "EUR", "start_price": 5, "increment": 1, "reserve_price": 4}`:                                                     "reserve_price",
		`{"title": "x", "currency": "EUR", "start_price": 5, "increment": 1, "buy_now_price": 5}`:                                                     "buy_now_price",
		`{"title": "x", "currency": "EUR", "start_price": 5, "increment": 1, "starts_at": "2026-12-24T10:00:00Z", "ends_at": "2026-12-24T09:00:00Z"}`: "ends_at",
		`{"title": "x", "bogus": 1}`: "",
		good + `}`:                   "", // trailing data, once accepted
		good + ` {}`:                 "",
	} {
		var ce *ConfigError
		if _, err := DecodeConfig([]byte(in)); !errors.As(err, &ce) || (field != "" && ce.Field != field) {
			t.Errorf("%s: %v, want a ConfigError on %q", in, err, field)
		}
	}
	// A price above MaxAmount is refused with a message that says so, not one about the other prices.
	for _, field := range []string{"reserve_price", "buy_now_price"} {
		in := fmt.Sprintf(`{"title": "x", "currency": "EUR", "start_price": 5, "increment": 1, %q: %d}`, field, MaxAmount+1)
		var ce *ConfigError
		if _, err := DecodeConfig([]byte(in)); !errors.As(err, &ce) || ce.Field != field || !strings.Contains(ce.Error(), fmt.Sprint(MaxAmount)) {
			t.Errorf("%s above MaxAmount: %v", field, err)
		}
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"increment": 0}`))
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
			t.Fatalf("round trip %s: %+v, %v", out, again, err)
		}
		s := New(c) // a valid config never breaks the rules' arithmetic
		if s.MinNext() < 1 || c.Increment.Step(s.Price) < 1 {
			t.Fatalf("degenerate pricing for %s", out)
		}
	})
}
