package rushgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DecodeConfig reads exactly one JSON object from r into v, refusing unknown fields and anything after
// the object, so that a typo in a field name or a pasted second object is an error rather than a
// setting silently ignored. Its error says what was wrong in words a client can act on; each domain
// wraps it in its own config error. The caller bounds r (request bodies are read with a limit).
func DecodeConfig(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(jsonReason(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
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
