package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/loadtest"
)

// TestLoadtestMatchesServer rehearses against a started server, by SSE and by polling: the report's
// joins and admissions are exactly the room's own counts, every admitted visitor verified its token
// and released, the waits told as upper bounds held, and the HTML report is written.
func TestLoadtestMatchesServer(t *testing.T) {
	base, _ := serveInProcess(t)
	for _, mode := range []string{"--sse", "--poll"} {
		room := "rehearse" + strings.TrimPrefix(mode, "--")
		if code, body, _ := do(t, "PUT", base+"/v1/rooms/"+room, testAdminKey, `{"capacity": 4, "rate": {"admits": 20, "per": "1s"}}`); code != 200 {
			t.Fatalf("PUT room: %d %v", code, body)
		}
		rep, printed, html := rehearse(t, "--target", base, "--room", room, "--visitors", "30", "--arrival-rate", "30",
			"--think", "200ms", "--duration", "30s", mode, "--admin-key", testAdminKey)
		_, body, _ := do(t, "GET", base+"/v1/rooms/"+room, testAdminKey, "")
		stats := body["stats"].(map[string]any)
		if float64(rep.Joins) != stats["joined_total"] || float64(rep.Admitted) != stats["admitted_total"] {
			t.Fatalf("%s: report joins %d admissions %d; the server counts %v", mode, rep.Joins, rep.Admitted, stats)
		}
		if rep.Joins != 30 || rep.Admitted != 30 || rep.Done != 30 || len(rep.Errors) != 0 || rep.RoomRate != 20 || rep.ETASamples == 0 {
			t.Fatalf("%s: report %+v\n%s", mode, rep, printed)
		}
		// The first to wait were told the most their wait could be (4 slots of 10 minutes), which held.
		if rep.ETABounds == 0 || rep.ETABoundsExceeded != 0 || !strings.Contains(printed, "ETA upper bounds") ||
			!strings.Contains(printed, "longer than told") {
			t.Fatalf("%s: ETA upper bounds %d, exceeded %d\n%s", mode, rep.ETABounds, rep.ETABoundsExceeded, printed)
		}
		if !strings.Contains(printed, "joins 30, admissions 30") {
			t.Fatalf("%s: the printed report: %s", mode, printed)
		}
		if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "<polyline") {
			t.Fatalf("%s: HTML report: %v", mode, err)
		}
	}
}

// TestRehearseADrop rehearses a coupon drop behind a room that follows its stock: thirty visitors, ten
// units. Each admitted visitor claims with its admission, which the claim ends; the report's claims
// are the drop's own, the rest are told it is sold out (at the door, in line or at the claim), and
// nothing counts as an error.
func TestRehearseADrop(t *testing.T) {
	base, _ := serveInProcess(t)
	if code, body, _ := do(t, "PUT", base+"/v1/drops/gift", testAdminKey, `{"title": "Gift card", "stock": 10, "opens_at": "2026-01-01T00:00:00Z",
		"room": "launch", "release_on_claim": true, "identity": "room"}`); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, body)
	}
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/launch", testAdminKey, `{"capacity": 3, "drop": "gift"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	rep, printed, html := rehearse(t, "--target", base, "--room", "launch", "--drop", "gift", "--visitors", "30",
		"--arrival-rate", "60", "--think", "0s", "--duration", "30s", "--admin-key", testAdminKey)
	if rep.Claims != 10 || rep.DropClaimed != 10 || rep.DropStock != 10 || rep.Claims+rep.SoldOut != 30 || rep.Unserved != 0 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	// With the admin key the drop is read back: each claim listed and its code found as answered.
	if !rep.ReadBack || rep.DropListed != 10 || rep.DropLookedUp != 10 || len(rep.Problems) != 0 {
		t.Fatalf("the read-back: %+v\n%s", rep, printed)
	}
	for _, want := range []string{"drop gift: claims 10, told sold out 20; the drop counts 10 of 10 claimed",
		"read back: 10 of the run's claims listed as answered, 10 codes looked up and found", "problems: none"} {
		if !strings.Contains(printed, want) {
			t.Fatalf("the printed report has no %q:\n%s", want, printed)
		}
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "Read back: 10 of the run") {
		t.Fatalf("the HTML report does not say the drop was read back: %v", err)
	}
}

