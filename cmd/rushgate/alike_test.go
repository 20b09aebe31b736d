package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestBackendsAnswerAlike sends the same random calls, by the same operator and visitors, to an
// instance on the embedded backend and one on Redis, and wants the same status and the same answer
// from both, every time (but for what differs by nature, see answer). The conformance suite defines
// each store; this finds where the services and the API over them part ways, as comparisons like it
// found on Redis a join to a room that does not exist answered as a switch, a deleted auction with
// bids, and a replaced auction that kept its old room; and, comparing whole answers, joins told to
// wait in a room with room for them, and an auction made again after a delete numbered apart.
// ALIKE_SEED=N draws another sequence, to look further.
func TestBackendsAnswerAlike(t *testing.T) {
	embedded, _ := serveInProcess(t)
	onRedis, _ := serveInProcess(t, "--redis", "redis://"+redistest.Shared(t), "--redis-prefix", prefixOf(t))
	compareAnswers(t, alikeSeed(2), alikeCalls(), [2]string{testAdminKey, testAdminKey}, func(int) [2]string { return [2]string{embedded, onRedis} })
}

// alikeSeed is the sequence of calls a comparison draws: ALIKE_SEED, or def.
func alikeSeed(def uint64) uint64 {
	if s, err := strconv.ParseUint(os.Getenv("ALIKE_SEED"), 10, 64); err == nil {
		return s
	}
	return def
}

// TestBackendsAnswerAlikeOnCluster is TestBackendsAnswerAlike against a 3-master Cluster, where a join
// that may move a visitor takes two slots and several steps: comparing so found a refused switch, and
// then a switch into the room that had admitted the visitor, that left its line pointer naming that
// room, and the next join taking the visitor out of its line without a switch.
func TestBackendsAnswerAlikeOnCluster(t *testing.T) {
	embedded, _ := serveInProcess(t)
	url := "redis://" + strings.Join(redistest.SharedCluster(t), ",redis://")
	onCluster, _ := serveInProcess(t, "--redis", url, "--redis-prefix", prefixOf(t))
	// Seed 5 met the refused switch when the calls were drawn as they were then; conformance
	// WaitingElsewhere holds it now, as it holds the switch into the admitting room (ALIKE_SEED=20 then).
	compareAnswers(t, alikeSeed(5), alikeCalls(), [2]string{testAdminKey, testAdminKey}, func(int) [2]string { return [2]string{embedded, onCluster} })
}

// TestBackendsAnswerAlikeAcrossCrashes is TestBackendsAnswerAlike with the embedded instance killed
// (SIGKILL, a second after the last call: the most a crash may lose) and started again on its data
// every 100 calls: what it answered before a crash it answers after, as Redis does. Comparing so found
// a crash giving two visitors one admission id, a deleted room's figures coming back, a rate counting
// admissions made before it, a visitor back in a line it had moved out of, and bidders forgotten.
func TestBackendsAnswerAlikeAcrossCrashes(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, embedded := startEmbedded(t, bin, data)
	onRedis, _ := serveInProcess(t, "--redis", "redis://"+redistest.Shared(t), "--redis-prefix", prefixOf(t))
	compareAnswers(t, alikeSeed(1), alikeCalls(), [2]string{restartKey, testAdminKey}, func(n int) [2]string {
		if n > 0 && n%100 == 0 {
			time.Sleep(1100 * time.Millisecond) // a crash loses at most the last second of line changes
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmd, embedded = startEmbedded(t, bin, data)
		}
		return [2]string{embedded, onRedis}
	})
}

