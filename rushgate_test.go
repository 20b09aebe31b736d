package rushgate_test

import (
	"strings"
	"testing"

	"github.com/rushgate/rushgate"
)

// TestDecodeConfig: one object, no unknown field, nothing after it; the room, drop and auction configs
// once decoded with three copies that drifted (two took a trailing "}" or a second object).
func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	var c cfg
	if err := rushgate.DecodeConfig(strings.NewReader(` {"a": 1, "b": "x"} `), &c); err != nil || c.A != 1 || c.B != "x" {
		t.Fatalf("%+v %v", c, err)
	}
	for in, want := range map[string]string{
		`{"a": 1}}`:       "after the JSON object",
		`{"a": 1} {}`:     "after the JSON object",
		`{"a": 1} x`:      "after the JSON object",
		`{"a": 1, "c":1}`: "unknown field",
		`{"a": "1"}`:      `field "a"`,
		`{"a": 1`:         "ends inside",
		``:                "empty body",
		`[1]`:             "",
		`{"a": 1,}`:       "malformed JSON",
	} {
		var c cfg
		err := rushgate.DecodeConfig(strings.NewReader(in), &c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"sale": true, "A-b_9": true, "": false, strings.Repeat("a", 65): false, "a b": false, "a.b": false, "é": false} {
		if got := rushgate.ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v", id, got)
		}
	}
}