// TestRehearseADropBeforeItOpens: a crowd that comes before the drop opens waits in the room that
// follows it, each told its wait from the opening (the first, to free slots, none), and goes in from
// the opening on; the rehearsal measures those waits from the opening too, so none of them is counted
// as longer than told.
func TestRehearseADropBeforeItOpens(t *testing.T) {
	base, _ := serveInProcess(t)
	opens := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	if code, body, _ := do(t, "PUT", base+"/v1/drops/early", testAdminKey, fmt.Sprintf(`{"title": "Early", "stock": 8, "opens_at": %q, "room": "early"}`, opens)); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, body)
	}
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/early", testAdminKey, `{"capacity": 3, "drop": "early"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	rep, printed, _ := rehearse(t, "--target", base, "--room", "early", "--drop", "early", "--visitors", "10",
		"--arrival-rate", "100", "--think", "0s", "--duration", "30s")
	if rep.Claims != 8 || rep.SoldOut != 2 || rep.Unserved != 0 || len(rep.Errors) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	if rep.ETABounds+rep.ETASamples == 0 || rep.ETABoundsExceeded != 0 || rep.ETALonger != 0 {
		t.Fatalf("waits told from the drop's opening, measured from the join: %+v\n%s", rep, printed)
	}
}

// TestRehearsalPastTheStreamBound: a rehearsal from one address (--sources 1, as from one machine to
// another) meets the server's --streams-per-address, and its visitors' streams are refused (429). They
// poll meanwhile, as the page does, and are all admitted: the report counts the refusals apart from
// errors. Before, each refused visitor gave up and the run ended with them "still waiting".
func TestRehearsalPastTheStreamBound(t *testing.T) {
	base, _ := serveInProcess(t, "--streams-per-address", "2")
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/crowd", testAdminKey, `{"capacity": 4}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	rep, printed, html := rehearse(t, "--target", base, "--room", "crowd", "--visitors", "12", "--arrival-rate", "100",
		"--think", "100ms", "--duration", "40s", "--sources", "1")
	if rep.Admitted != 12 || rep.Done != 12 || rep.Unserved != 0 || rep.StreamsRefused == 0 || rep.Sources != 1 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	if !strings.Contains(printed, "event streams refused") || !strings.Contains(printed, "from one address") {
		t.Fatalf("the printed report:\n%s", printed)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "Event streams refused") {
		t.Fatalf("the HTML report does not say the streams were refused: %v", err)
	}

	// From the loopback's many addresses, by default, the same crowd holds its streams, as a crowd from
	// as many addresses would: none is refused. Before, a rehearsal on this machine was one address
	// whatever its size, and a crowd past the bound waited by polling.
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/spread", testAdminKey, `{"capacity": 4}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	rep, printed, _ = rehearse(t, "--target", base, "--room", "spread", "--visitors", "12", "--arrival-rate", "100",
		"--think", "100ms", "--duration", "40s")
	if rep.Admitted != 12 || rep.Done != 12 || rep.StreamsRefused != 0 || rep.Sources < 6 || len(rep.Errors) != 0 {
		t.Fatalf("from the loopback's addresses: report %+v\n%s", rep, printed)
	}
	if !strings.Contains(printed, fmt.Sprintf("from %d addresses", rep.Sources)) {
		t.Fatalf("the printed report:\n%s", printed)
	}
}

// rehearse runs `rushgate loadtest` with args, writing its JSON and HTML reports into a directory of
// the test's, and returns the JSON one read back as the loadtest's own Report, the printed report and
// the HTML report's path.
func rehearse(t *testing.T, args ...string) (rep loadtest.Report, printed, html string) {
	t.Helper()
	dir := t.TempDir()
	html = filepath.Join(dir, "r.html")
	args = append(append([]string{"loadtest"}, args...), "--report-json", filepath.Join(dir, "r.json"), "--report", html)
	var report, progress syncBuffer
	if err := run(context.Background(), args, &report, &progress); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, report.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("report: %v %s", err, data)
	}
	return rep, report.String(), html
}