// compareAnswers sends calls random calls drawn from seed to two instances, the embedded one first,
// by the same operator (admin[i] is instance i's key) and visitors, and wants the same status and the
// same answer from both, every time (but for what differs by nature, see answer). bases gives the
// instances' URLs before call n, which it may restart.
func compareAnswers(t *testing.T, seed uint64, calls int, admin [2]string, bases func(n int) [2]string) {
	t.Helper()
	g := newCalls(rand.New(rand.NewPCG(seed, seed)), time.Now())
	tokens := map[string][2]string{}
	subjects := map[string]string{} // either backend's visitor id -> the subject it was made for
	for _, v := range g.visitors {
		var tok [2]string
		for i, base := range bases(0) {
			_, b, _ := do(t, "POST", base+"/v1/visitors", admin[i], fmt.Sprintf(`{"subject": %q}`, v))
			tok[i], _ = b["visitor_token"].(string)
			id, _ := b["visitor_id"].(string)
			subjects[id] = v
		}
		tokens[v] = tok
	}
	today := time.Now().UTC().Format("2006-01-02T")
	var history []string
	for n := range calls {
		c := g.next()
		ask := func(at [2]string) (got [2]string) {
			for i, base := range at {
				tok := admin[i]
				if c.who != "" {
					tok = tokens[c.who][i]
				}
				got[i] = answer(t, c, base, tok, subjects, today)
			}
			return got
		}
		at := bases(n)
		got := ask(at)
		// A change wakes its room's gate, which admits on its own goroutine: a status read right after
		// may come before the step on Redis, a round trip away, and after it in process. A status is only
		// read, so it is read again for a moment before the answers count as apart.
		for try := 0; got[0] != got[1] && c.method == "GET" && strings.HasSuffix(c.path, "/status") && try < 20; try++ {
			time.Sleep(50 * time.Millisecond)
			got = ask(at)
		}
		line := fmt.Sprintf("%d %s %s %s by %q: embedded %s, redis %s", n, c.method, c.path, c.body, c.who, got[0], got[1])
		history = append(history, line)
		if got[0] != got[1] || strings.HasPrefix(got[0], "5") {
			t.Fatalf("the backends answered apart (seed %d):\n%s", seed, strings.Join(history[max(0, len(history)-alikeShown()):], "\n"))
		}
	}
}

// call is one request of TestBackendsAnswerAlike: by the operator when who is "", else by a visitor.
type call struct{ method, path, body, who, key string }

// answer sends c and returns its status and its JSON body in a form both backends give alike: what
// differs by nature (tokens, ETAs, cursors, generated codes and keys) left out, times of now told only
// by their precision, and visitor ids, which each instance derives with its own key, named by their
// subjects.
func answer(t *testing.T, c call, base, tok string, subjects map[string]string, today string) string {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequest(c.method, base+c.path, body)
	req.Header.Set("Authorization", "Bearer "+tok)
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b any
	if json.NewDecoder(res.Body).Decode(&b) != nil {
		return fmt.Sprint(res.StatusCode)
	}
	js, _ := json.Marshal(alike(b, subjects, today))
	return fmt.Sprint(res.StatusCode, " ", string(js))
}

// alike rewrites a decoded answer for answer.
func alike(v any, subjects map[string]string, today string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch {
			case k == "code" && strings.Contains(fmt.Sprint(e), "-"), // a generated code, not an error's
				k == "at" || k == "codes" || k == "key" || k == "cursor" || k == "next_before",
				strings.HasSuffix(k, "token") || strings.HasPrefix(k, "eta"):
				continue
			}
			out[k] = alike(e, subjects, today)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = alike(e, subjects, today)
		}
		return out
	case string:
		if strings.HasPrefix(v, today) { // a time of now, which both tell to the millisecond
			if at, err := time.Parse(time.RFC3339Nano, v); err == nil && at.Nanosecond()%int(time.Millisecond) != 0 {
				return "now, finer than a millisecond"
			}
			return "now"
		}
		if s, ok := subjects[v]; ok {
			return s
		}
	}
	return v
}

// calls draws the requests of TestBackendsAnswerAlike: configs put, patched and deleted, joins, claims,
// bids and reads, over a few ids that rooms, drops and auctions share, so that they meet.
type calls struct {
	r                 *rand.Rand
	visitors, ids     []string
	rooms, drops      []string
	dropPatches, lots []string
	lotPatches        []string
}

