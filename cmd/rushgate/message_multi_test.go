package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestMessageReachesOtherInstances: the room's message, changed through one instance, reaches a
// visitor waiting on another's event stream without a reload, within the time the README promises.
func TestMessageReachesOtherInstances(t *testing.T) {
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	a, b := in[0].base, in[1].base
	if code, body, _ := do(t, "PUT", a+"/v1/rooms/told", testAdminKey, `{"capacity": 1, "idle_timeout": "1h", "grace": "1h"}`); code != 200 {
		t.Fatalf("PUT: %d %v", code, body)
	}
	do(t, "POST", a+"/v1/rooms/told/join", "", "") // admitted; the next waits
	_, waiting, _ := do(t, "POST", a+"/v1/rooms/told/join", "", "")
	tok, _ := waiting["visitor_token"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := visitorEvents(ctx, t, b+"/v1/rooms/told/events", tok)
	defer res.Body.Close()
	heard := make(chan string, 4)
	go func() {
		defer close(heard)
		sc := bufio.NewScanner(res.Body)
		event := ""
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				event = name
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "announcement" {
				var m struct{ Message string }
				_ = json.Unmarshal([]byte(data), &m)
				heard <- m.Message
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // the stream's first status
	said := time.Now()
	if code, body, _ := do(t, "PATCH", a+"/v1/rooms/told", testAdminKey, `{"page": {"message": "Seats remain."}}`); code != 200 {
		t.Fatalf("PATCH: %d %v", code, body)
	}
	select {
	case msg := <-heard:
		if msg != "Seats remain." {
			t.Fatalf("heard %q", msg)
		}
		t.Logf("the other instance's stream heard the message %v after it was changed", time.Since(said).Round(100*time.Millisecond))
		if late := time.Since(said); late > 12*time.Second {
			t.Fatalf("heard after %v; the README says about ten seconds", late)
		}
	case <-ctx.Done():
		t.Fatal("the other instance's stream never heard the message")
	}
}

// visitorEvents opens the event stream at url as the visitor of token tok, failing the test unless it
// is answered 200.
func visitorEvents(ctx context.Context, t *testing.T, url, tok string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("events at %s: %v %v", url, res, err)
	}
	return res
}
