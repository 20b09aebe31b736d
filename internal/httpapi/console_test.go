package httpapi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/apitest"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// newAudit is an audit log as the embedded backend keeps it, in a SQLite record of the test's own.
func newAudit(t testing.TB) rushgate.Audit {
	t.Helper()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func list(r resp, key string) []map[string]any {
	items, _ := r.body[key].([]any)
	out := make([]map[string]any, len(items))
	for i, x := range items {
		out[i], _ = x.(map[string]any)
	}
	return out
}

// partStore is a room store on a Redis Cluster one of whose masters is down while down is set: the
// rooms named in on live there.
type partStore struct {
	room.Store
	on   map[string]bool
	down *atomic.Bool
}

func (s partStore) Room(ctx context.Context, id string) (room.Config, error) {
	if s.down.Load() && s.on[id] {
		return room.Config{}, fmt.Errorf("%w: dial tcp 10.0.0.7:6379: connect: connection refused", rushgate.ErrUnavailable)
	}
	return s.Store.Room(ctx, id)
}

// TestListWithPartOfTheStoreDown: the list of rooms shows those it can read and names the others as
// unavailable, page after page, rather than answering 503 for all of them because some live on a
// Cluster master that is down.
func TestListWithPartOfTheStoreDown(t *testing.T) {
	var down atomic.Bool
	e := setup(t, func(_ *httpapi.Config, s *room.Store) {
		*s = partStore{*s, map[string]bool{"b": true, "c": true}, &down}
	})
	for _, id := range []string{"a", "b", "c", "d"} {
		e.putRoom(id, `{"capacity": 1}`)
	}
	down.Store(true)
	var read, unavailable []string
	pages := 0
	for after := ""; ; {
		pages++
		page := e.do("GET", "/v1/rooms?limit=2&after="+after, adminKey, "")
		if page.code != 200 {
			t.Fatalf("a page of rooms with two unreadable: %d %v", page.code, page.body)
		}
		for _, r := range list(page, "rooms") {
			read = append(read, r["id"].(string))
		}
		ids, ok := page.body["unavailable"].([]any)
		if !ok {
			t.Fatalf("a page without its list of unavailable rooms: %v", page.body)
		}
		for _, id := range ids {
			unavailable = append(unavailable, id.(string))
		}
		if after = page.str("next_after"); after == "" {
			break
		}
	}
	// Two full pages (a readable room and an unreadable one each), then an empty one that ends the list.
	if !slices.Equal(read, []string{"a", "d"}) || !slices.Equal(unavailable, []string{"b", "c"}) || pages != 3 {
		t.Fatalf("read %v with %v unavailable in %d pages; want a, d with b, c in 3", read, unavailable, pages)
	}
}

func TestRoomListHistoryAndAudit(t *testing.T) {
	e := setup(t)
	for _, id := range []string{"b", "a", "c"} {
		e.want(e.do("PUT", "/v1/rooms/"+id, adminKey, `{"capacity": 1}`), 200, "")
	}
	e.want(e.do("GET", "/v1/rooms", "", ""), 401, "unauthorized")
	e.want(e.do("GET", "/v1/rooms?limit=0", adminKey, ""), 400, "invalid_request")
	e.want(e.do("GET", "/v1/rooms?after=../x", adminKey, ""), 400, "invalid_request")
	page := e.do("GET", "/v1/rooms?limit=2", adminKey, "")
	if rooms := list(page, "rooms"); len(rooms) != 2 || rooms[0]["id"] != "a" || rooms[1]["id"] != "b" || page.str("next_after") != "b" {
		t.Fatalf("first page: %v", page.body)
	}
	page = e.do("GET", "/v1/rooms?after=b&limit=2", adminKey, "")
	if rooms := list(page, "rooms"); len(rooms) != 1 || rooms[0]["id"] != "c" || page.str("next_after") != "" {
		t.Fatalf("second page: %v", page.body)
	}

	ctx := context.Background()
	for range 3 {
		e.want(e.do("POST", "/v1/rooms/a/join", "", ""), 200, "")
	}
	e.svc.Sample(ctx)
	e.clock.Advance(2 * time.Second)
	for range 4 {
		e.want(e.do("POST", "/v1/rooms/a/join", "", ""), 200, "")
	}
	e.svc.Sample(ctx)
	h := e.do("GET", "/v1/rooms/a/history", adminKey, "")
	samples := list(h, "samples")
	if h.code != 200 || len(samples) != 1 || samples[0]["waiting"] != 7.0 || samples[0]["joins"] != 2.0 || samples[0]["eta_back"].(float64) <= 0 {
		t.Fatalf("history: %d %v", h.code, h.body)
	}
	// Nobody was admitted between the samples: the wait at the back is the most it can be (one slot,
	// free, then held up to a minute's grace and a ten-minute session for each of the 6 after the
	// first), and says so.
	if samples[0]["eta_back"] != 3960.0 || samples[0]["eta_back_bound"] != true {
		t.Fatalf("the wait at the back with no admission: %v, want 3960 s, an upper bound", samples[0])
	}
	at, _ := time.Parse(time.RFC3339, samples[0]["t"].(string))
	if later := e.do("GET", "/v1/rooms/a/history?since="+at.Format(time.RFC3339), adminKey, ""); len(list(later, "samples")) != 0 {
		t.Fatalf("history since the last sample: %v", later.body)
	}
	e.want(e.do("GET", "/v1/rooms/a/history?since=yesterday", adminKey, ""), 400, "invalid_request")
	e.want(e.do("GET", "/v1/rooms/zz/history", adminKey, ""), 404, "room_not_found")

	p := e.do("PATCH", "/v1/rooms/a", adminKey, `{"paused": true, "rate": {"admits": 5, "per": "1s"}}`)
	if p.code != 200 || p.body["paused"] != true || p.body["capacity"] != 1.0 {
		t.Fatalf("patch: %d %v", p.code, p.body)
	}
	bad := e.do("PATCH", "/v1/rooms/a", adminKey, `{"capacity": -1}`)
	if e.want(bad, 400, "invalid_config"); bad.body["error"].(map[string]any)["field"] != "capacity" {
		t.Fatalf("refusal names no field: %v", bad.body)
	}
	e.want(e.do("PATCH", "/v1/rooms/a", adminKey, `[1]`), 400, "invalid_config")
	for in, field := range map[string]string{`{"capacity": 3, "capacity": 4}`: "capacity", `{"rate": {"admits": 1, "admits": 9, "per": "1s"}}`: "rate.admits"} {
		twice := e.do("PATCH", "/v1/rooms/a", adminKey, in)
		if e.want(twice, 400, "invalid_config"); twice.body["error"].(map[string]any)["field"] != field {
			t.Fatalf("%s: %v, want the field %s named", in, twice.body, field)
		}
	}
	e.want(e.do("PATCH", "/v1/rooms/nope", adminKey, `{"paused": true}`), 404, "room_not_found")
	if cfg := e.do("GET", "/v1/rooms/a", adminKey, ""); cfg.body["paused"] != true || cfg.body["capacity"] != 1.0 {
		t.Fatalf("after a refused patch: %v", cfg.body)
	}

	audit := e.do("GET", "/v1/audit?kind=room&id=a", adminKey, "")
	entries := list(audit, "entries")
	if len(entries) != 2 || entries[0]["action"] != "update" || entries[1]["action"] != "create" {
		t.Fatalf("audit: %v", audit.body)
	}
	changes, _ := entries[0]["changes"].([]any)
	if len(changes) != 2 || changes[0].(map[string]any)["field"] != "paused" || changes[0].(map[string]any)["new"] != true {
		t.Fatalf("audited changes: %v", changes)
	}
	if all := e.do("GET", "/v1/audit?limit=2", adminKey, ""); len(list(all, "entries")) != 2 || all.str("next_before") == "" {
		t.Fatalf("audit page: %v", all.body)
	} else if rest := e.do("GET", "/v1/audit?before="+all.str("next_before"), adminKey, ""); len(list(rest, "entries")) != 2 {
		t.Fatalf("audit next page: %v", rest.body)
	}
	e.want(e.do("GET", "/v1/audit?kind=planet", adminKey, ""), 400, "invalid_request")
}

// TestPatchMergesObjects: a patch's object merges into the one it names (RFC 7396): a new message keeps
// the page's title, logo and colour, a new admits keeps the rate's per. They were replaced whole.
func TestPatchMergesObjects(t *testing.T) {
	e := setup(t)
	e.putRoom("branded", `{"capacity": 1, "rate": {"admits": 10, "per": "1m"}, "page": {"title": "Sale", "logo_url": "https://example.com/l.png", "brand_color": "#112233"}}`)
	e.want(e.do("PATCH", "/v1/rooms/branded", adminKey, `{"page": {"message": "Doors at ten", "title": null}, "rate": {"admits": 7}}`), 200, "")
	cfg := e.do("GET", "/v1/rooms/branded", adminKey, "")
	if page, rate := fmt.Sprint(cfg.body["page"]), fmt.Sprint(cfg.body["rate"]); page != "map[brand_color:#112233 logo_url:https://example.com/l.png message:Doors at ten]" ||
		rate != "map[admits:7 per:1m0s]" {
		t.Fatalf("after a patch of the page and the rate: page %s, rate %s", page, rate)
	}
	e.want(e.do("PATCH", "/v1/rooms/branded", adminKey, `{"page": null}`), 200, "")
	if cfg := e.do("GET", "/v1/rooms/branded", adminKey, ""); cfg.body["page"] != nil {
		t.Fatalf("a null page is kept: %v", cfg.body["page"])
	}
}

func TestDropAndAuctionControls(t *testing.T) {
	e := setup(t)
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/drops/d", adminKey, `{"stock": 3, "opens_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`"}`), 200, "")
	if d := e.do("POST", "/v1/drops/d/open", adminKey, ""); d.code != 200 || d.str("status") != "open" {
		t.Fatalf("open now: %d %v", d.code, d.body)
	}
	tok := e.do("POST", "/v1/visitors", adminKey, `{"subject": "s1"}`).str("visitor_token")
	e.want(e.do("POST", "/v1/drops/d/claims", tok, `{}`), 201, "")
	if d := e.do("POST", "/v1/drops/d/close", adminKey, ""); d.code != 200 || d.str("status") != "closed" {
		t.Fatalf("close now: %d %v", d.code, d.body)
	}
	tok2 := e.do("POST", "/v1/visitors", adminKey, `{"subject": "s2"}`).str("visitor_token")
	e.want(e.do("POST", "/v1/drops/d/claims", tok2, `{}`), 409, "not_open")
	e.want(e.do("POST", "/v1/drops/zz/close", adminKey, ""), 404, "drop_not_found")
	e.want(e.do("POST", "/v1/drops/d/close", "", ""), 401, "unauthorized")
	e.drops.Sample(context.Background())
	e.clock.Advance(time.Second)
	e.drops.Sample(context.Background())
	if h := e.do("GET", "/v1/drops/d/history", adminKey, ""); len(list(h, "samples")) != 1 || list(h, "samples")[0]["remaining"] != 2.0 {
		t.Fatalf("drop history: %v", h.body)
	}
	if l := e.do("GET", "/v1/drops", adminKey, ""); len(list(l, "drops")) != 1 || list(l, "drops")[0]["claimed"] != 1.0 {
		t.Fatalf("drop list: %v", l.body)
	}

	e.want(e.do("PUT", "/v1/auctions/a", adminKey, `{"title": "Lot", "currency": "EUR", "start_price": 100, "increment": 10,
		"starts_at": "`+now.Format(time.RFC3339)+`", "ends_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`"}`), 200, "")
	e.want(e.do("POST", "/v1/auctions/a/extend", adminKey, `{"by": "-5m"}`), 400, "invalid_request")
	e.want(e.do("POST", "/v1/auctions/a/extend", adminKey, `{"by": 5}`), 400, "invalid_json")
	x := e.do("POST", "/v1/auctions/a/extend", adminKey, `{"by": "30m"}`)
	if ends, _ := time.Parse(time.RFC3339, x.str("ends_at")); x.code != 200 || !ends.Equal(now.Add(90*time.Minute)) {
		t.Fatalf("extend: %d %v", x.code, x.body)
	}
	if end := e.do("POST", "/v1/auctions/a/end", adminKey, ""); end.code != 200 || end.str("status") != "closed" {
		t.Fatalf("end now: %d %v", end.code, end.body)
	}
	e.want(e.do("POST", "/v1/auctions/a/end", adminKey, ""), 409, "auction_closed")
	if l := e.do("GET", "/v1/auctions", adminKey, ""); len(list(l, "auctions")) != 1 || list(l, "auctions")[0]["status"] != "closed" {
		t.Fatalf("auction list: %v", l.body)
	}
	audit := list(e.do("GET", "/v1/audit?kind=auction&id=a", adminKey, ""), "entries")
	if len(audit) != 3 || audit[0]["action"] != "end" || audit[1]["action"] != "extend" {
		t.Fatalf("auction audit: %v", audit)
	}
}

func TestRoomModes(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/rooms/m", adminKey, `{"capacity": 1, "mode": "sideways"}`), 400, "invalid_config")
	e.want(e.do("PUT", "/v1/rooms/m", adminKey, `{"capacity": 1}`), 200, "")
	first := e.do("POST", "/v1/rooms/m/join", "", "")
	e.want(first, 200, "")
	if p := e.do("PATCH", "/v1/rooms/m", adminKey, `{"mode": "reject"}`); p.code != 200 || p.str("mode") != "reject" {
		t.Fatalf("patch mode: %d %v", p.code, p.body)
	}
	e.want(e.do("POST", "/v1/rooms/m/join", "", ""), 410, "room_closed")
	e.want(e.do("POST", "/v1/rooms/m/join", first.str("visitor_token"), ""), 200, "") // kept its place
}

// TestRoomsAndDropsStayLinked makes random changes of rooms and drops, links and unlinks among them
// (creates, replacements, patches, deletes, openings), and checks after each that every room that
// follows a drop names one that exists and sits behind it, and that nothing is answered 5xx. Without
// the refusal of a followed drop's deletion or move, the 103rd step broke it.
func TestRoomsAndDropsStayLinked(t *testing.T) {
	e := setup(t)
	r := rand.New(rand.NewPCG(7, 14))
	ids := []string{"1", "2", "3"}
	pick := func(prefix string, none string) string {
		if i := r.IntN(len(ids) + 1); i < len(ids) {
			return `"` + prefix + ids[i] + `"`
		}
		return none
	}
	for step := range 1500 {
		room, drop := "r"+ids[r.IntN(len(ids))], "d"+ids[r.IntN(len(ids))]
		var got resp
		switch r.IntN(8) {
		case 0:
			got = e.do("PUT", "/v1/rooms/"+room, adminKey, `{"capacity": 2, "drop": `+pick("d", "null")+`}`)
		case 1:
			got = e.do("PATCH", "/v1/rooms/"+room, adminKey, `{"drop": `+pick("d", "null")+`}`)
		case 2:
			got = e.do("DELETE", "/v1/rooms/"+room, adminKey, "")
		case 3:
			got = e.do("PUT", "/v1/drops/"+drop, adminKey, `{"stock": 3, "opens_at": "2030-01-01T00:00:00Z", "room": `+pick("r", `""`)+`}`)
		case 4:
			got = e.do("PATCH", "/v1/drops/"+drop, adminKey, `{"room": `+pick("r", "null")+`}`)
		case 5:
			got = e.do("DELETE", "/v1/drops/"+drop, adminKey, "")
		case 6:
			got = e.do("PATCH", "/v1/drops/"+drop, adminKey, fmt.Sprintf(`{"stock": %d}`, 1+r.IntN(9)))
		default:
			got = e.do("POST", "/v1/drops/"+drop+"/open", adminKey, "")
		}
		if got.code >= 500 {
			t.Fatalf("step %d: %d %v", step, got.code, got.body)
		}
		for _, id := range ids {
			rm := e.do("GET", "/v1/rooms/r"+id, adminKey, "")
			if rm.code != 200 || rm.str("drop") == "" {
				continue
			}
			if d := e.do("GET", "/v1/drops/"+rm.str("drop"), "", ""); d.code != 200 || d.str("room") != "r"+id {
				t.Fatalf("step %d: room r%s follows drop %s, which answers %d %v", step, id, rm.str("drop"), d.code, d.body)
			}
		}
	}
}

// TestRoomLinkRacesTheDropsDeparture links a room to a drop while, at the same instant, the drop is
// deleted or moved from behind the room, and checks after each race that the room follows a drop only
// if it exists behind it: each change is checked after it is written as well as before, so of two
// that race at least one sees the other. The rooms' writes are slowed by up to a millisecond, so
// that the drop's check and change often fall between the room's; checked only before, races broke
// it within the first twenty.
func TestRoomLinkRacesTheDropsDeparture(t *testing.T) {
	e := setup(t, func(_ *httpapi.Config, s *room.Store) { *s = slowRoomWrites{*s} })
	e.putRoom("r", `{"capacity": 2}`)
	apitest.LinkRaces(t, e.srv.URL, e.srv.URL, adminKey, "r", 300)
}

// slowRoomWrites writes rooms' configs after a pause of up to a millisecond.
type slowRoomWrites struct{ room.Store }

func (s slowRoomWrites) PutRoom(ctx context.Context, id string, cfg room.Config) error {
	time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
	return s.Store.PutRoom(ctx, id, cfg)
}

func TestRoomFollowsOnlyADropBehindIt(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/free", adminKey, e.dropCfg("")), 200, "")
	for _, body := range []string{`{"capacity": 1, "drop": "free"}`, `{"capacity": 1, "drop": "missing"}`, `{"capacity": 1, "drop": "../x"}`} {
		r := e.do("PUT", "/v1/rooms/f", adminKey, body)
		if e.want(r, 400, "invalid_config"); r.body["error"].(map[string]any)["field"] != "drop" {
			t.Errorf("%s: %v", body, r.body)
		}
	}
	e.want(e.do("PUT", "/v1/drops/behind", adminKey, e.dropCfg(`, "room": "f"`)), 200, "")
	e.want(e.do("PUT", "/v1/rooms/f", adminKey, `{"capacity": 1, "drop": "behind"}`), 200, "")

	// The drop keeps its place while the room follows it: deleted, or moved from behind the room, it
	// would leave the room counting its units, or holding its line for its opening, after it was gone.
	for _, r := range []resp{
		e.do("DELETE", "/v1/drops/behind", adminKey, ""),
		e.do("PUT", "/v1/drops/behind", adminKey, e.dropCfg("")),
		e.do("PATCH", "/v1/drops/behind", adminKey, `{"room": null}`),
	} {
		if e.want(r, 409, "drop_followed"); r.body["error"].(map[string]any)["field"] != "room" {
			t.Errorf("a followed drop's refusal: %v", r.body)
		}
	}
	if d := e.do("GET", "/v1/drops/behind", adminKey, ""); d.code != 200 || d.str("room") != "f" {
		t.Fatalf("the refused changes changed the drop: %d %v", d.code, d.body)
	}
	e.want(e.do("PATCH", "/v1/drops/behind", adminKey, `{"title": "Still behind f"}`), 200, "")
	e.want(e.do("PATCH", "/v1/rooms/f", adminKey, `{"drop": null}`), 200, "")
	e.want(e.do("DELETE", "/v1/drops/behind", adminKey, ""), 200, "")
}

// TestClaimOnADropTheRoomDoesNotFollow: two drops sit behind one room, which follows the stock of
// one of them. A claim on the other takes nothing from the room's count of units, neither sells the
// room out nor ends its admission, and the followed drop's units still let its visitors in and claim.
func TestClaimOnADropTheRoomDoesNotFollow(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/main", adminKey, e.dropCfg(`, "room": "hall"`)), 200, "") // two units
	e.want(e.do("PUT", "/v1/drops/side", adminKey, `{"stock": 1, "opens_at": "`+e.clock.Now().Format(time.RFC3339)+`", "room": "hall"}`), 200, "")
	e.putRoom("hall", `{"capacity": 5, "drop": "main", "grace": "1h", "idle_timeout": "1h"}`)
	var tokens []string
	for range 3 {
		tokens = append(tokens, e.do("POST", "/v1/rooms/hall/join", "", "").str("visitor_token"))
	}
	if tk, err := e.svc.Tick(context.Background(), "hall"); err != nil || len(tk.Admitted) != 2 {
		t.Fatalf("the room let in %v (%v), want the drop's two units' worth", tk, err)
	}
	admission := func(tok string) string {
		st := e.do("GET", "/v1/rooms/hall/status", tok, "")
		if st.str("state") != "admitted" {
			t.Fatalf("status: %v", st.body)
		}
		return `{"admission_token": "` + st.str("admission_token") + `"}`
	}
	first := admission(tokens[0])
	e.want(e.do("POST", "/v1/drops/side/claims", tokens[0], first), 201, "") // the side drop's last unit
	if st := e.do("GET", "/v1/rooms/hall/status", tokens[2], ""); st.str("state") != "waiting" {
		t.Fatalf("the third visitor after a claim on the drop the room does not follow: %v", st.body)
	}
	e.want(e.do("POST", "/v1/drops/main/claims", tokens[0], first), 201, "") // still admitted
	e.want(e.do("POST", "/v1/drops/main/claims", tokens[1], admission(tokens[1])), 201, "")
	if st := e.do("GET", "/v1/rooms/hall/status", tokens[2], ""); st.str("state") != "sold_out" {
		t.Fatalf("the third visitor once the followed drop is gone: %v", st.body)
	}
}

// TestSoldOutRoomFollowsASecondBatch: a room sold out with the drop it followed is linked to a second
// batch, a new drop behind it: the room takes joins again, lets visitors in for the new drop's units
// and sells out with it. Linked to a drop already sold out, it is sold out at once.
func TestSoldOutRoomFollowsASecondBatch(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/drops/first", adminKey, `{"stock": 1, "opens_at": "`+e.clock.Now().Format(time.RFC3339)+`", "room": "hall"}`), 200, "")
	e.putRoom("hall", `{"capacity": 5, "drop": "first", "grace": "1h", "idle_timeout": "1h"}`)
	tick := func(want int) {
		t.Helper()
		if tk, err := e.svc.Tick(context.Background(), "hall"); err != nil || len(tk.Admitted) != want {
			t.Fatalf("the room let in %v (%v), want %d", tk, err, want)
		}
	}
	claim := func(tok, drop string) {
		t.Helper()
		st := e.do("GET", "/v1/rooms/hall/status", tok, "")
		e.want(e.do("POST", "/v1/drops/"+drop+"/claims", tok, `{"admission_token": "`+st.str("admission_token")+`"}`), 201, "")
	}
	a := e.join("hall", "").str("visitor_token")
	tick(1)
	claim(a, "first")
	e.want(e.do("POST", "/v1/rooms/hall/join", "", ""), 410, "sold_out")

	e.want(e.do("PUT", "/v1/drops/second", adminKey, `{"stock": 2, "opens_at": "`+e.clock.Now().Format(time.RFC3339)+`", "room": "hall"}`), 200, "")
	e.want(e.do("PATCH", "/v1/rooms/hall", adminKey, `{"drop": "second"}`), 200, "")
	b, c := e.join("hall", "").str("visitor_token"), e.join("hall", "").str("visitor_token")
	tick(2)
	claim(b, "second")
	claim(c, "second")
	e.want(e.do("POST", "/v1/rooms/hall/join", "", ""), 410, "sold_out")

	e.want(e.do("PATCH", "/v1/rooms/hall", adminKey, `{"drop": null}`), 200, "")
	e.join("hall", "")
	e.want(e.do("PATCH", "/v1/rooms/hall", adminKey, `{"drop": "first"}`), 200, "") // sold out already
	e.want(e.do("POST", "/v1/rooms/hall/join", "", ""), 410, "sold_out")
}

// TestRoomsFollowTheirDropsThroughACrowd makes random changes of two rooms and three drops behind them
// (links, restocks, openings and closings) among a crowd's joins, admissions, claims on any of the
// drops and releases, and checks after each step what must always hold: no drop is claimed past its
// stock, and a room turns joins away as sold out exactly when the drop it follows has nothing left.
func TestRoomsFollowTheirDropsThroughACrowd(t *testing.T) {
	e := setup(t)
	r := rand.New(rand.NewPCG(3, 2026))
	rooms, drops := []string{"r0", "r1"}, []string{"d0", "d1", "d2"}
	now := e.clock.Now().Format(time.RFC3339)
	for i, d := range drops {
		e.want(e.do("PUT", "/v1/drops/"+d, adminKey, fmt.Sprintf(`{"stock": %d, "opens_at": %q, "room": %q}`, 3+i, now, rooms[i%2])), 200, "")
	}
	for _, rm := range rooms {
		e.putRoom(rm, `{"capacity": 3, "grace": "1h", "idle_timeout": "1h"}`)
	}
	visitors := map[string][]string{} // room -> tokens of its joins
	batch := len(drops) - 1
	dropOf := func(d string) resp { return e.do("GET", "/v1/drops/"+d, "", "") }
	for step := range 3000 {
		rm, d := rooms[r.IntN(2)], drops[r.IntN(3)]
		var got resp
		what := ""
		switch n := r.IntN(20); {
		case n < 2:
			target := `null`
			if dr := dropOf(d); dr.str("room") == rm && r.IntN(4) > 0 {
				target = `"` + d + `"`
			}
			what, got = "link "+rm+" to "+target, e.do("PATCH", "/v1/rooms/"+rm, adminKey, `{"drop": `+target+`}`)
		case n < 3:
			what, got = "restock "+d, e.do("PATCH", "/v1/drops/"+d, adminKey, fmt.Sprintf(`{"stock": %d}`, 1+r.IntN(12)))
		case n < 4:
			verb := []string{"close", "open"}[r.IntN(2)]
			what, got = verb+" "+d, e.do("POST", "/v1/drops/"+d+"/"+verb, adminKey, "")
		case n < 5: // a new batch takes the place of one of the three, sold out or not
			i := r.IntN(3)
			batch++
			drops[i] = fmt.Sprintf("d%d", batch)
			what, got = "batch "+drops[i], e.do("PUT", "/v1/drops/"+drops[i], adminKey, fmt.Sprintf(`{"stock": %d, "opens_at": %q, "room": %q}`, 2+r.IntN(6), now, rm))
		case n < 7:
			what, got = "join "+rm, e.do("POST", "/v1/rooms/"+rm+"/join", "", "")
			if got.code == 200 {
				visitors[rm] = append(visitors[rm], got.str("visitor_token"))
			}
		case n < 12:
			if r.IntN(10) == 0 {
				e.clock.Advance(2 * time.Minute) // sessions of 10 minutes run out now and then
			}
			if _, err := e.svc.Tick(context.Background(), rm); err != nil {
				t.Fatalf("step %d: tick %s: %v", step, rm, err)
			}
			continue
		case n < 18:
			if len(visitors[rm]) == 0 {
				continue
			}
			if r.IntN(4) > 0 { // mostly a drop behind the visitor's room
				for _, behind := range drops {
					if dropOf(behind).str("room") == rm {
						d = behind
					}
				}
			}
			i := r.IntN(min(4, len(visitors[rm]))) // near the front: admitted, or soon
			tok := visitors[rm][i]
			st := e.do("GET", "/v1/rooms/"+rm+"/status", tok, "")
			what, got = "claim "+d+" from "+rm, e.do("POST", "/v1/drops/"+d+"/claims", tok, `{"admission_token": "`+st.str("admission_token")+`"}`)
			if got.code == 201 || got.errCode() == "already_claimed" {
				e.do("POST", "/v1/rooms/"+rm+"/release", tok, "") // done, as the site's checkout ends it
				visitors[rm] = slices.Delete(visitors[rm], i, i+1)
			}
		default:
			if len(visitors[rm]) == 0 {
				continue
			}
			i := r.IntN(min(4, len(visitors[rm])))
			what, got = "release in "+rm, e.do("POST", "/v1/rooms/"+rm+"/release", visitors[rm][i], "")
			if got.code == 200 {
				visitors[rm] = slices.Delete(visitors[rm], i, i+1)
			}
		}
		if got.code >= 500 {
			t.Fatalf("step %d, %s: %d %v", step, what, got.code, got.body)
		}
		for _, d := range drops {
			if dr := dropOf(d); dr.num("remaining") < 0 || dr.num("stock")-dr.num("remaining") > dr.num("stock") {
				t.Fatalf("step %d, %s: drop %s %v", step, what, d, dr.body)
			}
		}
		if what == "join "+rm { // the room's answer against the drop it follows
			followed := e.do("GET", "/v1/rooms/"+rm, adminKey, "").str("drop")
			left := int64(-1)
			if followed != "" {
				left = dropOf(followed).num("remaining")
			}
			if soldOut := got.code == 410 && got.errCode() == "sold_out"; soldOut != (left == 0) {
				t.Fatalf("step %d, join %s: %d %v, the room follows %q with %d left", step, rm, got.code, got.body, followed, left)
			}
		}
	}
}