// TestRehearseAnAuction rehearses an auction's last seconds on the embedded backend: bidders bid until it
// closes while watchers hold its live feed. Every watcher sees every event once, in order, and the
// close; the auction ends at the highest price an accepted bid's answer showed, and the report's counts
// agree with the auction's own.
func TestRehearseAnAuction(t *testing.T) {
	base, _ := serveInProcess(t)
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(3*time.Second).Format(time.RFC3339Nano))
	if code, body, _ := do(t, "PUT", base+"/v1/auctions/lot", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, body)
	}
	dir := t.TempDir()
	var printed, progress syncBuffer
	args := []string{"loadtest", "auction", "--target", base, "--auction", "lot", "--admin-key", testAdminKey, "--bidders", "10",
		"--watchers", "20", "--bid-every", "50ms", "--duration", "30s", "--report-json", filepath.Join(dir, "r.json")}
	if err := run(context.Background(), args, &printed, &progress); err != nil {
		t.Fatalf("%v\n%s", err, printed.String())
	}
	var rep loadtest.AuctionReport
	if data, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("report: %v %s", err, data)
	}
	_, end, _ := do(t, "GET", base+"/v1/auctions/lot", "", "")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.WatchersDone != 20 || rep.Accepted == 0 || rep.Proxies != 5 ||
		rep.Shown == 0 || rep.Listed != rep.Shown {
		t.Fatalf("report %+v\n%s", rep, printed.String())
	}
	if rep.Status != "closed" || end["status"] != "closed" || float64(rep.FinalPrice) != end["final_price"] || rep.FinalPrice != rep.Highest ||
		float64(rep.BidCount) != end["bid_count"] || rep.Events < rep.BidCount+1 {
		t.Fatalf("the report's end %+v; the auction's %v", rep, end)
	}
	if !strings.Contains(printed.String(), "20 of 20 watchers saw the end") || !strings.Contains(printed.String(), "problems: none") {
		t.Fatalf("the printed report:\n%s", printed.String())
	}
	// An auction that has ended has nothing to rehearse: the run says so rather than report its
	// watchers' wait for an end that came before them.
	if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "has ended (closed)") {
		t.Fatalf("a rehearsal of an ended auction: %v", err)
	}
}

// rehearseA runs the rehearsal of a kind ("auction", "drop") with args and returns its report and
// what it printed.
func rehearseA[R any](t *testing.T, kind string, args ...string) (R, string) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "r.json")
	var printed syncBuffer
	if err := run(context.Background(), append(append([]string{"loadtest", kind}, args...), "--report-json", report), &printed, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, printed.String())
	}
	var rep R
	if data, err := os.ReadFile(report); err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("report: %v %s", err, data)
	}
	return rep, printed.String()
}

