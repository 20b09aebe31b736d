package apitest

import (
	"net/http"
	"testing"
)

// failures records what Check would fail a test for.
type failures struct {
	testing.TB
	n int
}

func (f *failures) Helper()               {}
func (f *failures) Fatalf(string, ...any) { f.n++ }

// TestCheck: Check fails a 5xx, and a JSON refusal without an error code and a message; it lets any
// success, a JSON refusal that names both, and a refusal that is a page pass.
func TestCheck(t *testing.T) {
	req, ok := Request("http://x", []string{"/v1/rooms/{x}/join"}, []string{"POST"}, 0, 0, "r", "", "", Callers{"", "admin", "v"}, 1)
	if !ok || req.URL.Path != "/v1/rooms/r/join" || req.Header.Get("Authorization") != "Bearer admin" {
		t.Fatalf("Request: %v %v", req, ok)
	}
	if _, ok := Request("http://x", []string{"/{x}"}, []string{"GET"}, 0, 0, "%zz", "", "", Callers{}, 0); ok {
		t.Fatal("Request built a path that no client could send")
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	for _, c := range []struct {
		status int
		header http.Header
		answer string
		fails  bool
	}{
		{200, jsonHeader, `{}`, false},
		{201, http.Header{}, `event: status`, false},
		{404, jsonHeader, `{"error": {"code": "room_not_found", "message": "no such room"}}`, false},
		{404, http.Header{"Content-Type": {"text/html; charset=utf-8"}}, `<!doctype html>`, false},
		{400, jsonHeader, `{"error": {"message": "bad"}}`, true},
		{400, jsonHeader, `{"error": {"code": "invalid_request"}}`, true},
		{400, jsonHeader, `not json`, true},
		{500, jsonHeader, `{"error": {"code": "internal", "message": "x"}}`, true},
		{503, http.Header{}, ``, true},
	} {
		f := &failures{TB: t}
		Check(f, req, "", c.status, c.header, []byte(c.answer))
		if (f.n > 0) != c.fails {
			t.Errorf("%d %s: failed %v, want %v", c.status, c.answer, f.n > 0, c.fails)
		}
	}
}
