package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rushgate/rushgate/internal/console"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/vault"
)

// withOperators keeps operators in a vault of the test's own, for the API and the console both; the
// roster audits into the test's audit log.
func withOperators(t *testing.T) option {
	dir := t.TempDir()
	return func(c *httpapi.Config, _ *room.Store) {
		if c.Audit == nil {
			c.Audit = newAudit(t)
		}
		c.Operators = operator.New(vault.Dir(dir), operator.Options{Audit: c.Audit, Clock: c.Clock})
		c.Console = console.New(console.Config{AdminKey: adminKey, Operators: c.Operators, Clock: c.Clock})
	}
}

// TestOperators: the owner hands out keys; an editor changes rooms (and the audit log names her) but
// neither hands out keys nor takes backups; a viewer only reads; a key taken back stops at once.
func TestOperators(t *testing.T) {
	e := setup(t, withOperators(t))
	e.want(e.do("GET", "/v1/operators", adminKey, ""), 200, "")
	add := func(name, role string) string {
		t.Helper()
		r := e.do("POST", "/v1/operators", adminKey, `{"name": "`+name+`", "role": "`+role+`"}`)
		e.want(r, 201, "")
		if r.str("name") != name || r.str("role") != role || !strings.HasPrefix(r.str("key"), operator.KeyPrefix) ||
			r.str("created_at") == "" || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("a new operator: %v %v", r.body, r.header)
		}
		return r.str("key")
	}
	mina, jun := add("mina", "editor"), add("jun", "viewer")
	ops := list(e.do("GET", "/v1/operators", adminKey, ""), "operators")
	if len(ops) != 2 || ops[0]["name"] != "jun" || ops[1]["name"] != "mina" || ops[1]["role"] != "editor" {
		t.Fatalf("operators: %v", ops)
	}
	for _, op := range ops {
		for k := range op {
			if k != "name" && k != "role" && k != "created_at" {
				t.Fatalf("the list shows %q", k)
			}
		}
	}

	// Refusals of the owner's calls.
	e.want(e.do("POST", "/v1/operators", adminKey, `{"name": "mina", "role": "viewer"}`), 409, "operator_exists")
	for _, bad := range []string{`{"name": "admin", "role": "editor"}`, `{"name": "a b", "role": "editor"}`, `{"name": "x", "role": "owner"}`,
		`{"name": "x"}`, `{"name": "", "role": "viewer"}`} {
		e.want(e.do("POST", "/v1/operators", adminKey, bad), 400, "invalid_request")
	}
	e.want(e.do("POST", "/v1/operators", adminKey, `{"name": "x", "role": "viewer", "key": "mine"}`), 400, "invalid_json")
	e.want(e.do("POST", "/v1/operators", adminKey, `{"name": "x"`), 400, "invalid_json")
	e.want(e.do("DELETE", "/v1/operators/nobody", adminKey, ""), 404, "operator_not_found")

	// The editor changes rooms, as herself.
	e.want(e.do("PUT", "/v1/rooms/sale", mina, `{"capacity": 2}`), 200, "")
	e.want(e.do("PATCH", "/v1/rooms/sale", mina, `{"paused": true}`), 200, "")
	entries := list(e.do("GET", "/v1/audit?kind=room&id=sale", jun, ""), "entries")
	if len(entries) != 2 || entries[0]["by"] != "mina" || entries[1]["by"] != "mina" {
		t.Fatalf("the room's changes: %v", entries)
	}
	e.want(e.do("PATCH", "/v1/rooms/sale", adminKey, `{"paused": false}`), 200, "")
	if entries := list(e.do("GET", "/v1/audit?kind=room&id=sale&limit=1", adminKey, ""), "entries"); entries[0]["by"] != "admin" {
		t.Fatalf("the owner's change: %v", entries)
	}
	// ...but is not the owner.
	for _, c := range [][2]string{{"GET", "/v1/operators"}, {"POST", "/v1/operators"}, {"DELETE", "/v1/operators/jun"},
		{"GET", "/v1/backup"}, {"POST", "/v1/keys/rotate"}} {
		r := e.do(c[0], c[1], mina, `{"name": "z", "role": "editor"}`)
		e.want(r, 403, "forbidden")
		if !strings.Contains(r.body["error"].(map[string]any)["message"].(string), "admin key") {
			t.Fatalf("%s %s: %v", c[0], c[1], r.body)
		}
	}
	// The viewer reads, and changes nothing.
	e.want(e.do("GET", "/v1/rooms/sale", jun, ""), 200, "")
	metrics, _ := http.NewRequest("GET", e.srv.URL+"/metrics", nil)
	metrics.Header.Set("Authorization", "Bearer "+jun)
	if res, err := http.DefaultClient.Do(metrics); err != nil || res.StatusCode != 200 {
		t.Fatalf("a viewer's scrape: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	for _, c := range [][2]string{{"PATCH", "/v1/rooms/sale"}, {"DELETE", "/v1/rooms/sale"}, {"POST", "/v1/visitors"}, {"GET", "/v1/operators"}} {
		e.want(e.do(c[0], c[1], jun, `{"paused": true}`), 403, "forbidden")
	}
	if r := e.do("GET", "/v1/rooms/sale", adminKey, ""); r.body["paused"] == true {
		t.Fatal("a viewer's refused change was made")
	}
	// Not a key: a stranger's, a key of the shape, the admin key with the prefix.
	for _, k := range []string{mina + "x", operator.KeyPrefix + "nobody", operator.KeyPrefix + adminKey} {
		e.want(e.do("GET", "/v1/rooms", k, ""), 401, "unauthorized")
	}

	// Taken back: the key stops at once on this instance.
	if r := e.do("DELETE", "/v1/operators/mina", adminKey, ""); r.code != 200 || r.body["deleted"] != true || r.str("id") != "mina" {
		t.Fatalf("delete: %d %v", r.code, r.body)
	}
	e.want(e.do("GET", "/v1/rooms", mina, ""), 401, "unauthorized")
	made := list(e.do("GET", "/v1/audit?kind=operator", adminKey, ""), "entries")
	if len(made) != 3 || made[0]["action"] != "delete" || made[0]["id"] != "mina" || made[0]["by"] != "admin" {
		t.Fatalf("the operators' changes: %v", made)
	}
	for _, m := range made {
		if b, _ := json.Marshal(m); strings.Contains(string(b), operator.KeyPrefix) {
			t.Fatalf("the audit log shows a key: %v", m)
		}
	}
}

// TestOperatorsOff: a server without a roster says so, and operator keys open nothing.
func TestOperatorsOff(t *testing.T) {
	e := setup(t)
	e.want(e.do("GET", "/v1/operators", adminKey, ""), 409, "operators_off")
	e.want(e.do("POST", "/v1/operators", adminKey, `{"name": "mina", "role": "editor"}`), 409, "operators_off")
	e.want(e.do("GET", "/v1/rooms", operator.KeyPrefix+"x", ""), 401, "unauthorized")
}
