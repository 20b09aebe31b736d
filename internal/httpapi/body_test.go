package httpapi_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShortBodyIsNeverOK: a body shorter than its Content-Length (the client half-closes after
// sending part of it) once got 200 with an empty body. It must be refused with 400 invalid_request, or
// the connection closed without an answer; never a success.
func TestShortBodyIsNeverOK(t *testing.T) {
	e := setup(t)
	e.do(http.MethodPut, "/v1/rooms/r", adminKey, `{"capacity": 1}`)
	for _, req := range []string{
		"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"token\": \"ab",
		"PUT /v1/rooms/r HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminKey + "\r\nContent-Length: 50\r\n\r\n{\"capacity\": 7",
		"POST /v1/rooms/r/release HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{\"admission_token\"",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_request"`) {
				t.Errorf("%s: %d %s, want 400 invalid_request", strings.Fields(req)[1], res.StatusCode, body)
			}
		}
		conn.Close()
	}
	// The room was not changed by the cut PUT.
	if r := e.do(http.MethodGet, "/v1/rooms/r", adminKey, ""); r.num("capacity") != 1 {
		t.Fatalf("capacity %d after a cut PUT, want 1", r.num("capacity"))
	}
}

// TestLargeBodyIs413: a body past the limit is 413 body_too_large, whether its length is announced
// or it comes chunked, and changes nothing; it was a 400 that read like a malformed request.
func TestLargeBodyIs413(t *testing.T) {
	e := setup(t)
	e.do(http.MethodPut, "/v1/rooms/r", adminKey, `{"capacity": 1}`)
	big := `{"capacity": 7, "page": {"message": "` + strings.Repeat("m", 70<<10) + `"}}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(body) // no Len: sent chunked, ContentLength -1 at the server
		}
		req, _ := http.NewRequest(http.MethodPut, e.srv.URL+"/v1/rooms/r", body)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(out), `"body_too_large"`) {
			t.Errorf("chunked %v: %d %s, want 413 body_too_large", chunked, res.StatusCode, out)
		}
	}
	if r := e.do(http.MethodGet, "/v1/rooms/r", adminKey, ""); r.num("capacity") != 1 {
		t.Fatalf("capacity %d after a refused PUT, want 1", r.num("capacity"))
	}
	e.want(e.do(http.MethodPost, "/v1/verify", "", `{"token": "`+strings.Repeat("a", 70<<10)+`"}`), 413, "body_too_large")
}
