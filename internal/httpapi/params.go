package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rushgate/rushgate"
)

// pathID validates an id in the path: the same alphabet as room ids, safe in URLs and Redis keys.
func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if !rushgate.ValidID(id) {
		return "", apiError(http.StatusBadRequest, codeInvalidRequest, name+" ids are 1-64 characters of A-Z, a-z, 0-9, _ and -")
	}
	return id, nil
}

// pageParams reads ?after=SEQ&limit=N.
func pageParams(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return 0, 0, apiError(http.StatusBadRequest, codeInvalidRequest, "after must be a sequence number")
		}
	}
	if limit, err = limitParam(q, 100, 1000); err != nil {
		return 0, 0, err
	}
	return after, limit, nil
}

// limitParam reads ?limit=N of a list, 1 to most: def when absent.
func limitParam(q url.Values, def, most int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	limit, err := strconv.Atoi(v)
	if err != nil || limit < 1 || limit > most {
		return 0, apiError(http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("limit must be 1-%d", most))
	}
	return limit, nil
}

// roomID validates the {room} path value.
func roomID(r *http.Request) (string, error) {
	id := r.PathValue("room")
	if !rushgate.ValidID(id) {
		return "", apiError(http.StatusBadRequest, codeInvalidRoomID, "room ids are 1-64 characters of A-Z, a-z, 0-9, _ and -")
	}
	return id, nil
}

// readBody reads a request body of at most maxBody bytes.
func readBody(r *http.Request) ([]byte, error) { return readBodyUpTo(r, maxBody) }

// readBodyUpTo reads a request body of at most maxBody bytes: a longer one is 413, one that ends before
// its Content-Length 400.
func readBodyUpTo(r *http.Request, maxBody int64) ([]byte, error) {
	var body []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= maxBody {
		// The length is known: read exactly that, into one buffer of its size. A body shorter than it
		// said is an error (io.ReadFull), and net/http refuses one longer.
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	}
	if int64(len(body)) > maxBody {
		return nil, apiError(http.StatusRequestEntityTooLarge, codeBodyTooLarge, fmt.Sprintf("the body is larger than %d KiB", maxBody>>10))
	}
	if err != nil {
		return nil, apiError(http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("could not read a body of at most %d KiB", maxBody>>10))
	}
	return body, nil
}

// decode reads a JSON body into v as the configs are read (one object, no unknown or repeated field,
// nothing after it); an empty body is allowed when optional.
func decode(r *http.Request, v any, optional bool) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeBody(body, v, optional)
}

// decodeBody is decode of a body already read.
func decodeBody(body []byte, v any, optional bool) error {
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := rushgate.DecodeObject(body, v); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "the body") {
			msg = "the body is not the expected JSON object: " + msg
		}
		e := apiError(http.StatusBadRequest, codeInvalidJSON, msg)
		if de, ok := errors.AsType[*rushgate.DecodeError](err); ok {
			e.Field = de.Field
		}
		return e
	}
	return nil
}
