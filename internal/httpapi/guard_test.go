package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/challenge"
)

// solve finds a nonce for a challenge answer, as a client in any language would from the README.
func solve(t *testing.T, r resp) string {
	t.Helper()
	tok, _ := r.body["challenge"].(string)
	d, _ := r.body["difficulty"].(float64)
	if tok == "" || r.body["algorithm"] != "sha256" || r.body["expires_at"] == nil {
		t.Fatalf("no challenge in %v", r.body)
	}
	for n := 0; ; n++ {
		if challenge.Solves(tok, strconv.Itoa(n), int(d)) {
			return tok + ":" + strconv.Itoa(n)
		}
	}
}

// joinWith joins with a solution header and an optional visitor token.
func (e *env) joinWith(room, solution, token string) resp {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/rooms/"+room+"/join", nil)
	if solution != "" {
		req.Header.Set("Rushgate-Challenge", solution)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

func TestChallenge(t *testing.T) {
	e := setup(t)
	e.putRoom("pow", `{"capacity": 1, "challenge": {"difficulty": 10}}`)
	e.putRoom("other", `{"capacity": 1, "challenge": {"difficulty": 10}}`)
	e.want(e.do("PUT", "/v1/rooms/bad", adminKey, `{"capacity": 1, "challenge": {"difficulty": 40}}`), 400, "invalid_config")

	first := e.joinWith("pow", "", "")
	e.want(first, 401, "challenge_required")
	if first.body["difficulty"] != 10.0 {
		t.Fatalf("difficulty %v", first.body["difficulty"])
	}
	sol := solve(t, first)
	tok, _, _ := strings.Cut(sol, ":")
	wrong := "0"
	for challenge.Solves(tok, wrong, 10) {
		wrong += "0"
	}
	e.want(e.joinWith("pow", tok+":"+wrong, ""), 401, "challenge_unsolved")
	e.want(e.joinWith("other", sol, ""), 401, "challenge_other_room")
	e.want(e.joinWith("pow", "nonsense:1", ""), 401, "challenge_invalid")

	joined := e.joinWith("pow", sol, "")
	e.want(joined, 200, "")
	e.want(e.joinWith("pow", sol, ""), 401, "challenge_used")

	// The visitor that took a place needs no challenge to come back to it (a reload).
	again := e.joinWith("pow", "", joined.str("visitor_token"))
	if again.code != 200 || again.str("state") == "" {
		t.Fatalf("a reload: %d %v", again.code, again.body)
	}
	// A challenge issued to an address is not the challenge of a known visitor.
	other := e.do("POST", "/v1/visitors", adminKey, `{"subject": "s-9"}`).str("visitor_token")
	e.want(e.joinWith("pow", solve(t, e.joinWith("pow", "", "")), other), 401, "challenge_invalid")
	mine := e.joinWith("pow", "", other)
	e.want(mine, 401, "challenge_required")
	e.want(e.joinWith("pow", solve(t, mine), other), 200, "")

	// One that expires before it is used.
	late := e.joinWith("pow", "", "")
	e.clock.Advance(challenge.TTL + time.Second)
	e.want(e.joinWith("pow", solve(t, late), ""), 401, "challenge_expired")
}
