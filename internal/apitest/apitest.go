// Package apitest fuzzes rushgate's HTTP API from its tests: it builds a request from a route, a
// method, an id, a query, a body and a caller, and checks the rules every answer keeps, whichever
// backend serves it.
package apitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Callers are who a fuzzed request comes from: nobody, the operator or a visitor, by their bearer
// tokens ("" for nobody).
type Callers [3]string

// Request builds the request of routes[route] (each {x} of it replaced by id) with methods[method],
// the query and the body, from callers[who], all indexes taken modulo their lengths, against base; it
// reports false for one no client could send.
func Request(base string, routes, methods []string, route, method uint8, id, query, body string, callers Callers, who uint8) (*http.Request, bool) {
	path := strings.ReplaceAll(routes[int(route)%len(routes)], "{x}", id)
	req, err := http.NewRequest(methods[int(method)%len(methods)], base+path+"?"+query, strings.NewReader(body))
	if err != nil {
		return nil, false
	}
	if tok := callers[int(who)%len(callers)]; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, true
}

// Check fails t when the answer to req (sent with body) breaks the API's rules: a 5xx (with a store
// that stays up), or a refusal in JSON without an error code and a message.
func Check(t testing.TB, req *http.Request, body string, status int, header http.Header, answer []byte) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("%s %s (%q): %d %s", req.Method, req.URL, body, status, answer)
	}
	if status >= 400 && strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(answer, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("%s %s (%q): %d with no error code: %s", req.Method, req.URL, body, status, answer)
		}
	}
}
