package rushgate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRepeatedName holds the one-pass scanner of repeated names to a reader of encoding/json's tokens:
// for every valid JSON text both find the same first repeated name, at the same path.
func FuzzRepeatedName(f *testing.F) {
	for _, s := range []string{`{"a": 1, "A": 2}`, `{"a": {"b": [1, {"c": 1, "c": 2}]}}`, `{"s": "{\"a\": 1, \"a\": 2}", "t": 1}`,
		`{"\u212a": 1, "k": 2}`, `[{"x": 1}, {"x": 1, "y": {}}]`, `"a"`, `{"a\\": 1, "a": 2}`, `{"":1,"":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if got, want := repeatedName(b), tokenRepeatedName(b); got != want {
			t.Fatalf("%s: %q, the token reader finds %q", b, got, want)
		}
	})
}

// tokenRepeatedName is the reference: the names of each object by encoding/json's tokens (as
// repeatedName was written before it read the bytes itself, with names folded as encoding/json does).
func tokenRepeatedName(b []byte) string {
	type frame struct {
		names map[string]bool // an object's names so far; nil for an array
		name  string          // the name whose value is being read
		value bool            // an object's next token is a value, not a name
	}
	var stack []*frame
	path := func(last string) string {
		var p []string
		for _, f := range stack {
			if f.names != nil && f.value {
				p = append(p, f.name)
			}
		}
		return strings.Join(append(p, last), ".")
	}
	pop := func() { // a value ends: it was its parent's member or element
		stack = stack[:len(stack)-1]
		if len(stack) > 0 {
			stack[len(stack)-1].value = false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.names != nil && !top.value {
			if t == json.Delim('}') { // the object ends where a name could come
				pop()
				continue
			}
			name, ok := t.(string)
			if !ok {
				return ""
			}
			if top.names[foldName([]byte(name))] {
				return path(name)
			}
			top.names[foldName([]byte(name))] = true
			top.name, top.value = name, true
			continue
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			pop()
		default: // a scalar value ends an object's member
			if top != nil {
				top.value = false
			}
		}
	}
}

// TestMergePatch: the examples of RFC 7396's appendix A. Patch merged an object member by replacing it,
// so {"page": {"message": ...}} dropped the page's title, logo and colour.
func TestMergePatch(t *testing.T) {
	for _, c := range [][3]string{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	} {
		got, err := mergePatch(json.RawMessage(c[0]), json.RawMessage(c[1]))
		if err != nil || string(got) != c[2] {
			t.Errorf("%s merged with %s: %s %v, want %s", c[0], c[1], got, err, c[2])
		}
	}
}
