package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// LinkRaces races n times, each with a drop of its own made behind room, a link of the room to the drop
// (sent to linkAt) against the drop's deletion or its move from behind the room (sent to dropAt, in
// turns), both let go at once, and fails t when the two changes break what rushgate keeps of a link:
// at most one of them is answered 200 (the other 400 invalid_config or 409 drop_followed), and
// afterwards the room follows a drop only if its link was answered 200 and the drop exists behind it.
// linkAt and dropAt may be one instance or two; the room must exist, following no drop.
func LinkRaces(t testing.TB, linkAt, dropAt, adminKey, room string, n int) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(method, url, body string) (int, map[string]any) { // safe off the test's goroutine
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		res, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(res.Body).Decode(&v)
		return res.StatusCode, v
	}
	for i := range n {
		d := fmt.Sprintf("%s-race-%d", room, i)
		if c, v := call("PUT", dropAt+"/v1/drops/"+d, `{"stock": 3, "opens_at": "2030-01-01T00:00:00Z", "room": "`+room+`"}`); c != 200 {
			t.Fatalf("drop %s: %d %v", d, c, v)
		}
		leave := []string{"DELETE", ""}
		if i%2 == 1 {
			leave = []string{"PATCH", `{"room": null}`}
		}
		var linked, left int
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; linked, _ = call("PATCH", linkAt+"/v1/rooms/"+room, `{"drop": "`+d+`"}`) })
		wg.Go(func() { <-start; left, _ = call(leave[0], dropAt+"/v1/drops/"+d, leave[1]) })
		close(start)
		wg.Wait()
		if (linked != 200 && linked != 400) || (left != 200 && left != 409) || (linked == 200 && left == 200) {
			t.Fatalf("race %d: the link answered %d and the drop's %s %d", i, linked, leave[0], left)
		}
		_, rm := call("GET", dropAt+"/v1/rooms/"+room, "")
		if follows, _ := rm["drop"].(string); follows != "" {
			if c, dr := call("GET", linkAt+"/v1/drops/"+d, ""); linked != 200 || c != 200 || dr["room"] != room {
				t.Fatalf("race %d: room %s follows %s (its link answered %d), whose drop answers %d %v", i, room, follows, linked, c, dr)
			}
		} else if linked == 200 {
			t.Fatalf("race %d: the link was answered 200 but the room follows nothing", i)
		}
		if c, v := call("PATCH", linkAt+"/v1/rooms/"+room, `{"drop": null}`); c != 200 {
			t.Fatalf("unlink after race %d: %d %v", i, c, v)
		}
	}
}