// TestRehearseAnAuctionToItsEnd has bidders with limits bid until the price passes all but one's: the
// bidding dies down, the soft close lapses and the auction ends by itself, long before the run's
// --duration, won by the bidder who would pay most, at no more than that.
func TestRehearseAnAuctionToItsEnd(t *testing.T) {
	base, _ := serveInProcess(t)
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q,
		"soft_close": {"window": "2s", "extend": "2s"}}`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(2*time.Second).Format(time.RFC3339Nano))
	if code, body, _ := do(t, "PUT", base+"/v1/auctions/limits", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, body)
	}
	for flag, want := range map[string]string{"--top=500": "below the least bid the auction takes, 1000",
		"--buy-now=1": "offers no buy-now"} {
		err := run(context.Background(), []string{"loadtest", "auction", "--target", base, "--auction", "limits", "--admin-key", testAdminKey,
			"--bidders", "2", "--watchers", "0", flag}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a rehearsal with %s: %v; want %q", flag, err, want)
		}
	}
	rep, printed := rehearseA[loadtest.AuctionReport](t, "auction", "--target", base, "--auction", "limits", "--admin-key", testAdminKey,
		"--bidders", "12", "--watchers", "10", "--bid-every", "50ms", "--top", "4000", "--proxy", "0.5", "--duration", "2m")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.Status != "closed" || rep.WatchersDone != 10 || rep.Proxies != 6 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	// Every bidder but the winner stopped as the price passed what it would pay: one that could still
	// bid would have, inside the soft close's window, and kept the auction open.
	if rep.OutBid != 11 || rep.FinalPrice > 4000 || rep.Winner == "" || rep.Seconds > 60 || rep.Shown == 0 || rep.Listed != rep.Shown {
		t.Fatalf("the bidding did not die down by itself: %+v\n%s", rep, printed)
	}
	if !strings.Contains(printed, "6 with a secret maximum, 6 with exact amounts; each paying at most up to 4000, 11 stopped") {
		t.Fatalf("the printed report:\n%s", printed)
	}
}

// TestRehearseAnAuctionBehindARoom rehearses an auction that takes bids only from a room's admitted
// visitors, through a room of four slots held two seconds each: a dozen bidders wait in its line, bid
// with their admissions, join it again when their sessions end, and release their slots once the
// price passes what they pay, letting the next in. The auction ends right, its bids read back as
// answered, the room let in as many as the report says, and no slot is left held.
func TestRehearseAnAuctionBehindARoom(t *testing.T) {
	base, _ := serveInProcess(t)
	if code, body, _ := do(t, "PUT", base+"/v1/rooms/hall", testAdminKey, `{"capacity": 4, "session_ttl": "2s"}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, body)
	}
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 1000, "increment": 100, "room": "hall", "identity": "room",
		"starts_at": %q, "ends_at": %q, "soft_close": {"window": "2s", "extend": "2s"}}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(4*time.Second).Format(time.RFC3339Nano))
	if code, body, _ := do(t, "PUT", base+"/v1/auctions/behind", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, body)
	}
	rep, printed := rehearseA[loadtest.AuctionReport](t, "auction", "--target", base, "--auction", "behind", "--admin-key", testAdminKey,
		"--bidders", "12", "--watchers", "5", "--bid-every", "300ms", "--top", "10000", "--proxy", "0.25", "--duration", "2m")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.Status != "closed" || rep.Winner == "" || rep.WatchersDone != 5 ||
		rep.Shown == 0 || rep.Listed != rep.Shown {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	if rep.Room != "hall" || rep.Entered < 5 || rep.Reentered == 0 || rep.Wait.Count != int(rep.Entered) ||
		!strings.Contains(printed, "room hall: bidders let in") {
		t.Fatalf("the way through the room: %+v\n%s", rep, printed)
	}
	// Every admission took a join, and each bidder still holding a slot at its end released it.
	if join, release := rep.RoomCalls["join"], rep.RoomCalls["release"]; int64(join.Count) < rep.Entered || release.Count == 0 ||
		join.P50 <= 0 || join.P99 < join.P50 || !strings.Contains(printed, "room joins: ") {
		t.Fatalf("the room's calls %+v\n%s", rep.RoomCalls, printed)
	}
	_, body, _ := do(t, "GET", base+"/v1/rooms/hall", testAdminKey, "")
	stats := body["stats"].(map[string]any)
	if stats["admitted_total"] != float64(rep.Entered) || stats["active"] != 0.0 || stats["waiting"] != 0.0 {
		t.Fatalf("the room counts %v; the run was let in %d times and left no slot held", stats, rep.Entered)
	}
}

