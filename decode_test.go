package rushgate

import (
	"bytes"
	"encoding/json"
	"reflect"
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

// FuzzMergePatch: whatever the config and the patch, MergePatch answers valid JSON or a *DecodeError,
// never panics, and is idempotent as RFC 7396 says: the patch applied to its own result changes
// nothing more.
func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"stock": 100, "title": "Tee", "codes": ["A", "B"]}`), []byte(`{"stock": 150}`))
	f.Add([]byte(`{"page": {"title": "Sale", "message": "Hi"}}`), []byte(`{"page": {"message": null}}`))
	f.Add([]byte(`{"a": [1, 2]}`), []byte(`{"a": {"b": null}, "c": {"d": {"e": 1}}}`))
	f.Add([]byte(`{}`), []byte(`[1]`))
	f.Fuzz(func(t *testing.T, target, patch []byte) {
		var old any
		if json.Unmarshal(target, &old) != nil {
			return
		}
		once, err := MergePatch(old, patch)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("MergePatch(%s, %s): %v, not a *DecodeError", target, patch, err)
			}
			return
		}
		var first any
		if err := json.Unmarshal(once, &first); err != nil {
			t.Fatalf("MergePatch(%s, %s) = %s, not JSON: %v", target, patch, once, err)
		}
		twice, err := MergePatch(first, patch)
		if err != nil {
			t.Fatalf("the patch %s refused on its own result %s: %v", patch, once, err)
		}
		var second any
		if err := json.Unmarshal(twice, &second); err != nil || !reflect.DeepEqual(first, second) {
			t.Fatalf("the patch %s applied again to %s gave %s", patch, once, twice)
		}
	})
}