func newCalls(r *rand.Rand, now time.Time) *calls {
	past := "2020-01-01T00:00:00Z"
	future := now.Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	starts := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	ends := now.Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339)
	lot := func(extra string) string {
		return fmt.Sprintf(`{"title": "t", "currency": "EUR", "start_price": 100, "increment": 10, "starts_at": %q, "ends_at": %q%s}`, starts, ends, extra)
	}
	return &calls{r: r, visitors: []string{"u0", "u1", "u2", "u3", "u4", "u5"}, ids: []string{"r1", "r2", "d1", "d2", "a1", "x"},
		rooms: []string{`{"capacity": 1}`, `{"capacity": 2, "session_ttl": "1h"}`, `{"capacity": 1, "drop": "d1"}`,
			`{"capacity": 1, "entry": "invite"}`, `{"capacity": 0}`, `{"rate": {"admits": 1, "per": "1m"}}`,
			`{"capacity": 1, "mode": "reject"}`, `{"capacity": 1, "paused": true}`, `{"capacity": 1, "drop": "d2"}`},
		drops: []string{fmt.Sprintf(`{"stock": 3, "opens_at": %q}`, past), fmt.Sprintf(`{"stock": 2, "opens_at": %q, "room": "r1"}`, past),
			fmt.Sprintf(`{"stock": 2, "opens_at": %q}`, future), fmt.Sprintf(`{"stock": 1, "opens_at": %q, "per_visitor": 2}`, past),
			fmt.Sprintf(`{"stock": 2, "opens_at": %q, "identity": "site"}`, past), fmt.Sprintf(`{"stock": 2, "opens_at": %q, "codes": ["A", "B"]}`, past),
			fmt.Sprintf(`{"stock": 5, "opens_at": %q, "room": "r2", "release_on_claim": true}`, past)},
		dropPatches: []string{`{"stock": 10}`, `{"stock": 1}`, `{"title": "t"}`, `{"message": "m"}`, `{"per_visitor": 3}`, `{"room": null}`,
			fmt.Sprintf(`{"closes_at": %q}`, past), fmt.Sprintf(`{"opens_at": %q}`, future), `{"codes": ["A", "B", "C"]}`, `{"release_on_claim": true}`},
		lots: []string{lot(""), lot(`, "buy_now_price": 500`), lot(`, "room": "r1"`), lot(`, "reserve_price": 300, "message": "m"`)},
		lotPatches: []string{`{"title": "x"}`, `{"message": "m"}`, `{"start_price": 5}`, `{"room": null}`, `{"room": "r1"}`,
			`{"buy_now_price": null}`, `{"reserve_price": 300}`, `{"soft_close": {"window": "1m", "extend": "1m"}}`},
	}
}

func (g *calls) pick(from []string) string { return from[g.r.IntN(len(from))] }

