package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/redistest"
)

// TestInstancesShareHistory runs three instances on one Redis: each samples every second, and all of
// them serve one history with one sample a second, the same lists and the same audit log.
func TestInstancesShareHistory(t *testing.T) {
	addr := redistest.Shared(t)
	in := startInstances(t, buildBinary(t), addr, 3)
	now := time.Now().UTC()
	for _, put := range []struct{ path, body string }{
		{"/v1/rooms/h", `{"capacity": 2}`},
		{"/v1/drops/h", fmt.Sprintf(`{"stock": 10, "opens_at": %q}`, now.Format(time.RFC3339))},
		{"/v1/auctions/h", fmt.Sprintf(`{"title": "Lot", "currency": "KRW", "start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q}`,
			now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))},
	} {
		if code, body, _ := do(t, "PUT", in[0].base+put.path, testAdminKey, put.body); code != 200 {
			t.Fatalf("PUT %s: %d %v", put.path, code, body)
		}
	}
	for i := range 6 {
		if code, _, _ := do(t, "POST", in[i%3].base+"/v1/rooms/h/join", "", ""); code != 200 {
			t.Fatalf("join: %d", code)
		}
		time.Sleep(400 * time.Millisecond)
	}

	// Wait for three samples, the last counting all six visitors: on a loaded machine the instances'
	// once-a-second samplers may start late, so the test waits for what it checks rather than a time.
	histories := make([][]any, 3)
	var n int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		for i, x := range in {
			code, body, _ := do(t, "GET", x.base+"/v1/rooms/h/history", testAdminKey, "")
			if code != 200 {
				t.Fatalf("history from instance %d: %d %v", i, code, body)
			}
			histories[i], _ = body["samples"].([]any)
		}
		n = min(len(histories[0]), len(histories[1]), len(histories[2]))
		if n >= 3 && visitorsIn(histories[0][len(histories[0])-1]) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 seconds, %d samples in every instance's history, want 3 with 6 visitors last: %v", n, histories[0])
		}
	}
	for i := 1; i < 3; i++ {
		if !reflect.DeepEqual(histories[0][:n], histories[i][:n]) {
			a, _ := json.Marshal(histories[0][:n])
			b, _ := json.Marshal(histories[i][:n])
			t.Fatalf("instances 0 and %d serve different histories:\n%s\n%s", i, a, b)
		}
	}
	var last time.Time
	for _, s := range histories[0] {
		at, err := time.Parse(time.RFC3339, s.(map[string]any)["t"].(string))
		if err != nil || !at.After(last) {
			t.Fatalf("samples not one a second: %v after %v (%v)", at, last, err)
		}
		last = at
	}
	for _, kind := range []string{"drops", "auctions"} {
		if code, body, _ := do(t, "GET", in[2].base+"/v1/"+kind+"/h/history", testAdminKey, ""); code != 200 || len(body["samples"].([]any)) < 2 {
			t.Fatalf("%s history on instance 2: %d %v", kind, code, body)
		}
	}
	for i, x := range in {
		_, rooms, _ := do(t, "GET", x.base+"/v1/rooms", testAdminKey, "")
		_, drops, _ := do(t, "GET", x.base+"/v1/drops", testAdminKey, "")
		_, audit, _ := do(t, "GET", x.base+"/v1/audit", testAdminKey, "")
		if len(rooms["rooms"].([]any)) != 1 || len(drops["drops"].([]any)) != 1 || len(audit["entries"].([]any)) != 3 {
			t.Fatalf("instance %d lists %v, %v, audit %v", i, rooms, drops, audit)
		}
	}
}

// visitorsIn counts the visitors, waiting and active, of a room's history sample.
func visitorsIn(sample any) float64 {
	m, _ := sample.(map[string]any)
	waiting, _ := m["waiting"].(float64)
	active, _ := m["active"].(float64)
	return waiting + active
}

// TestListsPageOverLeftovers: on Redis a list's catalog is a key apart from its entities, so a delete
// whose second step failed leaves an id listed without a drop or an auction. Paging with next_after
// must still reach every drop and auction after it: a page is short only at the end of the list.
func TestListsPageOverLeftovers(t *testing.T) {
	addr, prefix := redistest.Shared(t), prefixOf(t)
	base, _ := serveInProcess(t, "--redis", "redis://"+addr, "--redis-prefix", prefixOf(t))
	now := time.Now().UTC()
	bodies := map[string]string{
		"drops": fmt.Sprintf(`{"stock": 10, "opens_at": %q}`, now.Format(time.RFC3339)),
		"auctions": fmt.Sprintf(`{"title": "Lot", "currency": "KRW", "start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q}`,
			now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)),
	}
	rdb := redistest.Client(t, addr)
	for kind, body := range bodies {
		var want []string
		for i := range 5 {
			id := fmt.Sprintf("x%d", i)
			if code, b, _ := do(t, "PUT", base+"/v1/"+kind+"/"+id, testAdminKey, body); code != 200 {
				t.Fatalf("PUT %s %s: %d %v", kind, id, code, b)
			}
			want = append(want, id)
		}
		// Leftovers between x1 and x2, and after the last.
		for _, id := range []string{"x1a", "x1b", "x1c", "x9"} {
			cmd := rdb.B().Zadd().Key(prefix+":catalog:"+kind).ScoreMember().ScoreMember(0, id).Build()
			if err := rdb.Do(context.Background(), cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for after, pages := "", 0; ; pages++ {
			code, b, _ := do(t, "GET", base+"/v1/"+kind+"?limit=2&after="+after, testAdminKey, "")
			if code != 200 || pages > 5 {
				t.Fatalf("%s page %d: %d %v", kind, pages, code, b)
			}
			for _, x := range b[kind].([]any) {
				got = append(got, x.(map[string]any)["id"].(string))
			}
			if after = b["next_after"].(string); after == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paging through %s found %v, want %v", kind, got, want)
		}
	}
}
