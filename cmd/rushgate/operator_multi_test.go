package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestOperatorsShareRedis: an operator made on one instance works on the other at once, the audit log
// both share names her, and taken back on the other she is refused on both within operator.Fresh.
func TestOperatorsShareRedis(t *testing.T) {
	in := startInstances(t, buildBinary(t), redistest.Shared(t), 2)
	a, b := in[0].base, in[1].base
	code, made, _ := do(t, "POST", a+"/v1/operators", testAdminKey, `{"name": "mina", "role": "editor"}`)
	key, _ := made["key"].(string)
	if code != 201 || !strings.HasPrefix(key, operator.KeyPrefix) {
		t.Fatalf("POST /v1/operators: %d %v", code, made)
	}
	if code, body, _ := do(t, "PUT", b+"/v1/rooms/shared", key, `{"capacity": 5}`); code != 200 {
		t.Fatalf("the other instance refused her key: %d %v", code, body)
	}
	_, audit, _ := do(t, "GET", a+"/v1/audit?kind=room&id=shared", testAdminKey, "")
	entries, _ := audit["entries"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["by"] != "mina" {
		t.Fatalf("the shared audit log: %v", audit)
	}
	if code, body, _ := do(t, "GET", b+"/v1/backup", key, ""); code != 403 || errorCode(body) != "forbidden" {
		t.Fatalf("an editor's backup: %d %v", code, body)
	}
	if code, body, _ := do(t, "DELETE", b+"/v1/operators/mina", testAdminKey, ""); code != 200 {
		t.Fatalf("DELETE: %d %v", code, body)
	}
	for _, base := range []string{a, b} {
		deadline := time.Now().Add(operator.Fresh + 2*time.Second)
		for {
			code, _, _ := do(t, "GET", base+"/v1/rooms", key, "")
			if code == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still takes a key taken back: %d", base, code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
