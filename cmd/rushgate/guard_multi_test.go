package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/redistest"
)

// joinAt joins room at an instance with the given headers and returns the status and answer.
func joinAt(t *testing.T, base, room string, headers map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/rooms/"+room+"/join", nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	data, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(data, &body)
	return res.StatusCode, body
}

func code(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestGuardsShareRedis: on Redis, a challenge issued by one instance is solved at another and then
// refused as used everywhere, and an invite code uploaded at one instance is used once across all.
func TestGuardsShareRedis(t *testing.T) {
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	a, b := in[0].base, in[1].base
	for _, put := range []struct{ room, body string }{
		{"pow", `{"capacity": 1, "challenge": {"difficulty": 12}}`},
		{"presale", `{"capacity": 1, "entry": "invite"}`},
	} {
		if c, body, _ := do(t, "PUT", a+"/v1/rooms/"+put.room, testAdminKey, put.body); c != 200 {
			t.Fatalf("PUT: %d %v", c, body)
		}
	}
	st, body := joinAt(t, a, "pow", nil)
	if st != 401 || code(body) != "challenge_required" {
		t.Fatalf("no solution: %d %v", st, body)
	}
	tok := body["challenge"].(string)
	n := 0
	for !challenge.Solves(tok, strconv.Itoa(n), 12) {
		n++
	}
	sol := map[string]string{"Rushgate-Challenge": tok + ":" + strconv.Itoa(n)}
	if st, body := joinAt(t, b, "pow", sol); st != 200 {
		t.Fatalf("solved at the other instance: %d %v", st, body)
	}
	if st, body := joinAt(t, a, "pow", sol); st != 401 || code(body) != "challenge_used" {
		t.Fatalf("replayed at the first: %d %v", st, body)
	}

	if c, body, _ := do(t, "POST", a+"/v1/rooms/presale/invites", testAdminKey, `{"codes": ["ONE"]}`); c != 200 || body["added"] != 1.0 {
		t.Fatalf("upload: %d %v", c, body)
	}
	if st, body := joinAt(t, b, "presale", map[string]string{"Rushgate-Invite": "ONE"}); st != 200 {
		t.Fatalf("the code at the other instance: %d %v", st, body)
	}
	if st, body := joinAt(t, a, "presale", map[string]string{"Rushgate-Invite": "ONE"}); st != 403 || code(body) != "invite_invalid" {
		t.Fatalf("the code again: %d %v", st, body)
	}
}

// TestReleaseReachesEveryCheck: on Redis, an admission released at one instance is refused at once by
// the check endpoint of another, which verifies tokens offline, and by one started afterwards.
func TestReleaseReachesEveryCheck(t *testing.T) {
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	a, b := in[0].base, in[1].base
	if c, body, _ := do(t, "PUT", a+"/v1/rooms/gate", testAdminKey, `{"capacity": 1}`); c != 200 {
		t.Fatalf("PUT: %d %v", c, body)
	}
	_, j := joinAt(t, a, "gate", nil)
	vt := j["visitor_token"].(string)
	adm := ""
	for range 100 {
		_, st, _ := do(t, "GET", a+"/v1/rooms/gate/status", vt, "")
		if adm, _ = st["admission_token"].(string); adm != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	check := func(base string) int { return checkAdmission(t, base, "gate", adm) }
	if check(a) != 204 || check(b) != 204 {
		t.Fatal("an admitted visitor refused")
	}
	if c, body, _ := do(t, "POST", a+"/v1/rooms/gate/release", vt, ""); c != 200 {
		t.Fatalf("release: %d %v", c, body)
	}
	for i := 0; check(b) != 401; i++ {
		if i == 100 {
			t.Fatal("the other instance still lets the released admission through")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if check(a) != 401 {
		t.Fatal("the releasing instance lets it through")
	}
	// An instance started after the release (a deploy, a scale-out) was not listening when it was
	// announced, and refuses it all the same.
	later := startInstances(t, buildBinary(t), redistest.Shared(t), 1)[0].base
	for i := 0; check(later) != 401; i++ {
		if i == 100 {
			t.Fatal("an instance started after the release lets the released admission through")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkAdmission asks base's check endpoint (nginx's auth_request) whether the admission token adm
// lets its holder into room's site, and returns the status: 204 yes, 401 no.
func checkAdmission(t *testing.T, base, room, adm string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/rooms/"+room+"/check", nil)
	req.Header.Set("Cookie", "rg_admission="+adm)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
