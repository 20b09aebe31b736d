package rushgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
		return &DecodeError{Field: jsonField(err), Reason: jsonReason(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &DecodeError{Reason: "unexpected data after the JSON object"}
	}
	if f := repeatedName(b); f != "" {
		return &DecodeError{Field: f, Reason: fmt.Sprintf("field %q is given twice", f)}
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

// DecodeError is a config that could not be read as JSON; Field names the field at fault when one is
// (a wrong type, an unknown name), so that a form can show the reason next to it.
type DecodeError struct {
	Field  string
	Reason string
}

func (e *DecodeError) Error() string { return e.Reason }

// DecodeField returns the field a *DecodeError in err names, "" for none.
func DecodeField(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Field
	}
	return ""
}

const notAnObject = "the body must be a JSON object"

func jsonField(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return typ.Field
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		return strings.TrimSuffix(f, `"`)
	}
	return ""
}

func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at offset %d", syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return notAnObject
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be of type %s", typ.Field, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty body"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the body ends inside the object"
	default:
		return err.Error()
	}
}