// TestRehearseABuyNowRush has every bidder try to buy the lot the moment a scheduled auction opens: it
// is sold once, to the one whose buy-now was taken, at its buy-now price, and every feed ends sold.
func TestRehearseABuyNowRush(t *testing.T) {
	base, _ := serveInProcess(t)
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "Lot", "currency": "EUR", "start_price": 1000, "increment": 100, "buy_now_price": 5000,
		"starts_at": %q, "ends_at": %q}`, now.Add(1500*time.Millisecond).Format(time.RFC3339Nano), now.Add(time.Hour).Format(time.RFC3339))
	if code, body, _ := do(t, "PUT", base+"/v1/auctions/rush", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT auction: %d %v", code, body)
	}
	rep, printed := rehearseA[loadtest.AuctionReport](t, "auction", "--target", base, "--auction", "rush", "--admin-key", testAdminKey,
		"--bidders", "20", "--buy-now", "20", "--watchers", "10", "--bid-every", "1s", "--duration", "1m")
	_, end, _ := do(t, "GET", base+"/v1/auctions/rush", "", "")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.BuyNowTries != 20 || rep.BuyNowSold != 1 || rep.Accepted != 0 ||
		rep.Status != "sold" || rep.FinalPrice != 5000 || end["winner"] != rep.Winner || rep.WatchersDone != 10 {
		t.Fatalf("report %+v; the auction %v\n%s", rep, end, printed)
	}
	if !strings.Contains(printed, "buy-now: 20 tried as it opened, 1 bought") || !strings.Contains(printed, "sold at 5000 to "+strconv.Quote(rep.Winner)) {
		t.Fatalf("the printed report:\n%s", printed)
	}
}

// TestRehearseADropsOpening has a crowd claim at a drop's opening, some pressing twice, then reads the drop
// back: a drop smaller than what the crowd asks for sells out exactly, each claim listed and its code
// found as answered; a larger one gives each visitor its limit and refuses the next ask.
func TestRehearseADropsOpening(t *testing.T) {
	base, _ := serveInProcess(t)
	opens := time.Now().UTC().Add(time.Second).Format(time.RFC3339Nano)
	for id, stock := range map[string]int{"small": 200, "large": 1000} {
		cfg := fmt.Sprintf(`{"title": "Tee", "stock": %d, "per_visitor": 2, "opens_at": %q}`, stock, opens)
		if code, body, _ := do(t, "PUT", base+"/v1/drops/"+id, testAdminKey, cfg); code != 200 {
			t.Fatalf("PUT drop: %d %v", code, body)
		}
	}
	rep, printed := rehearseA[loadtest.DropReport](t, "drop", "--target", base, "--drop", "small", "--admin-key", testAdminKey,
		"--visitors", "150", "--claims-each", "2", "--repeat", "0.3", "--watchers", "20", "--duration", "1m")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.Claims != 200 || rep.Status != "sold_out" || rep.Claimed != 200 ||
		rep.Listed != 200 || rep.LookedUp != 20 || rep.WatchersDone != 20 || rep.Repeats == 0 || rep.SoldOut == 0 || rep.SoldOutAfter <= 0 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	if !strings.Contains(printed, "the drop: sold_out, 200 of 200 claimed; the last unit went") || !strings.Contains(printed, "problems: none") {
		t.Fatalf("the printed report:\n%s", printed)
	}
	rep, printed = rehearseA[loadtest.DropReport](t, "drop", "--target", base, "--drop", "large", "--admin-key", testAdminKey,
		"--visitors", "100", "--claims-each", "3", "--arrival-rate", "500", "--watchers", "5", "--duration", "1m")
	if len(rep.Problems) != 0 || len(rep.Errors) != 0 || rep.Claims != 200 || rep.Limited != 100 || rep.Status != "open" ||
		rep.Claimed != 200 || rep.Listed != 200 || rep.WatchersDone != 5 || rep.SoldOut != 0 {
		t.Fatalf("report %+v\n%s", rep, printed)
	}
	// A drop that has sold out has nothing to rehearse.
	err := run(context.Background(), []string{"loadtest", "drop", "--target", base, "--drop", "small", "--admin-key", testAdminKey}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "has ended (sold_out)") {
		t.Fatalf("a rehearsal of a sold-out drop: %v", err)
	}
}

// TestRehearsalFailsOnProblems: a rehearsal that finds something wrong still writes its whole report,
// and then fails (the binary exits 1), so that a pipeline that rehearses stops. Here a claim made by
// somebody else during the run is one no answer of the run gave.
func TestRehearsalFailsOnProblems(t *testing.T) {
	base, _ := serveInProcess(t)
	opens := time.Now().UTC().Add(time.Second)
	cfg := fmt.Sprintf(`{"title": "Tee", "stock": 100, "opens_at": %q}`, opens.Format(time.RFC3339Nano))
	if code, body, _ := do(t, "PUT", base+"/v1/drops/shared", testAdminKey, cfg); code != 200 {
		t.Fatalf("PUT drop: %d %v", code, body)
	}
	_, minted, _ := do(t, "POST", base+"/v1/visitors", testAdminKey, `{"subject": "somebody-else"}`)
	other, _ := minted["visitor_token"].(string)
	var printed syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"loadtest", "drop", "--target", base, "--drop", "shared", "--admin-key", testAdminKey,
			"--visitors", "20", "--arrival-rate", "10", "--watchers", "2", "--duration", "1m"}, &printed, io.Discard)
	}()
	time.Sleep(time.Until(opens.Add(500 * time.Millisecond))) // the run has begun, and its visitors are arriving
	if code, body, _ := do(t, "POST", base+"/v1/drops/shared/claims", other, ""); code != 201 {
		t.Fatalf("somebody else's claim: %d %v", code, body)
	}
	err := <-done
	if !errors.Is(err, loadtest.ErrProblems) {
		t.Fatalf("the run: %v; want it to fail on its problems\n%s", err, printed.String())
	}
	for _, want := range []string{"which no answer of the run gave", "the drop counts 21 claims made during the run, while the run was given 20"} {
		if !strings.Contains(printed.String(), want) {
			t.Fatalf("the report does not say %q:\n%s", want, printed.String())
		}
	}
}
