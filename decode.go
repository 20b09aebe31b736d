package rushgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DecodeObject reads exactly one JSON object from b into v, refusing any other value, unknown fields,
// a field named twice in one object and anything after the object, so that a typo in a field name, a
// pasted second value or a second object is an error rather than a setting (or a bid's amount)
// silently ignored or overridden. Configs and request bodies alike go through it. Its error says what
// was wrong in words a client can act on; each domain wraps it in its own config error. The caller
// reads b with a limit. Its errors are *DecodeError.
func DecodeObject(b []byte, v any) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return &DecodeError{Reason: notAnObject}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, b, v)
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return &DecodeError{Reason: "unexpected data after the JSON object"}
	}
	if f := repeatedName(b); f != "" {
		return &DecodeError{Field: f, Reason: "is given twice"}
	}
	return nil
}

// repeatedName returns the dotted path (array indices left out, as encoding/json names fields) of the
// first member name that one object of the JSON text b holds twice, "" for none. Names are compared as
// encoding/json matches them to fields, without regard to case: of "amount" and "Amount" it keeps the
// last without a word, where another reader of the same body would keep the first. b is one valid JSON
// value, which one pass over its bytes reads (a body's every request goes through it).
func repeatedName(b []byte) string {
	type frame struct {
		object bool
		key    bool            // an object's next string is a name
		name   []byte          // an object's member being read, for the path
		names  [][]byte        // an object's first names
		seen   map[string]bool // past a few, all of them instead, folded
	}
	var buf [4]frame
	stack := buf[:0]
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, frame{object: true, key: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.key = true
			}
		case '"':
			j := i + 1
			for ; b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if len(stack) == 0 { // a string alone: no names
				return ""
			}
			if top := &stack[len(stack)-1]; top.object && top.key {
				name := b[i+1 : j]
				if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) { // as encoding/json reads it
					var s string
					_ = json.Unmarshal(b[i:j+1], &s)
					name = []byte(s)
				}
				if top.seen != nil && top.seen[foldName(name)] || slices.ContainsFunc(top.names, func(n []byte) bool { return bytes.EqualFold(n, name) }) {
					var path []string
					for _, f := range stack[:len(stack)-1] {
						if f.object {
							path = append(path, string(f.name))
						}
					}
					return strings.Join(append(path, string(name)), ".")
				}
				top.key, top.name = false, name
				switch {
				case top.seen != nil:
					top.seen[foldName(name)] = true
				case len(top.names) < 8:
					top.names = append(top.names, name)
				default: // an object of many names (a map): no quadratic search
					top.seen = map[string]bool{foldName(name): true}
					for _, n := range top.names {
						top.seen[foldName(n)] = true
					}
					top.names = nil
				}
			}
			i = j
		}
	}
	return ""
}

// foldName folds a name as encoding/json does to match it to a field (ASCII letters to upper case,
// other runes to the upper case of their lower case, so the Kelvin sign is K): two names fold alike
// exactly when bytes.EqualFold says they are equal.
func foldName(name []byte) string {
	if len(name) == 0 {
		return ""
	}
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); {
		if c := name[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		out = utf8.AppendRune(out, unicode.ToUpper(unicode.ToLower(r)))
		i += n
	}
	return string(out)
}

// DecodeError is a body or a config that could not be read as one JSON object. Field names the field at
// fault when one is (a wrong type or value, a name given twice), so that a form can show Reason next
// to it; Reason then reads after the field's name, as a config's validation errors do.
type DecodeError struct {
	Field  string
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

const notAnObject = "the body must be a JSON object"

// failingMember finds the member of the object b whose value alone fails to decode into a fresh value
// of v's type, in the order b names them, and that failure. encoding/json names the field of a wrong
// type but not of a value its type's own UnmarshalJSON refused (a time that is not RFC 3339, an
// increment that is neither an amount nor a table), and a form needs the field to show the error by.
func failingMember(b []byte, v any) (string, error) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil
	}
	for dec.More() {
		tok, err := dec.Token()
		name, ok := tok.(string)
		var raw json.RawMessage
		if err != nil || !ok || dec.Decode(&raw) != nil {
			return "", nil
		}
		one, _ := json.Marshal(map[string]json.RawMessage{name: raw})
		if err := json.Unmarshal(one, reflect.New(t.Elem()).Interface()); err != nil {
			return name, err
		}
	}
	return "", nil
}

// decodeError says what is wrong with b, which encoding/json refused to decode into v with err, and
// in which field.
func decodeError(err error, b []byte, v any) *DecodeError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &DecodeError{Reason: fmt.Sprintf("malformed JSON at offset %d", syn.Offset)}
	case errors.As(err, &typ) && typ.Field == "":
		return &DecodeError{Reason: notAnObject}
	case errors.As(err, &typ):
		return &DecodeError{Field: typ.Field, Reason: "must be " + typeName(typ.Type)}
	case errors.Is(err, io.EOF):
		return &DecodeError{Reason: "empty body"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &DecodeError{Reason: "malformed JSON: the body ends inside the object"}
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		return &DecodeError{Field: strings.TrimSuffix(f, `"`), Reason: "unknown field"}
	}
	// A type's own UnmarshalJSON refused a value: encoding/json does not say whose.
	f, ferr := failingMember(b, v)
	var tim *time.ParseError
	switch {
	case f == "":
		return &DecodeError{Reason: err.Error()}
	case errors.As(ferr, &tim) || strings.Contains(ferr.Error(), "Time.UnmarshalJSON"):
		return &DecodeError{Field: f, Reason: `must be an RFC 3339 time such as "2026-12-24T18:00:00Z"`}
	}
	return &DecodeError{Field: f, Reason: ferr.Error()}
}

// typeName says in a client's words what a field of type t holds.
func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Duration]():
		return `a duration such as "90s" or "10m"`
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "a list"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "an object"
	}
	return "of type " + t.String()
}

// MergePatch applies patch, a JSON merge patch of the fields to change (RFC 7396), to old's JSON and
// returns the result, for its domain to decode and check as a whole config: an operator changes a
// field or two without sending the rest, which may be a drop's hundred thousand codes. patch must be
// one JSON object; that refusal is a *DecodeError.
func MergePatch(old any, patch []byte) ([]byte, error) {
	var p map[string]json.RawMessage
	if err := DecodeObject(patch, &p); err != nil || p == nil {
		if de, _ := errors.AsType[*DecodeError](err); de != nil && de.Field != "" { // a field given twice
			return nil, de
		}
		return nil, &DecodeError{Reason: "a patch is one JSON object of the fields to change"}
	}
	base, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	return mergePatch(base, patch)
}

// mergePatch applies the JSON merge patch to the JSON value target (RFC 7396): a patch that is an
// object changes target's members one by one, a null member removing one and an object member merging
// into it; any other patch replaces target.
func mergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if json.Unmarshal(patch, &p) != nil || p == nil {
		return patch, nil
	}
	var t map[string]json.RawMessage
	if json.Unmarshal(target, &t) != nil || t == nil {
		t = map[string]json.RawMessage{}
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(t, k)
			continue
		}
		m, err := mergePatch(t[k], v)
		if err != nil {
			return nil, err
		}
		t[k] = m
	}
	return json.Marshal(t)
}
