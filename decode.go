package rushgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DecodeConfig reads exactly one JSON object from r into v, refusing unknown fields and anything after
// the object, so that a typo in a field name or a pasted second object is an error rather than a
// setting silently ignored. Its error says what was wrong in words a client can act on; each domain
// wraps it in its own config error. The caller bounds r (request bodies are read with a limit).
// Its errors are *DecodeError.
func DecodeConfig(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &DecodeError{Field: jsonField(err), Reason: jsonReason(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &DecodeError{Reason: "unexpected data after the JSON object"}
	}
	return nil
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