func (g *calls) next() call {
	id, v := g.pick(g.ids), g.pick(g.visitors)
	switch k := g.r.IntN(100); {
	case k < 8:
		return call{method: "PUT", path: "/v1/rooms/" + id, body: g.pick(g.rooms)}
	case k < 12:
		return call{method: "PATCH", path: "/v1/rooms/" + id, body: g.pick([]string{`{"paused": false}`, `{"capacity": 3}`, `{"drop": null}`})}
	case k < 14:
		return call{method: "DELETE", path: "/v1/rooms/" + id}
	case k < 22:
		return call{method: "PUT", path: "/v1/drops/" + id, body: g.pick(g.drops)}
	case k < 27:
		return call{method: "PATCH", path: "/v1/drops/" + id, body: g.pick(g.dropPatches)}
	case k < 29:
		return call{method: "DELETE", path: "/v1/drops/" + id}
	case k < 31:
		return call{method: "POST", path: "/v1/drops/" + id + "/" + g.pick([]string{"open", "close"})}
	case k < 37:
		return call{method: "PUT", path: "/v1/auctions/" + id, body: g.pick(g.lots)}
	case k < 40:
		return call{method: "PATCH", path: "/v1/auctions/" + id, body: g.pick(g.lotPatches)}
	case k < 42:
		return call{method: "DELETE", path: "/v1/auctions/" + id}
	case k < 44:
		return call{method: "POST", path: "/v1/auctions/" + id + "/" + g.pick([]string{"end", "extend"}), body: `{"by": "1h"}`}
	case k < 50:
		return call{method: "POST", path: "/v1/rooms/" + id + "/join", who: v}
	case k < 52:
		return call{method: "POST", path: "/v1/rooms/" + id + "/join", who: v, body: g.pick([]string{`{"switch": true}`, `{"invite": "K1"}`})}
	case k < 55:
		return call{method: "POST", path: "/v1/rooms/" + id + "/" + g.pick([]string{"leave", "release"}), who: v}
	case k < 63:
		return call{method: "POST", path: "/v1/drops/" + id + "/claims", who: v}
	case k < 67:
		return call{method: "POST", path: "/v1/drops/" + id + "/claims", who: v, key: g.pick([]string{"k1", "k2"})}
	case k < 77:
		return call{method: "POST", path: "/v1/auctions/" + id + "/bids", who: v,
			body: g.pick([]string{`{"amount": 100}`, `{"amount": 110}`, `{"amount": 150}`, `{"max_amount": 300}`, `{"amount": 1000}`})}
	case k < 79:
		return call{method: "POST", path: "/v1/auctions/" + id + "/buy-now", who: v}
	case k < 85:
		return call{method: "GET", path: fmt.Sprintf(g.pick([]string{"/v1/drops/%s", "/v1/auctions/%s", "/v1/rooms/%s", "/v1/drops/%s/claims",
			"/v1/auctions/%s/bids", "/v1/drops/%s/config", "/v1/auctions/%s/config"}), id)}
	case k < 90:
		return call{method: "GET", path: fmt.Sprintf(g.pick([]string{"/v1/drops/%s/claims/mine", "/v1/auctions/%s/me", "/v1/rooms/%s/status"}), id), who: v}
	case k < 92:
		return call{method: "POST", path: "/v1/rooms/" + id + "/invites", body: `{"codes": ["K1", "K2"]}`}
	case k < 93:
		code := g.pick([]string{"A", "B", "C", "Z"})
		switch g.r.IntN(4) {
		case 0:
			return call{method: "GET", path: "/v1/drops/" + id + "/codes/" + code}
		case 1:
			return call{method: "POST", path: "/v1/drops/" + id + "/codes/" + code + "/redeem"}
		case 2:
			return call{method: "POST", path: "/v1/drops/" + id + "/codes/" + code + "/redeem", body: g.pick([]string{`{"order": "o1"}`, `{"order": "o2"}`})}
		default:
			return call{method: "POST", path: "/v1/drops/" + id + "/codes/" + code + "/unredeem", body: g.pick([]string{`{"order": "o1"}`, `{"order": "o2"}`, ``})}
		}
	case k < 95: // after a delete too: what is gone reads as gone everywhere
		return call{method: "GET", path: fmt.Sprintf(g.pick([]string{"/v1/auctions/%s/bids", "/v1/drops/%s/claims"}), id)}
	default:
		return call{method: "GET", path: "/v1/" + g.pick([]string{"rooms", "drops", "auctions", "audit?limit=3",
			"rooms?limit=1&after=r1", "drops?limit=1", "drops?limit=1&after=d1", "auctions?limit=1&after=a0"})}
	}
}

// alikeCalls is how many calls a comparison makes: 800, or ALIKE_CALLS.
func alikeCalls() int {
	if n, err := strconv.Atoi(os.Getenv("ALIKE_CALLS")); err == nil && n > 0 {
		return n
	}
	return 800
}

// alikeShown is how many calls a failure shows: the last 40, or ALIKE_SHOW of them.
func alikeShown() int {
	if n, err := strconv.Atoi(os.Getenv("ALIKE_SHOW")); err == nil && n > 0 {
		return n
	}
	return 40
}
