package rushgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// DecodeObject reads exactly one JSON object from r into v, refusing any other value, unknown fields,
// a field named twice in one object and anything after the object, so that a typo in a field name, a
// pasted second value or a second object is an error rather than a setting (or a bid's amount)
// silently ignored or overridden. Configs and request bodies alike go through it. Its error says what
// was wrong in words a client can act on; each domain wraps it in its own config error. The caller
// bounds r (request bodies are read with a limit). Its errors are *DecodeError.
func DecodeObject(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return &DecodeError{Reason: err.Error()}
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return &DecodeError{Reason: notAnObject}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if reason := jsonReason(err); reason == err.Error() { // a type's UnmarshalJSON refused a value
			if f, ferr := failingMember(b, v); f != "" {
				err = &memberError{f, ferr}
			}
		}
		return &DecodeError{Field: jsonField(err), Reason: jsonReason(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &DecodeError{Reason: "unexpected data after the JSON object"}
	}
	if f := repeatedName(b); f != "" {
		return &DecodeError{Field: f, Reason: "is given twice"}
	}
	return nil
}

// repeatedName returns the dotted path (array indices left out, as encoding/json names fields) of the
// first member name that one object of the JSON text b holds twice, "" for none. encoding/json keeps
// the last of the two without a word. b is one valid JSON value.
func repeatedName(b []byte) string {
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
			if top.names[name] {
				return path(name)
			}
			top.names[name] = true
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

// memberError is the failure of one member's value, which encoding/json reports without its name.
type memberError struct {
	field string
	err   error
}

func (e *memberError) Error() string { return e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

func jsonField(err error) string {
	var typ *json.UnmarshalTypeError
	var member *memberError
	switch {
	case errors.As(err, &member):
		return member.field
	case errors.As(err, &typ):
		return typ.Field
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		return strings.TrimSuffix(f, `"`)
	}
	return ""
}

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

func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tim *time.ParseError
	var member *memberError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at offset %d", syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return notAnObject
	case errors.As(err, &typ):
		return "must be " + typeName(typ.Type)
	case errors.As(err, &member) && (errors.As(err, &tim) || strings.Contains(err.Error(), "Time.UnmarshalJSON")):
		return `must be an RFC 3339 time such as "2026-12-24T18:00:00Z"`
	case strings.HasPrefix(err.Error(), `json: unknown field "`):
		return "unknown field"
	case errors.Is(err, io.EOF):
		return "empty body"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the body ends inside the object"
	default:
		return err.Error()
	}
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
