package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/console"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

func withConsole() option {
	return func(c *httpapi.Config, _ *room.Store) { c.Console = console.New(console.Config{AdminKey: adminKey}) }
}

// live runs the room's gate and the history as serve does, on the test's clock: each step admits,
// samples and moves the clock a second. It stops when the test ends.
func (e *env) live(id string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = e.svc.Tick(ctx, id)
			e.svc.Sample(ctx)
			e.clock.Advance(time.Second)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	e.t.Cleanup(func() { cancel(); wg.Wait() })
}

// until polls cond every 50ms, 200 times: for up to 10s and the polls' own time.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// untilWithin polls cond every 50ms for up to d of the clock: for what a page only looks for now and
// then, at random points of its ranges.
func untilWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// waitIn and waitInKorean match a wait as the console shows it: a number and its unit, in the page's
// language, after "≤ " when it is the most the wait can be.
var (
	waitIn       = regexp.MustCompile(`^(≤ )?[0-9.]+(s|m|h)$`)
	waitInKorean = regexp.MustCompile(`^(≤ )?[0-9.]+(초|분|시간)$`)
)

// eval runs JavaScript in the tab and returns its value. A page that is navigating has no context to
// run it in for a moment (the click that leaves it, a redirect back); eval then runs it again.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	for try := 0; ; try++ {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
		if err == nil {
			return v
		}
		if !navigating(err) || try == 40 {
			t.Fatalf("%s: %v", js, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// navigating reports whether err is Chromium's answer to an evaluation made while the page changed.
func navigating(err error) bool {
	for _, s := range []string{"Inspected target navigated or closed", "Execution context was destroyed", "Cannot find context with specified id"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

func (e *env) roomConfig(id string) map[string]any {
	return e.do("GET", "/v1/rooms/"+id, adminKey, "").body
}

// TestConsole drives the operator's console in a real browser: sign in, find the room in the overview,
// watch its line and chart move while visitors join, pause it and see admissions stop, change the rate
// through the form, see a bad value refused next to its field, and sign out.
func TestConsole(t *testing.T) {
	e := setup(t, withConsole())
	e.putRoom("sale", `{"capacity": 2, "grace": "1h", "idle_timeout": "1h"}`)
	e.live("sale")
	ctx := tab(t)
	card := func(k string) string {
		return eval[string](t, ctx, `(document.querySelector('[data-card="`+k+`"] .v') || {}).textContent || ''`)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin?lang=en")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), "not-the-key"), chromedp.Submit(chromedp.CSS("#login"))); err != nil {
		t.Fatal(err)
	}
	if msg := text(t, ctx, "#login-error"); !strings.Contains(msg, "not the admin key") {
		t.Fatalf("wrong key: %q", msg)
	}
	screenshot(t, ctx, "console-signin")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login"))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#rooms tbody a"); got != "sale" {
		t.Fatalf("overview lists %q", got)
	}
	cookies := eval[string](t, ctx, `document.cookie`)
	if strings.Contains(cookies, console.SessionCookie) {
		t.Fatalf("the session cookie is readable by scripts: %q", cookies)
	}
	screenshot(t, ctx, "console-overview")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#rooms tbody a"))); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#ctl-pause")
	if href := eval[string](t, ctx, `document.getElementById('visitor-page').href`); href != e.srv.URL+"/r/sale" {
		t.Fatalf("the visitors' page is linked as %q", href)
	}
	var tokens []string
	for range 5 {
		j := e.do("POST", "/v1/rooms/sale/join", "", "")
		e.want(j, 200, "")
		tokens = append(tokens, j.str("visitor_token"))
	}
	until(t, "the waiting count to show 3", func() bool { return card("waiting") == "3" && card("active") == "2" })
	until(t, "the line chart to draw the waiting count", func() bool {
		return eval[int](t, ctx, `(document.querySelector('#chart-line polyline.series-waiting').getAttribute('points') || '').split(' ').filter(Boolean).length`) >= 3
	})
	until(t, "the wait at the back in English units", func() bool { return waitIn.MatchString(card("eta_back")) })
	screenshot(t, ctx, "console-room")

	// Pause, then free both slots: nobody more is let in.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-pause"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the room to be paused", func() bool { return e.roomConfig("sale")["paused"] == true })
	text(t, ctx, "#ctl-resume")
	admitted := func() float64 { return e.roomConfig("sale")["stats"].(map[string]any)["admitted_total"].(float64) }
	before := admitted()
	released := 0
	for _, tok := range tokens {
		if e.do("POST", "/v1/rooms/sale/release", tok, "").code == 200 {
			released++
		}
	}
	if released != 2 {
		t.Fatalf("released %d admissions, want the 2 admitted", released)
	}
	until(t, "the active count to drop to 0", func() bool { return card("active") == "0" })
	time.Sleep(1500 * time.Millisecond) // several steps of the gate
	if after := admitted(); after != before || card("waiting") != "3" {
		t.Fatalf("admissions went on while paused: %v -> %v, waiting %s", before, after, card("waiting"))
	}

	// The rate through the form.
	if err := chromedp.Do(ctx, typed("#edit-room-rate_admits", "7"),
		typed("#edit-room-rate_per", "1m"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the rate to be applied", func() bool {
		rate, _ := e.roomConfig("sale")["rate"].(map[string]any)
		return rate != nil && rate["admits"] == 7.0 && rate["per"] == "1m0s"
	})
	if e.roomConfig("sale")["paused"] != true {
		t.Fatal("saving the form undid the pause made after the page was loaded")
	}
	until(t, "the change to be listed", func() bool {
		return strings.Contains(eval[string](t, ctx, `document.getElementById('audit').textContent`), "rate")
	})
	// The mode is a choice named in words. The save above sent it back as it was (the room has none, which
	// is fifo): the log lists no change of it.
	if log := eval[string](t, ctx, `document.getElementById('audit').textContent`); strings.Contains(log, "mode") {
		t.Fatalf("saving the rate changed the mode: %s", log)
	}
	if err := chromedp.Do(ctx, typed("#edit-room-mode", "reject"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the mode to be applied", func() bool { return e.roomConfig("sale")["mode"] == "reject" })
	if shown := eval[string](t, ctx, `document.querySelector('#edit-room-mode option:checked').textContent`); shown != "No new joins" {
		t.Fatalf("the mode shows as %q", shown)
	}

	// A bad value is refused next to its field, and nothing changes.
	if err := chromedp.Do(ctx, typed("#edit-room-capacity", "-3"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the refusal next to the field", func() bool {
		return strings.Contains(eval[string](t, ctx, `document.getElementById('edit-room-capacity-err').textContent`), "capacity")
	})
	if inv := eval[string](t, ctx, `document.getElementById('edit-room-capacity').getAttribute('aria-invalid')`); inv != "true" {
		t.Fatalf("the field is not marked invalid: %q", inv)
	}
	if c := e.roomConfig("sale")["capacity"]; c != 2.0 {
		t.Fatalf("capacity after a refused change: %v", c)
	}
	screenshot(t, ctx, "console-room-refused")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "console-room-phone")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 800)); err != nil {
		t.Fatal(err)
	}

	// The same page in Korean.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/sale?lang=ko")); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#ctl-resume"); got != "입장 재개" {
		t.Fatalf("the resume button in Korean reads %q", got)
	}
	until(t, "the cards", func() bool { return card("waiting") == "3" })
	until(t, "the wait at the back in Korean units", func() bool { return waitInKorean.MatchString(card("eta_back")) })
	// The API's refusal, said in Korean.
	until(t, "the form", func() bool { return eval[string](t, ctx, `document.getElementById('edit-room-capacity').value`) == "2" })
	if err := chromedp.Do(ctx, typed("#edit-room-capacity", "-3"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the refusal in Korean", func() bool {
		return eval[string](t, ctx, `document.getElementById('edit-room-capacity-err').textContent`) == "0에서 1000000000 사이여야 합니다"
	})
	screenshot(t, ctx, "console-room-ko")

	// Sign out: the page is the sign-in form again and the API refuses the browser.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#signout"))); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#login")
	status, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`fetch('/v1/rooms').then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if status != 401 {
		t.Fatalf("the API after signing out answers %v", status)
	}
}

// TestConsoleRestocksADrop: on the page of a drop with claims, the form leaves only the title, the
// message, the stock, the times and the claims per visitor to edit and says why (in Korean, at a phone's width); a restock saved there
// shows in the cards and the drop; a stock below the claims is refused next to the field.
func TestConsoleRestocksADrop(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/tee", adminKey, fmt.Sprintf(`{"title": "Tee", "stock": 3, "opens_at": %q}`,
		e.clock.Now().Format(time.RFC3339))), 200, "")
	e.want(e.do("POST", "/v1/drops/tee/claims", e.visitorToken("a"), ""), 201, "")
	e.want(e.do("POST", "/v1/drops/tee/claims", e.visitorToken("b"), ""), 201, "")
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/admin?lang=ko"),
		chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login"))); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#drops tbody a")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/drops/tee")); err != nil {
		t.Fatal(err)
	}
	shown := shownIn(t, ctx)
	until(t, "the note on what may change", func() bool { return strings.HasPrefix(shown("#fixed-note"), "이 드롭의 규칙으로") })
	locked := eval[string](t, ctx, `['title', 'stock', 'per_visitor', 'room', 'identity', 'release_on_claim', 'closes_at', 'message']
		.map(n => n + '=' + document.querySelector('#edit [name=' + n + ']').disabled).join(' ')`)
	if locked != "title=false stock=false per_visitor=false room=true identity=true release_on_claim=true closes_at=false message=false" {
		t.Fatalf("the form of a drop with claims: %s", locked)
	}
	save := chromedp.Click(chromedp.CSS("#edit button[type=submit]"))
	if err := chromedp.Do(ctx, typed("#edit-drop-stock", "1"), save); err != nil {
		t.Fatal(err)
	}
	until(t, "the refusal by the stock", func() bool {
		return shown("#edit-drop-stock-err") == "이미 수령된 수량 이상이어야 합니다"
	})
	eval[bool](t, ctx, `document.getElementById('fixed-note').scrollIntoView({block: 'start'}) === undefined`)
	screenshot(t, ctx, "console-drop-fixed-phone-ko")
	if err := chromedp.Do(ctx, typed("#edit-drop-stock", "30"), typed("#edit-drop-title", "Tee, second batch"), save); err != nil {
		t.Fatal(err)
	}
	until(t, "the restock in the cards", func() bool { return shown("[data-card=stock] .v") == "30" && shown("[data-card=remaining] .v") == "28" })
	if v := e.do("GET", "/v1/drops/tee", "", ""); v.num("stock") != 30 || v.str("title") != "Tee, second batch" || v.num("claimed") != 2 {
		t.Fatalf("the drop after the restock: %v", v.body)
	}
}

// TestConsoleDropAndAuction opens a drop's and an auction's pages: closing the drop and ending the
// auction (a press that arms, a second that ends) go through their admin calls and show at once.
func TestConsoleDropAndAuction(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, `{"stock": 50, "opens_at": "`+now.Add(-time.Minute).Format(time.RFC3339)+`"}`), 200, "")
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, `{"title": "Lot", "currency": "KRW", "start_price": 10000, "increment": 1000,
		"starts_at": "`+now.Add(-time.Minute).Format(time.RFC3339)+`", "ends_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`"}`), 200, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey)
	if got := text(t, ctx, "#drops tbody a"); got != "coupon" {
		t.Fatalf("overview lists drop %q", got)
	}
	if got := text(t, ctx, "#auctions tbody td"); got != "lot Lot" {
		t.Fatalf("overview lists the auction as %q; want its id and title", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/drops/coupon"), chromedp.Click(chromedp.CSS("#ctl-close_now"))); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#ctl-open_now")
	if st := e.do("GET", "/v1/drops/coupon", "", "").str("status"); st != "closed" {
		t.Fatalf("drop after close now: %q", st)
	}
	// No sample has been taken: the charts say so, on a grid of 0, half and 1 rather than of 1/1.15.
	until(t, "the empty stock chart", func() bool {
		return eval[string](t, ctx, `[...document.querySelectorAll('#chart-stock text')].map(e => e.textContent).join('|')`) ==
			"0|0.5|1|Collecting samples…"
	})
	screenshot(t, ctx, "console-drop")
	// The claims download with the session, as the link on the page does.
	fetchLink := func(sel string) string {
		t.Helper()
		text(t, ctx, sel)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('`+sel+`').href).then(r =>
			r.headers.get('Content-Disposition') + '\n' + r.status)`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("fetching %s: %v", sel, err)
		}
		return got
	}
	if got := fetchLink("#ctl-export_claims"); got != "attachment; filename=\"drop-coupon-claims.csv\"\n200" {
		t.Fatalf("the claims link answers %q", got)
	}

	// A drop that lists its codes, edited through the form, keeps them; the page's refreshes every
	// second leave them out, and only the save reads them.
	e.want(e.do("PUT", "/v1/drops/listed", adminKey, `{"opens_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`", "codes": ["A-1", "A-2", "A-3"]}`), 200, "")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/drops/listed")); err != nil {
		t.Fatal(err)
	}
	until(t, "the form", func() bool {
		return eval[string](t, ctx, `document.getElementById('edit-drop-per_visitor').value`) == "1"
	})
	if err := chromedp.Do(ctx, typed("#edit-drop-per_visitor", "2"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	saved := func() map[string]any {
		c, _ := e.do("GET", "/v1/drops/listed/config", adminKey, "").body["config"].(map[string]any)
		return c
	}
	until(t, "the save", func() bool { return saved()["per_visitor"] == 2.0 })
	if codes := fmt.Sprint(saved()["codes"]); codes != "[A-1 A-2 A-3]" {
		t.Fatalf("after a save through the form the drop lists %s", codes)
	}
	reads := func(query string) string {
		return eval[string](t, ctx, `String(performance.getEntriesByType('resource').filter(r => { const u = new URL(r.name);
			return u.pathname === '/v1/drops/listed/config' && u.search === '`+query+`'; }).length)`)
	}
	if whole, brief := reads(""), reads("?codes=0"); whole != "1" || brief == "0" {
		t.Fatalf("the page read the whole config %s times and the brief one %s times; want once (the save), and each refresh", whole, brief)
	}

	// The auction's page: amounts as their currency writes them (the API keeps minor units, of which ₩
	// has none), and a soft close set through the form's two fields.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/auctions/lot"), chromedp.WaitVisible(chromedp.CSS("#edit-auction-soft_window"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the auction's form", func() bool {
		return eval[string](t, ctx, `document.getElementById('edit-auction-title').value`) == "Lot"
	})
	until(t, "the price card", func() bool {
		return eval[string](t, ctx, `document.querySelector('[data-card="price"] .v').textContent`) == "₩10,000"
	})
	// Nobody leads an auction without bids, and one without a reserve shows none.
	if cards := eval[string](t, ctx, `document.querySelector('[data-card="leader"] .v').textContent + ' ' + !!document.querySelector('[data-card="reserve"]')`); cards != "– false" {
		t.Fatalf("leader and reserve cards: %s", cards)
	}
	if hint := eval[string](t, ctx, `document.getElementById('edit-auction-start_price-money').textContent`); hint != "= ₩10,000" {
		t.Fatalf("the start price's line says %q", hint)
	}
	top := func() string {
		return eval[string](t, ctx, `String(document.getElementById('ctl-end_now').getBoundingClientRect().top + window.scrollY)`)
	}
	before := top()
	if err := chromedp.Do(ctx, typed("#edit-auction-soft_window", "2m"), typed("#edit-auction-soft_extend", "1m"),
		chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the soft close", func() bool {
		c, _ := e.do("GET", "/v1/auctions/lot/config", adminKey, "").body["config"].(map[string]any)
		return fmt.Sprint(c["soft_close"]) == "map[extend:1m0s window:2m0s]"
	})
	// Saying "Saved" moves no control: it moved them a line down, and a press on its way to "End now" as
	// the line appeared landed elsewhere (the test's own click, now and then).
	until(t, "the page to say it saved", func() bool { return eval[string](t, ctx, `document.getElementById('status').textContent`) != "" })
	if after := top(); after != before {
		t.Fatalf("the end button moved from %s to %s when the page said it saved", before, after)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-end_now"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the end button to arm", func() bool {
		return eval[string](t, ctx, `document.getElementById('ctl-end_now').textContent`) == "Press again to end now"
	})
	if st := e.do("GET", "/v1/auctions/lot", "", "").str("status"); st != "open" {
		t.Fatalf("one press ended the auction: %q", st)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-end_now"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the auction to end", func() bool { return e.do("GET", "/v1/auctions/lot", "", "").str("status") == "closed" })
	until(t, "the end to be listed", func() bool {
		return strings.Contains(eval[string](t, ctx, `document.getElementById('audit').textContent`), "ended now")
	})
	if got := fetchLink("#ctl-export_events"); got != "attachment; filename=\"auction-lot-events.csv\"\n200" {
		t.Fatalf("the ended auction's history link answers %q", got)
	}
	screenshot(t, ctx, "console-auction")
}

// switchRecord is a durable record that fails writes while failing is set.
type switchRecord struct{ failing atomic.Bool }

func (r *switchRecord) Check(context.Context) error {
	if r.failing.Load() {
		return errors.New("record: connection refused")
	}
	return nil
}

// TestConsoleShowsAFailingRecord: while the durable record fails writes under an instance whose
// outbox keeps claims and bids (Redis), the console says so on every page, in the operator's language,
// and stops saying it once the record is back.
func TestConsoleShowsAFailingRecord(t *testing.T) {
	rec := &switchRecord{}
	e := setup(t, withConsole(), func(cfg *httpapi.Config, _ *room.Store) {
		cfg.Record, cfg.Outbox = rec, true
		cfg.Backlog = func(context.Context) (int64, int64, error) { return 1234, 5, nil }
	})
	e.putRoom("sale", `{"capacity": 2}`)
	ctx := tab(t)
	banner := healthBanner(t, ctx, e.srv.URL+"/admin?lang=en")
	if b := banner(); b != "" {
		t.Fatalf("a healthy instance's console shows %q", b)
	}
	rec.failing.Store(true)
	until(t, "the console to say the record fails, and how much waits", func() bool {
		return strings.Contains(banner(), "wait in Redis") && strings.HasSuffix(banner(), " 1,234 claims and 5 auction events wait.")
	})
	screenshot(t, ctx, "console-record-degraded")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/sale?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "the room page to say it in Korean", func() bool {
		return strings.Contains(banner(), "Redis에서 기다립니다") && strings.Contains(banner(), "수령 1,234건과 경매 기록 5건이")
	})
	rec.failing.Store(false)
	until(t, "the console to stop saying it", func() bool { return banner() == "" })
}

// signIn opens the console's page at url, signs in with key, and runs then: what tells that the page
// it lands on is ready, and any steps after.
func signIn(t *testing.T, ctx context.Context, url, key string, then ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(url), chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Submit(chromedp.CSS("#login"))}
	if err := chromedp.Do(ctx, append(steps, then...)...); err != nil {
		t.Fatal(err)
	}
}

// healthBanner signs in to the console at url, waits for its overview, and returns what reads the
// banner that says how the instance's stores fare ("" while it is hidden).
func healthBanner(t *testing.T, ctx context.Context, url string) func() string {
	t.Helper()
	signIn(t, ctx, url, adminKey)
	until(t, "the overview to load", func() bool {
		return eval[string](t, ctx, `(document.body && document.body.dataset.updated) || ''`) != ""
	})
	return func() string {
		return eval[string](t, ctx, `(() => { const b = document.getElementById('health'); return !b || b.hidden ? '' : b.textContent; })()`)
	}
}

// switchStore is a room store whose health check fails with what fails holds, while it holds one.
type switchStore struct {
	room.Store
	fails *atomic.Pointer[error]
}

func (s switchStore) Ping(context.Context) error {
	if err := s.fails.Load(); err != nil {
		return *err
	}
	return nil
}

// TestConsoleShowsTheStoreFaring: while Redis's replicas do not confirm claims and bids in time
// (--redis-replicas), or a master of a Redis Cluster is down, the console's banner says what that does
// to visitors, in the operator's language (naming the masters down), and stops once all is well.
func TestConsoleShowsTheStoreFaring(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		en, ko []string
	}{
		{"replicas-behind", rushgate.ErrUnconfirmed,
			[]string{"replicas do not confirm writes in time", "Joins go on."},
			[]string{"복제본이 제때 쓰기를 확인하지 않습니다", "입장은 계속됩니다"}},
		{"master-down", fmt.Errorf("%w: 1 of 3 masters: 10.0.0.7:6379: dial tcp 10.0.0.7:6379: connect: connection refused", rushgate.ErrPartlyUnavailable),
			[]string{"the others go on", "Redis: 1 of 3 masters: 10.0.0.7:6379: dial tcp 10.0.0.7:6379: connect: connection refused."},
			[]string{"나머지는 계속됩니다", "Redis: 1 of 3 masters: 10.0.0.7:6379"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fails atomic.Pointer[error]
			e := setup(t, withConsole(), func(_ *httpapi.Config, s *room.Store) { *s = switchStore{*s, &fails} })
			ctx := tab(t)
			banner := healthBanner(t, ctx, e.srv.URL+"/admin?lang=ko")
			says := func(want []string) func() bool {
				return func() bool {
					b := banner()
					return strings.Contains(b, want[0]) && strings.Contains(b, want[1])
				}
			}
			fails.Store(&c.err)
			until(t, "the console to say it in Korean", says(c.ko))
			screenshot(t, ctx, "console-"+c.name+"-ko")
			if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin?lang=en")); err != nil {
				t.Fatal(err)
			}
			until(t, "the console to say it in English", says(c.en))
			screenshot(t, ctx, "console-"+c.name)
			fails.Store(nil)
			until(t, "the console to stop saying it", func() bool { return banner() == "" })
		})
	}
}

// TestConsoleShowsRedisSettings: while a node of Redis may evict keys, the console's banner says what
// that risks and what to set, naming the nodes; masters that keep no append-only file are named in a
// note under the banner instead (the store is not degraded for it); each in English and Korean, and
// gone once the setting is right.
func TestConsoleShowsRedisSettings(t *testing.T) {
	for _, c := range []struct {
		name, element string
		set           func(cfg *httpapi.Config, nodes func() []string)
		nodes         []string
		en, ko        string
	}{
		{"redis-evicts", "health", func(cfg *httpapi.Config, nodes func() []string) { cfg.Evicting = nodes },
			[]string{"10.0.0.7:6379 (allkeys-lru)"},
			"Set maxmemory-policy to noeviction. Nodes: 10.0.0.7:6379 (allkeys-lru).",
			"noeviction으로 설정하세요. 해당 노드: 10.0.0.7:6379 (allkeys-lru)."},
		{"redis-unlogged", "health-note", func(cfg *httpapi.Config, nodes func() []string) { cfg.Unlogged = nodes },
			[]string{"10.0.0.7:6379", "10.0.0.8:6379"},
			"no append-only file on 10.0.0.7:6379, 10.0.0.8:6379: a restart of it loses the places in line",
			"10.0.0.7:6379, 10.0.0.8:6379에서 AOF(append-only file)를 쓰지 않습니다"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var nodes atomic.Pointer[[]string]
			nodes.Store(&[]string{})
			e := setup(t, withConsole(), func(cfg *httpapi.Config, _ *room.Store) { c.set(cfg, func() []string { return *nodes.Load() }) })
			ctx := tab(t)
			banner := healthBanner(t, ctx, e.srv.URL+"/admin?lang=en")
			shown := func() string {
				return eval[string](t, ctx, `(n => !n || n.hidden ? '' : n.textContent)(document.getElementById('`+c.element+`'))`)
			}
			nodes.Store(&c.nodes)
			until(t, "the console to say it", func() bool { return strings.Contains(shown(), c.en) })
			if b := banner(); c.element != "health" && b != "" {
				t.Fatalf("the banner says %q", b)
			}
			screenshot(t, ctx, "console-"+c.name)
			if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin?lang=ko")); err != nil {
				t.Fatal(err)
			}
			until(t, "the console to say it in Korean", func() bool { return strings.Contains(shown(), c.ko) })
			nodes.Store(&[]string{})
			until(t, "the console to stop saying it", func() bool { return shown() == "" })
		})
	}
}

// TestConsoleInvites: on the page of a room by invitation, the operator pastes invite codes, and is
// told how many were new and the link each invitee gets; a code added so takes a place.
func TestConsoleInvites(t *testing.T) {
	e := setup(t, withConsole())
	e.putRoom("presale", `{"capacity": 1, "entry": "invite"}`)
	e.putRoom("open", `{"capacity": 1}`)
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#rooms tbody a")))
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/open")); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#ctl-pause")
	if eval[bool](t, ctx, `document.getElementById('invite-codes') !== null`) {
		t.Fatal("an open room's page offers invite codes")
	}
	// Made a room by invitation through its form, it offers them.
	until(t, "the room's form", func() bool { return eval[string](t, ctx, `document.getElementById('edit-room-capacity').value`) == "1" })
	if err := chromedp.Do(ctx, typed("#edit-room-entry", "invite"), chromedp.Click(chromedp.CSS("#edit button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#invite-codes"))); err != nil {
		t.Fatal(err)
	}
	if got := e.roomConfig("open")["entry"]; got != "invite" {
		t.Fatalf("the room's entry after the form: %v", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/presale"), chromedp.WaitVisible(chromedp.CSS("#invite-codes")),
		chromedp.SendKeys(chromedp.CSS("#invite-codes"), "K7Q-2M\nK7Q-3N, K7Q-2M"), chromedp.Click(chromedp.CSS("#ctl-add_invites"))); err != nil {
		t.Fatal(err)
	}
	want := "Added 2 new codes. Send each invitee its link: " + e.srv.URL + "/r/presale?invite=CODE"
	until(t, "the codes added", func() bool { return text(t, ctx, "#status") == want })
	screenshot(t, ctx, "console-invites")
	// One more says so in the singular ("Added 1 new codes" before), and codes all added already say that.
	for _, c := range [][2]string{{"K7Q-4P", "Added 1 new code. Send the invitee its link: " + e.srv.URL + "/r/presale?invite=CODE"},
		{"K7Q-4P K7Q-2M", "No new codes: each was added already."}} {
		codes, want := c[0], c[1]
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#invite-codes"), codes), chromedp.Click(chromedp.CSS("#ctl-add_invites"))); err != nil {
			t.Fatal(err)
		}
		until(t, "the answer to "+codes, func() bool { return text(t, ctx, "#status") == want })
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/rooms/presale/join", nil)
	req.Header.Set("Rushgate-Invite", "K7Q-3N")
	e.want(e.send(req), 200, "")
}

// TestConsoleTimesAreLocal: an operator in Seoul types a drop's opening in Seoul time and the drop
// opens at that instant (20:00 there is 11:00Z), the form shows the API's UTC back in Seoul time and
// says which zone it speaks, a save that leaves a time alone sends back the very instant it read
// (fractions of a second included, so the audit log lists no change).
func TestConsoleTimesAreLocal(t *testing.T) {
	e := setup(t, withConsole())
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Seoul"})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	e.putRoom("lobby", `{"capacity": 5}`)
	seoul := time.FixedZone("KST", 9*3600) // Korea keeps no summer time
	// shown is a time as a datetime-local input holds it: without its seconds when they are zero.
	shown := func(at time.Time) string {
		if at.Second() == 0 {
			return at.Format("2006-01-02T15:04")
		}
		return at.Format("2006-01-02T15:04:05")
	}
	opens := e.clock.Now().Add(48 * time.Hour).Truncate(time.Hour).In(seoul)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops")),
		chromedp.Click(chromedp.CSS(`details:has(form[data-kind=drop]) summary`)),
		chromedp.SendKeys(chromedp.CSS("#new-drop-id"), "night sale"), chromedp.SendKeys(chromedp.CSS("#new-drop-stock"), "10"),
		typed("#new-drop-opens_at", shown(opens)),
		chromedp.Click(chromedp.CSS(`form[data-kind=drop] button[type=submit]`)))
	// The form offers the rooms there are where it names one.
	until(t, "the rooms offered", func() bool {
		return eval[string](t, ctx, `(() => { const l = document.getElementById('new-drop-room').list;
			return l ? [...l.options].map(o => o.value).join(',') : ''; })()`) == "lobby"
	})
	// An id the API would refuse is the browser's to refuse, with the rule in the console's words.
	if state := eval[string](t, ctx, `(() => { const i = document.getElementById('new-drop-id');
		return i.matches(':invalid') + ' ' + i.title + ' ' + Boolean(document.querySelector('#drops tbody a')); })()`); state != "true An ID is 1-64 characters of A-Z, a-z, 0-9, _ and -. false" {
		t.Fatalf("an id with a space: invalid, rule, a drop listed = %s", state)
	}
	if err := chromedp.Do(ctx, typed("#new-drop-id", "night"), typed("#new-drop-identity", "site"),
		chromedp.Click(chromedp.CSS(`form[data-kind=drop] button[type=submit]`))); err != nil {
		t.Fatal(err)
	}
	config := func() map[string]any {
		c, _ := e.do("GET", "/v1/drops/night/config", adminKey, "").body["config"].(map[string]any)
		return c
	}
	until(t, "the drop", func() bool { return config() != nil })
	if got, want := config()["opens_at"], opens.UTC().Format(time.RFC3339); got != want {
		t.Fatalf("typed %s in Seoul, the drop opens at %v; want %s", opens.Format(time.DateTime), got, want)
	}
	if got := config()["identity"]; got != "site" {
		t.Fatalf("chose the site's customers; the drop's identity is %v", got)
	}
	until(t, "the drop's page", func() bool {
		return eval[string](t, ctx, `(document.getElementById('edit-drop-opens_at') || {}).value || ''`) == shown(opens)
	})
	if label := text(t, ctx, `label[for=edit-drop-opens_at]`); label != "Opens at (your time, Asia/Seoul, UTC+09:00)" {
		t.Fatalf("the time's label says %q", label)
	}

	// A time to the millisecond, set through the API, survives a save of another field untouched.
	precise := opens.Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	e.want(e.do("PUT", "/v1/drops/night", adminKey, `{"stock": 10, "opens_at": "`+precise+`"}`), 200, "")
	until(t, "the form to show the new time", func() bool {
		return eval[string](t, ctx, `document.getElementById('edit-drop-opens_at').value`) == shown(opens.Add(time.Second))
	})
	if err := chromedp.Do(ctx, typed("#edit-drop-stock", "12"), chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the save", func() bool { return config()["stock"] == 12.0 })
	if got := config()["opens_at"]; got != precise {
		t.Fatalf("a save that left the opening alone moved it from %s to %v", precise, got)
	}

	screenshot(t, ctx, "console-time-local")
}

// TestConsoleDeletes: a drop is deleted from its page by two presses, the first of which only asks,
// and the page then shows the overview; the page of a drop that has claims, or of an auction with a
// bid, offers no delete, which the API would refuse (it offered one, and said why not once pressed); the
// auction's form leaves its title and message to edit, and saves a message.
func TestConsoleDeletes(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/spare", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("PUT", "/v1/drops/taken", adminKey, e.dropCfg("")), 200, "")
	e.want(e.do("POST", "/v1/drops/taken/claims", "", ""), 201, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/spare"), chromedp.Click(chromedp.CSS("#ctl-delete")))
	until(t, "the press to ask", func() bool { return text(t, ctx, "#ctl-delete") == "Press again to delete" })
	e.want(e.do("GET", "/v1/drops/spare", "", ""), 200, "")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-delete"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the overview", func() bool { return eval[string](t, ctx, `location.pathname`) == "/admin" })
	e.want(e.do("GET", "/v1/drops/spare", "", ""), 404, "drop_not_found")

	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/auctions/bid-on", adminKey, `{"title": "Lot", "currency": "KRW", "start_price": 1000, "increment": 100,
		"starts_at": "`+now.Add(-time.Minute).Format(time.RFC3339)+`", "ends_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`"}`), 200, "")
	e.want(e.do("POST", "/v1/auctions/bid-on/bids", e.visitorToken("w"), `{"amount": 1500}`), 201, "")
	for _, page := range []string{"/admin/drops/taken", "/admin/auctions/bid-on"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+page)); err != nil {
			t.Fatal(err)
		}
		until(t, "the controls of "+page, func() bool {
			return eval[int](t, ctx, `document.querySelectorAll('#controls button').length`) > 0
		})
		if n := eval[int](t, ctx, `document.querySelectorAll('#ctl-delete').length`); n != 0 {
			t.Fatalf("%s offers a delete the API refuses", page)
		}
	}
	// The auction's form leaves its title and message alone to edit, and says why.
	until(t, "the auction's note", func() bool { return strings.HasPrefix(text(t, ctx, "#fixed-note"), "Bids were made") })
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#edit [name]')].filter(i => !i.disabled).map(i => i.name).join(' ')`); got != "title message" {
		t.Fatalf("the form of an auction with a bid leaves %q to edit", got)
	}
	if err := chromedp.Do(ctx, typed("#edit-auction-message", "Shipping within Korea only."),
		chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the message saved", func() bool {
		return e.do("GET", "/v1/auctions/bid-on", "", "").str("message") == "Shipping within Korea only."
	})
	e.want(e.do("GET", "/v1/drops/taken", "", ""), 200, "")
}

// TestConsoleSaysAFollowedDropStays: the page of a drop whose room follows its stock names the room
// and offers no delete, which the API would refuse; a save that moves the drop from behind the room is
// refused, the form saying which room holds it and what to do, in Korean on a Korean page; the drop
// stays behind its room.
func TestConsoleSaysAFollowedDropStays(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/held", adminKey, e.dropCfg(`, "room": "line"`)), 200, "")
	e.want(e.do("PUT", "/v1/rooms/line", adminKey, `{"capacity": 2, "drop": "held"}`), 200, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=ko", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/held"))
	shown := shownIn(t, ctx)
	until(t, "the room that follows it", func() bool { return shown("[data-card=followed_by] .v") == "line" })
	until(t, "the controls", func() bool { return eval[int](t, ctx, `document.querySelectorAll('#controls button').length`) > 0 })
	if n := eval[int](t, ctx, `document.querySelectorAll('#ctl-delete').length`); n != 0 {
		t.Fatal("the page of a followed drop offers a delete the API refuses")
	}
	screenshot(t, ctx, "console-drop-followed-cards-ko")
	until(t, "the form", func() bool { return eval[string](t, ctx, `document.getElementById('edit-drop-room').value`) == "line" })
	// Cleared as an operator clears it, an input event telling the form it was edited.
	eval[bool](t, ctx, `(() => { const i = document.getElementById('edit-drop-room'); i.value = '';
		return i.dispatchEvent(new Event('input', {bubbles: true})); })()`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	want := "대기실 line이(가) 이 드롭의 재고를 따르고 있습니다. 먼저 그 대기실의 드롭을 비우거나 대기실을 지우세요."
	until(t, "the refusal", func() bool { return shown("#edit-drop-room-err") == want })
	if d := e.do("GET", "/v1/drops/held", "", ""); d.str("room") != "line" {
		t.Fatalf("the refused save moved the drop: %v", d.body)
	}
	screenshot(t, ctx, "console-drop-followed-ko")
}

// TestConsoleSaysASalesRoomIsMissing: the page of a drop or an auction behind a room that does not
// exist says so, since nobody can be let in to claim or bid and its visitors' page sends them to a
// line that is not there; once the room is made, the note goes.
func TestConsoleSaysASalesRoomIsMissing(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/drops/orphan", adminKey, e.dropCfg(`, "room": "ghost"`)), 200, "")
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, `{"title": "Lot", "currency": "KRW", "start_price": 1000, "increment": 100,
		"room": "ghost", "starts_at": "`+now.Add(-time.Minute).Format(time.RFC3339)+`", "ends_at": "`+now.Add(time.Hour).Format(time.RFC3339)+`"}`), 200, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")))
	shown := shownIn(t, ctx)
	for _, page := range []string{"/admin/auctions/lot", "/admin/drops/orphan"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+page)); err != nil {
			t.Fatal(err)
		}
		until(t, "the missing room on "+page, func() bool {
			return shown("[data-card=room_missing] .v") == "ghost" && shown("[data-card=room_missing] .k") == "Room missing: nobody gets in"
		})
	}
	screenshot(t, ctx, "console-drop-room-missing")
	e.want(e.do("PUT", "/v1/rooms/ghost", adminKey, `{"capacity": 2}`), 200, "")
	until(t, "the note gone", func() bool {
		return eval[int](t, ctx, `document.querySelectorAll('[data-card=room_missing]').length`) == 0 && shown("[data-card=status] .v") != ""
	})
}

// TestConsoleEndedSales: the page of a sold-out drop offers no "Open now" (opening it changes
// nothing) and no delete (it has claims), and a sold auction's names its buyer as the winner, where
// "Leading bidder" said "–" since a buyer never leads.
func TestConsoleEndedSales(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/gone", adminKey, e.dropCfg("")), 200, "") // stock 2
	for _, v := range []string{"a", "b"} {
		e.want(e.do("POST", "/v1/drops/gone/claims", e.visitorToken(v), ""), 201, "")
	}
	e.want(e.do("PUT", "/v1/auctions/sold", adminKey, e.auctionCfg(`, "buy_now_price": 9000`)), 200, "")
	e.want(e.do("POST", "/v1/auctions/sold/buy-now", e.visitorToken("buyer"), ""), 200, "")
	buyer := e.do("GET", "/v1/auctions/sold", "", "").str("winner")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/gone"), chromedp.WaitVisible(chromedp.CSS("#controls a.download")))
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#controls button')].map(b => b.id).join(' ')`); got != "" {
		t.Fatalf("a sold-out drop's controls: %s", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/auctions/sold"), chromedp.WaitVisible(chromedp.CSS("#controls a.download"))); err != nil {
		t.Fatal(err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#ctl-delete').length`); n != 0 {
		t.Fatal("a sold auction offers a delete the API refuses")
	}
	until(t, "the winner's card", func() bool {
		return eval[string](t, ctx, `(document.querySelector('[data-card="winner"]') || {}).textContent || ''`) == buyer+"Winner"
	})
	if eval[string](t, ctx, `String(!!document.querySelector('[data-card="leader"]'))`) != "false" {
		t.Fatal("a sold auction still has a leading bidder's card")
	}
	// Its message to the bidders still changes after the sale; its terms, tiers of increment among them,
	// do not, and go back as they were. The page fixes the form after it has read the audit log, which
	// comes after the cards: under load, well after the winner's.
	disabled := `['title', 'message', 'start_price'].map(n => document.querySelector('#edit [name=' + n + ']').disabled).join(' ')`
	until(t, "the sold auction's terms fixed", func() bool { return eval[string](t, ctx, disabled) == "false false true" })
	if err := chromedp.Do(ctx, typed("#edit-auction-message", "The buyer has been contacted"),
		chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the message after the sale", func() bool {
		return e.do("GET", "/v1/auctions/sold", "", "").str("message") == "The buyer has been contacted"
	})
	if inc := e.do("GET", "/v1/auctions/sold/config", adminKey, "").body["config"].(map[string]any)["increment"]; fmt.Sprint(inc) != "[map[from:0 step:100] map[from:5000 step:250]]" {
		t.Fatalf("the increment after a save from the console: %v", inc)
	}
	// At a phone's width the id, longer than the card is wide, breaks inside it; it ran out of it.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if out := eval[string](t, ctx, `(() => { const v = document.querySelector('[data-card="winner"] .v');
		return String(v.scrollWidth > v.clientWidth); })()`); out != "false" {
		t.Fatal("the winner's id runs out of its card at a phone's width")
	}
}

// TestConsoleFindsACode: an operator types the code a customer presents, and presses Enter: the
// drop's page says which claim handed it out and whether the code was used, or that none did, in the
// operator's language; two presses mark an unused code used.
func TestConsoleFindsACode(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/coupon", adminKey, e.dropCfg("")), 200, "")
	won := e.do("POST", "/v1/drops/coupon/claims", e.visitorToken("kim"), "")
	e.want(won, 201, "")
	visitor := e.do("GET", "/v1/drops/coupon/claims", adminKey, "").body["claims"].([]any)[0].(map[string]any)["visitor"].(string)
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/coupon"), chromedp.WaitVisible(chromedp.CSS("#ctl-close_now")))
	shown := shownIn(t, ctx)
	find := func(code string) {
		t.Helper()
		eval[string](t, ctx, `document.getElementById('code').value = ''`)
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#code"), code+kb.Enter)); err != nil {
			t.Fatal(err)
		}
	}
	find(" " + won.str("code") + " ") // as pasted from a message, spaces and all
	until(t, "the claim", func() bool {
		got := shown("#found")
		return strings.HasPrefix(got, "Claim #1, by visitor "+visitor+", at ") && strings.HasSuffix(got, ". Not used yet. Mark as used")
	})
	screenshot(t, ctx, "console-find-code")
	codePath := "/v1/drops/coupon/codes/" + won.str("code")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-mark_used"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the press to ask", func() bool { return shown("#ctl-mark_used") == "Press again to mark it used" })
	if got := e.do("GET", codePath, adminKey, ""); got.body["redeemed_at"] != nil {
		t.Fatalf("one press marked the code used: %v", got.body)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-mark_used"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the code used", func() bool { return strings.Contains(shown("#found"), ". Used at ") })
	used := e.do("GET", codePath, adminKey, "")
	if used.str("redeemed_at") == "" || eval[string](t, ctx, `String(!!document.getElementById('ctl-mark_used'))`) != "false" {
		t.Fatalf("after two presses the code is %v, and the page still offers to mark it", used.body)
	}
	screenshot(t, ctx, "console-code-used")
	// The order was cancelled: two presses make the code usable again.
	for _, press := range []string{"Press again: the order was cancelled", "Mark as used"} {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#ctl-unredeem"))); err != nil {
			t.Fatal(err)
		}
		if press == "Mark as used" {
			until(t, "the code usable again", func() bool { return shown("#ctl-mark_used") == press })
		} else {
			until(t, "the press to ask", func() bool { return shown("#ctl-unredeem") == press })
		}
	}
	if got := e.do("GET", codePath, adminKey, ""); got.body["redeemed_at"] != nil {
		t.Fatalf("the code handed back is %v", got.body)
	}
	e.want(e.do("POST", codePath+"/redeem", adminKey, `{"order": "o-9"}`), 200, "")
	until(t, "the count of used codes", func() bool {
		return eval[string](t, ctx, `(document.querySelector('[data-card="redeemed"] .v') || {}).textContent || ''`) == "1"
	})
	find(won.str("code"))
	until(t, "the code used by o-9", func() bool { return strings.Contains(shown("#found"), ", for order o-9.") })
	find(won.str("code")[:16] + "-2")
	until(t, "no claim", func() bool { return shown("#found") == "No claim of this drop has this code." })
	find("")
	until(t, "a code first", func() bool { return shown("#found") == "Type a code first." })

	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/drops/coupon?lang=ko"), chromedp.WaitVisible(chromedp.CSS("#ctl-close_now"))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "label[for=code]"); got != "고객이 제시한 코드" {
		t.Fatalf("the Korean label: %q", got)
	}
	find("NOPE")
	until(t, "no claim, in Korean", func() bool { return shown("#found") == "이 드롭에서 이 코드를 받은 수령이 없습니다." })
	// At a phone's width the box and its answer fit the screen.
	find(won.str("code"))
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.ScrollIntoView(chromedp.CSS("#find-code"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the claim, in Korean", func() bool {
		got := shown("#found")
		return strings.HasPrefix(got, "#1번 수령: 방문자 "+visitor) && strings.HasSuffix(got, ", 주문 o-9에 사용되었습니다. 다시 사용 가능하게")
	})
	if w := eval[float64](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Fatalf("the drop's console page is %v px wide on a 390 px phone", w)
	}
	screenshot(t, ctx, "console-find-code-phone-ko")
}

// TestConsoleAuditPages: an entity's page shows the newest twenty changes and reads older ones on
// request, until there are none; each change is listed once.
func TestConsoleAuditPages(t *testing.T) {
	e := setup(t, withConsole())
	e.putRoom("busy", `{"capacity": 1}`)
	for i := 2; i <= 26; i++ {
		e.want(e.do("PATCH", "/v1/rooms/busy", adminKey, fmt.Sprintf(`{"capacity": %d}`, i)), 200, "")
	}
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#rooms tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/rooms/busy"))
	listed := func() string {
		return eval[string](t, ctx, `document.querySelectorAll('#audit li').length + ' ' + (document.getElementById('audit-older') || {}).hidden`)
	}
	until(t, "the newest twenty", func() bool { return listed() == "20 false" })
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#audit-older"))); err != nil {
		t.Fatal(err)
	}
	until(t, "all 26, and no more to read", func() bool { return listed() == "26 true" })
	if last := text(t, ctx, "#audit li:last-child"); !strings.Contains(last, "created") {
		t.Fatalf("the oldest change listed is %q", last)
	}
}

// TestConsoleDropSchedule: a drop's page in the console says when the drop opens (until it does), when
// it closes and how many each visitor may claim, which an operator otherwise had to read from its
// form; and at a phone's width in Korean the overview's state badges stay on one line ("진행 중"
// broke in two).
func TestConsoleDropSchedule(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/drops/later", adminKey, fmt.Sprintf(`{"stock": 500, "per_visitor": 2, "opens_at": %q, "closes_at": %q,
		"title": "Concert tickets, second release"}`, now.Add(3*time.Hour).Format(time.RFC3339), now.Add(5*time.Hour).Format(time.RFC3339))), 200, "")
	e.want(e.do("PUT", "/v1/drops/now", adminKey, e.dropCfg(`, "title": "Two each"`)), 200, "")
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/admin?lang=ko"),
		chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#drops tbody a"))); err != nil {
		t.Fatal(err)
	}
	until(t, "both drops' badges", func() bool { return eval[int](t, ctx, `document.querySelectorAll('#drops .badge').length`) == 2 })
	if heights := eval[string](t, ctx, `[...document.querySelectorAll('#drops .badge')].map(b => b.getClientRects().length + ':' + b.offsetHeight).join(' ')`); strings.Count(heights, strings.Fields(heights)[0]) != 2 {
		t.Fatalf("the badges' lines and heights differ at a phone's width: %s", heights)
	}
	screenshot(t, ctx, "console-overview-phone-ko")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 900), chromedp.Navigate(e.srv.URL+"/admin/drops/later?lang=en")); err != nil {
		t.Fatal(err)
	}
	card := func(k string) string {
		return eval[string](t, ctx, `(document.querySelector('[data-card="`+k+`"]') || {}).textContent || ''`)
	}
	until(t, "the schedule's cards", func() bool { return card("per_visitor") == "2Per visitor" })
	if opens, closes := card("opens"), card("closes_at"); !strings.HasSuffix(opens, "Opens") || len(opens) < 12 || !strings.HasSuffix(closes, "Closes at") || len(closes) < 15 {
		t.Fatalf("the opening's card %q, the closing's %q", opens, closes)
	}
	screenshot(t, ctx, "console-drop-scheduled")
	// Open, a drop has no opening to come, and one without a closing time no closing card.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/drops/now?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "the open drop's cards", func() bool { return strings.HasSuffix(card("status"), "Status") && card("claimed") != "" })
	if got := card("opens") + card("closes_at") + card("per_visitor"); got != "" {
		t.Fatalf("an open drop of one each, with no closing time, shows %q", got)
	}
}

// TestConsoleRoomStates: the console tells what each room does with its line, where it said "admitting"
// of every room not paused, also of one that admits nobody before its opening or while it queues all;
// a room before its opening shows when it opens.
func TestConsoleRoomStates(t *testing.T) {
	e := setup(t, withConsole())
	opens := e.clock.Now().Add(time.Hour).Format(time.RFC3339)
	rooms := map[string]string{
		"a-fifo":        `{"capacity": 1}`,
		"b-paused":      `{"capacity": 1, "paused": true}`,
		"c-later":       fmt.Sprintf(`{"capacity": 1, "opens_at": %q}`, opens),
		"d-holding":     `{"capacity": 1, "mode": "queue_all"}`,
		"e-reject":      `{"capacity": 1, "mode": "reject"}`,
		"f-passthrough": `{"capacity": 1, "mode": "passthrough"}`,
	}
	for id, cfg := range rooms {
		e.putRoom(id, cfg)
	}
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#rooms tbody a")))
	want := "admitting paused opens later holding all no new joins letting all in"
	states := func() string {
		return eval[string](t, ctx, `[...document.querySelectorAll('#rooms tbody .badge')].map(b => b.textContent).join(' ')`)
	}
	until(t, "the rooms' states", func() bool { return states() == want })
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/c-later")); err != nil {
		t.Fatal(err)
	}
	card := func(k string) string {
		return eval[string](t, ctx, `(document.querySelector('[data-card="`+k+`"]') || {}).textContent || ''`)
	}
	until(t, "the room's state and opening", func() bool { return card("status") == "opens laterStatus" && strings.HasSuffix(card("opens"), "Opens") })
}

// TestConsoleSignInOnAPhone: at a phone's width the sign-in card keeps a margin from the screen's
// edges, and the key's field takes the card's width under its label; the card touched the edges, and
// label, field and button crowded one line.
func TestConsoleSignInOnAPhone(t *testing.T) {
	e := setup(t, withConsole())
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/admin?lang=ko"),
		chromedp.WaitVisible(chromedp.CSS("#key"))); err != nil {
		t.Fatal(err)
	}
	got := eval[string](t, ctx, `(() => {
		const card = document.querySelector('main.login').getBoundingClientRect();
		const label = document.querySelector('label[for=key]').getBoundingClientRect();
		const key = document.getElementById('key').getBoundingClientRect();
		return [card.left >= 12 && 390 - card.right >= 12, key.top >= label.bottom, key.width > card.width * 0.7].join(' ');
	})()`)
	if got != "true true true" {
		t.Fatalf("margins kept, field under its label, field as wide as the card: %s", got)
	}
	screenshot(t, ctx, "console-signin-phone-ko")
}

// TestConsoleOverviewShowsMore: a console with more drops than its overview lists at first offers
// the rest, 200 more at a press, and keeps showing them as it refreshes; it listed the first 200 and
// said nothing of the others.
func TestConsoleOverviewShowsMore(t *testing.T) {
	e := setup(t, withConsole())
	for i := range 205 {
		e.want(e.do("PUT", fmt.Sprintf("/v1/drops/d%03d", i), adminKey, e.dropCfg("")), 200, "")
	}
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")))
	listed := func() string {
		return eval[string](t, ctx, `document.querySelectorAll('#drops tbody tr').length + ' ' + document.getElementById('drops-more').hidden +
			' ' + document.getElementById('rooms-more').hidden + ' ' + document.querySelector('#drops tbody tr:last-child a').textContent`)
	}
	until(t, "the first 200 and the offer of more", func() bool { return listed() == "200 false true d199" })
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView("#drops-more")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "console-overview-more")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#drops-more"))); err != nil {
		t.Fatal(err)
	}
	until(t, "all 205", func() bool { return listed() == "205 true true d204" })
	refreshed := eval[string](t, ctx, `document.body.dataset.updated`)
	until(t, "a refresh", func() bool { return eval[string](t, ctx, `document.body.dataset.updated`) != refreshed })
	if got := listed(); got != "205 true true d204" {
		t.Fatalf("after a refresh the overview lists %s", got)
	}
}

// TestConsoleShowsWhatIsGone: the page of a drop deleted while it is open (by another operator, or the
// API) keeps only its changes, the deletion first, under "It no longer exists."; its figures, controls
// and settings stayed as last read, and offered to close or delete what was gone. A page of an id
// that never existed shows the same, with no changes.
func TestConsoleShowsWhatIsGone(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/gone", adminKey, e.dropCfg("")), 200, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/gone"), chromedp.WaitVisible(chromedp.CSS("#ctl-delete")))
	drawn := func() string {
		return eval[string](t, ctx, `['cards', 'controls', 'charts', 'find-code', 'edit', 'audit'].map(id => { const el = document.getElementById(id); return el && el.getClientRects().length > 0 ? id : '-'; }).join(' ')`)
	}
	if got := drawn(); got != "cards controls charts find-code edit audit" {
		t.Fatalf("a drop's page draws %s", got)
	}
	e.want(e.do("DELETE", "/v1/drops/gone", adminKey, ""), 200, "")
	until(t, "the drop gone", func() bool {
		return text(t, ctx, "#status") == "It no longer exists." && drawn() == "- - - - - audit" &&
			strings.Contains(eval[string](t, ctx, `document.querySelector('#audit li').textContent`), "deleted")
	})
	screenshot(t, ctx, "console-drop-gone")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/auctions/never")); err != nil {
		t.Fatal(err)
	}
	until(t, "an auction that never was", func() bool {
		return text(t, ctx, "#status") == "It no longer exists." && drawn() == "- - - - - audit"
	})
}

// TestConsoleBigFigures: an auction's price in won, ₩1,250,000,000, broke before its last digit in its
// card at a phone's width; a figure now fits its card on one line, while a long visitor id still breaks
// rather than leave it.
func TestConsoleBigFigures(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	e.want(e.do("PUT", "/v1/auctions/big", adminKey, fmt.Sprintf(`{"title": "VIP", "currency": "KRW", "start_price": 1250000000,
		"increment": 10000000, "starts_at": %q, "ends_at": %q}`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))), 200, "")
	e.want(e.do("POST", "/v1/auctions/big/bids", e.visitorToken("a-customer-with-a-rather-long-subject"), `{"amount": 1250000000}`), 201, "")
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(360, 740), chromedp.Navigate(e.srv.URL+"/admin?lang=ko"),
		chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#auctions tbody a")), chromedp.Navigate(e.srv.URL+"/admin/auctions/big?lang=ko")); err != nil {
		t.Fatal(err)
	}
	// A card's figure: its text, on how many lines, and whether it overflows its card.
	card := func(k string) string {
		return eval[string](t, ctx, `(() => { const v = document.querySelector('[data-card="`+k+`"] .v'); if (!v) return '';
			const r = document.createRange(); r.selectNodeContents(v);
			return [v.textContent, r.getClientRects().length, v.scrollWidth > v.clientWidth].join('|'); })()`)
	}
	until(t, "the price's card", func() bool { return card("price") != "" })
	if got := card("price"); got != "₩1,250,000,000|1|false" {
		t.Fatalf("the price's card: %s; want it on one line, within its card", got)
	}
	if got := card("leader"); strings.HasSuffix(got, "|true") || strings.Count(got, "|") != 2 {
		t.Fatalf("the leader's card: %s; want it within its card", got)
	}
	screenshot(t, ctx, "console-big-price-phone-ko")
}

// TestConsoleShowsWebhooks: with webhooks on, the overview lists the last ones and how each went (taken
// by the site, to be sent again with why the site refused it, or given up), each linking its auction,
// in English and Korean; without, it shows no such section.
func TestConsoleShowsWebhooks(t *testing.T) {
	db, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.QueueWebhooks(true)
	ctx := context.Background()
	now := time.Now()
	for i, id := range []string{"taken", "refused", "given-up"} {
		st := auction.State{Config: auction.Config{Title: "Lot " + id, Currency: "EUR"}}
		if err := db.Record(ctx, id, st, []auction.Event{{Seq: 3, Kind: auction.EventClosed, Bidder: "v_x", Price: 1000, At: now.Add(time.Duration(i) * time.Second)}}); err != nil {
			t.Fatal(err)
		}
	}
	due, err := db.DueWebhooks(ctx, now.Add(time.Minute), 10, time.Minute)
	if err != nil || len(due) != 3 {
		t.Fatalf("due %v %v", due, err)
	}
	for _, err := range []error{db.WebhookDelivered(ctx, due[0].ID, now), db.WebhookRetry(ctx, due[1].ID, "503 Service Unavailable", now.Add(time.Hour)),
		db.WebhookFailed(ctx, due[2].ID, "404 Not Found")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e := setup(t, withConsole(), func(c *httpapi.Config, _ *room.Store) {
		c.Webhooks, c.WebhookURL = db, "https://shop.example/hooks/rushgate"
	})
	tb := tab(t)
	rows := func() string {
		return eval[string](t, tb, `[...document.querySelectorAll('#webhooks tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|')).join('\n')`)
	}
	signIn(t, tb, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#webhooks tbody td")))
	until(t, "the webhooks", func() bool { return strings.Count(rows(), "\n") == 2 })
	got := strings.Split(rows(), "\n")
	if !strings.HasPrefix(got[0], "given-up auction ended|given up|1|Last refused: 404 Not Found") ||
		!strings.HasPrefix(got[1], "refused auction ended|to send|1|Last refused: 503 Service Unavailable Next try at ") ||
		!strings.HasPrefix(got[2], "taken auction ended|delivered|1|Taken at ") {
		t.Fatalf("the webhooks, newest first:\n%s", rows())
	}
	if u := eval[string](t, tb, `document.getElementById('webhooks-url').textContent`); !strings.Contains(u, "https://shop.example/hooks/rushgate") {
		t.Fatalf("the section says %q", u)
	}
	if href := eval[string](t, tb, `document.querySelector('#webhooks tbody a').getAttribute('href')`); href != "/admin/auctions/given-up" {
		t.Fatalf("an event links %q", href)
	}
	eval[string](t, tb, `document.getElementById('webhooks-section').scrollIntoView(); ''`)
	screenshot(t, tb, "console-webhooks")
	// The site is back: the one given up is sent at once on a press, which the delivered one does not offer.
	if n := eval[int](t, tb, `document.querySelectorAll('#webhooks button.send-now').length`); n != 2 {
		t.Fatalf("%d rows offer to send now, want the 2 not delivered", n)
	}
	if err := chromedp.Do(tb, chromedp.Click(chromedp.CSS("#webhooks tbody tr:first-child button.send-now"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the given-up one to be sent again", func() bool { return strings.HasPrefix(rows(), "given-up auction ended|to send|1|") })
	if e.do("POST", "/v1/webhooks/auction.none.1.0/send", adminKey, "").errCode() != "webhook_not_found" {
		t.Fatal("an unknown webhook was sent now")
	}
	// Before an auction ends, the operator checks the site's endpoint with a test event.
	if err := chromedp.Do(tb, chromedp.Click(chromedp.CSS("#webhook-ping"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the test event", func() bool { return strings.Contains("\n"+rows(), "\ntest event|to send|0|Not sent yet.") })
	if err := chromedp.Do(tb, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/admin?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "the webhooks in Korean", func() bool {
		return strings.Contains(rows(), "전송 대기") && strings.Contains(rows(), "전달됨") && strings.Contains(rows(), "지금 보내기")
	})
	eval[string](t, tb, `document.getElementById('webhooks').scrollIntoView(); ''`)
	if wide := eval[bool](t, tb, `document.documentElement.scrollWidth > innerWidth`); wide {
		t.Fatal("the webhooks make the overview scroll sideways at a phone's width")
	}
	screenshot(t, tb, "console-webhooks-phone-ko")

	// An auction's page says, once it is over, whether the site was told: not yet, then as its webhook goes.
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", e.visitorToken("w"), `{"amount": 1500}`), 201, "")
	card := func() string {
		return eval[string](t, tb, `(document.querySelector('[data-card="site_told"]') || {}).textContent || ''`)
	}
	tb = tab(t) // a tab's time is bounded: this part has its own
	signIn(t, tb, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#auctions tbody td")),
		chromedp.Navigate(e.srv.URL+"/admin/auctions/lot?lang=en"))
	until(t, "the auction's cards", func() bool {
		return eval[string](t, tb, `(document.querySelector('[data-card="status"]') || {}).textContent || ''`) != ""
	})
	if card() != "" {
		t.Fatalf("a running auction's page says the site was told: %q", card())
	}
	e.want(e.do("POST", "/v1/auctions/lot/end", adminKey, ""), 200, "")
	until(t, "not told yet", func() bool { return card() == "not yetSite told" })
	ended := e.do("GET", "/v1/auctions/lot", "", "")
	if err := db.Record(ctx, "lot", auction.State{}, []auction.Event{{Seq: ended.num("seq"), Kind: auction.EventClosed, Bidder: "w",
		Price: 1500, At: time.Now()}}); err != nil { // as the recorder writes it
		t.Fatal(err)
	}
	until(t, "to send", func() bool { return card() == "to sendSite told" })
	lot, err := db.Webhooks(ctx, notify.Filter{Auction: "lot"}, 1)
	if err != nil || len(lot) != 1 {
		t.Fatal(lot, err)
	}
	if err := db.WebhookDelivered(ctx, lot[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	until(t, "delivered", func() bool { return card() == "deliveredSite told" })

	plain := setup(t, withConsole())
	tb = tab(t)
	signIn(t, tb, plain.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#auctions tbody td")))
	until(t, "a refresh", func() bool { return eval[string](t, tb, `document.body.dataset.updated || ''`) != "" })
	if shown := eval[bool](t, tb, `document.getElementById('webhooks-section').hidden`); !shown {
		t.Fatal("a console without webhooks shows their section")
	}
	if code := plain.do("POST", "/v1/webhooks/ping", adminKey, "").errCode(); code != "webhooks_off" {
		t.Fatalf("a test event without webhooks: %q", code)
	}
}

// downWebhooks is a queue of webhooks whose record does not answer.
type downWebhooks struct{}

func (downWebhooks) Webhooks(context.Context, notify.Filter, int) ([]notify.Webhook, error) {
	return nil, rushgate.ErrRecordUnavailable
}
func (downWebhooks) SendWebhookNow(context.Context, string, time.Time) (notify.Webhook, error) {
	return notify.Webhook{}, rushgate.ErrRecordUnavailable
}
func (downWebhooks) QueuePing(context.Context, time.Time) (notify.Webhook, error) {
	return notify.Webhook{}, rushgate.ErrRecordUnavailable
}

// TestConsoleWithoutItsWebhooks: while the SQL record that keeps the webhooks does not answer, the
// overview still lists what the state store holds, and an ended auction's page its figures: the
// webhooks' read made the whole refresh fail, "Cannot reach rushgate".
func TestConsoleWithoutItsWebhooks(t *testing.T) {
	e := setup(t, withConsole(), func(c *httpapi.Config, _ *room.Store) {
		c.Webhooks, c.WebhookURL = downWebhooks{}, "https://shop.example/hooks"
	})
	e.putRoom("sale", `{"capacity": 2}`)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg("")), 200, "")
	e.want(e.do("POST", "/v1/auctions/lot/end", adminKey, ""), 200, "")
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#rooms tbody a")))
	until(t, "a refresh", func() bool { return eval[string](t, ctx, `document.body.dataset.updated || ''`) != "" })
	if s := eval[string](t, ctx, `document.getElementById('status').textContent`); s != "" {
		t.Fatalf("the overview says %q", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/auctions/lot?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "the ended auction's cards", func() bool {
		return eval[string](t, ctx, `(document.querySelector('[data-card="status"]') || {}).textContent || ''`) == "closedStatus"
	})
	if s := eval[string](t, ctx, `document.getElementById('status').textContent`); s != "" {
		t.Fatalf("the auction's page says %q", s)
	}
}

// TestConsoleOffersABackup: on the embedded backend the overview offers a backup, which downloads with
// the console's session alone (in English and Korean); without one to take (Redis), it offers none.
func TestConsoleOffersABackup(t *testing.T) {
	dir := t.TempDir()
	db, err := record.OpenSQLite(context.Background(), filepath.Join(dir, record.File), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b, err := memstore.Open(context.Background(), db, dir, record.FsyncNo, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	var failing atomic.Bool
	lines := func(w io.Writer) error {
		if failing.Load() {
			return errors.New("disk full")
		}
		return b.Rooms().Save(w)
	}
	bk := backup.New(backup.Source{Dir: dir, Record: db, Lines: lines, Secrets: true}, nil)
	e := setup(t, withBackups(bk), func(c *httpapi.Config, _ *room.Store) {
		c.Console = console.New(console.Config{AdminKey: adminKey, Backups: true})
	})
	tb := tab(t)
	shown := shownIn(t, tb)
	for _, lang := range []struct{ code, label string }{{"ko", "백업 내려받기"}, {"en", "Download a backup"}} {
		if err := chromedp.Do(tb, chromedp.Navigate(e.srv.URL+"/admin?lang="+lang.code)); err != nil {
			t.Fatal(err)
		}
		if lang.code == "ko" {
			if err := chromedp.Do(tb, chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login"))); err != nil {
				t.Fatal(err)
			}
		}
		if err := chromedp.Do(tb, chromedp.WaitVisible(chromedp.CSS("#backup"))); err != nil {
			t.Fatal(err)
		}
		until(t, "the backup's label in "+lang.code, func() bool {
			return eval[string](t, tb, `document.getElementById('backup').textContent`) == lang.label
		})
	}
	until(t, "no schedule", func() bool { return strings.HasPrefix(shown("#backup-kept"), "Not kept on a schedule") })

	// Kept on a schedule, then one that fails: the overview says what is kept, and why the last failed.
	kept := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		bk.Keep(ctx, backup.Schedule{Dir: kept, Every: 24 * time.Hour, Keep: 7, Log: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	until(t, "a kept backup", func() bool { return len(bk.Status().Kept) == 1 })
	failing.Store(true)
	// The kept one is in place a moment before its schedule lets go of it: a download meanwhile waits for it.
	until(t, "a failed download", func() bool { return e.do("GET", "/v1/backup", adminKey, "").code == http.StatusServiceUnavailable })
	failing.Store(false)
	for _, lang := range []struct{ code, kept, failed string }{
		{"ko", kept + "에 24시간마다 보관합니다: 지금 1개, 가장 최근 것은 rushgate-backup-", "마지막 백업이 실패했습니다("},
		{"en", "Kept every 24h in " + kept + ": 1 now, the newest rushgate-backup-", "The last backup failed, "},
	} {
		if err := chromedp.Do(tb, chromedp.Navigate(e.srv.URL+"/admin?lang="+lang.code)); err != nil {
			t.Fatal(err)
		}
		until(t, "what is kept, in "+lang.code, func() bool {
			return strings.HasPrefix(shown("#backup-kept"), lang.kept) && strings.HasPrefix(shown("#backup-failed"), lang.failed) &&
				strings.HasSuffix(shown("#backup-failed"), "disk full")
		})
	}
	eval[string](t, tb, `document.getElementById('backup-section').scrollIntoView(); ''`)
	screenshot(t, tb, "console-backup")
	t.Logf("%s / %s", shown("#backup-kept"), shown("#backup-failed"))
	// At a phone's width the long names break rather than make the page scroll sideways.
	if err := chromedp.Do(tb, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/admin?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "what is kept, at a phone's width", func() bool {
		return strings.HasPrefix(shown("#backup-failed"), "마지막 백업이 실패했습니다(")
	})
	eval[string](t, tb, `document.getElementById('backup-section').scrollIntoView(); ''`)
	if wide := eval[bool](t, tb, `document.documentElement.scrollWidth > innerWidth`); wide {
		t.Error("the backup's lines make the overview scroll sideways at a phone's width")
	}
	screenshot(t, tb, "console-backup-phone-ko")

	// What the link gets, with the session's cookie and nothing else: the archive.
	eval[string](t, tb, `fetch(document.getElementById('backup').href).then(r => r.arrayBuffer().then(b => {
		const a = new Uint8Array(b);
		window.got = r.status + ' ' + r.headers.get('content-type') + ' ' + a[0].toString(16) + a[1].toString(16);
	})); ''`)
	until(t, "the download", func() bool { return eval[string](t, tb, `window.got || ''`) != "" })
	if got := eval[string](t, tb, `window.got`); got != "200 application/gzip 1f8b" {
		t.Fatalf("the backup link got %q", got)
	}

	// Sealed to recipients, the backups say so.
	_, rec, err := backup.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	to, _ := backup.ParseRecipients(rec)
	sealed := setup(t, withBackups(backup.New(backup.Source{Dir: t.TempDir()}, nil, to...)), func(c *httpapi.Config, _ *room.Store) {
		c.Console = console.New(console.Config{AdminKey: adminKey, Backups: true})
	})
	if err := chromedp.Do(tb, chromedp.Navigate(sealed.srv.URL+"/admin?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "sealed backups", func() bool {
		return strings.HasSuffix(shown("#backup-kept"), "Every backup is sealed to the keys of --backup-recipient: only their identities restore it (rushgate restore --identity).")
	})

	e = setup(t, withConsole())
	tb = tab(t)
	if err := chromedp.Do(tb, chromedp.Navigate(e.srv.URL+"/admin?lang=en")); err != nil {
		t.Fatal(err)
	}
	// The session of the first server, signed with the same admin key, may sign this one in already.
	if eval[bool](t, tb, `document.getElementById('key') !== null`) {
		if err := chromedp.Do(tb, chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Submit(chromedp.CSS("#login"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(tb, chromedp.WaitVisible(chromedp.CSS("#rooms"))); err != nil {
		t.Fatal(err)
	}
	if eval[bool](t, tb, `document.getElementById('backup-section') !== null`) {
		t.Fatal("a console without backups offers one")
	}
}

// TestConsoleShowsADropsEnd: once a drop has sold out, the overview lists the event of its end, which
// links to the drop, and the drop's page says whether the site was told (in English and Korean).
func TestConsoleShowsADropsEnd(t *testing.T) {
	db, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), record.File), record.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.QueueWebhooks(true)
	e := setup(t, withConsole(), func(c *httpapi.Config, _ *room.Store) {
		c.Webhooks, c.WebhookURL = db, "https://shop.example/hooks/rushgate"
	})
	e.want(e.do("PUT", "/v1/drops/sneakers", adminKey, e.dropCfg(`, "title": "Sneakers"`)), 200, "")
	for _, v := range []string{"a", "b"} {
		e.want(e.do("POST", "/v1/drops/sneakers/claims", e.visitorToken(v), ""), 201, "")
	}
	tb := tab(t)
	card := func() string {
		return eval[string](t, tb, `(document.querySelector('[data-card="site_told"]') || {}).textContent || ''`)
	}
	signIn(t, tb, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody td")),
		chromedp.Navigate(e.srv.URL+"/admin/drops/sneakers?lang=en"))
	until(t, "not told yet", func() bool { return card() == "not yetSite told" })
	ctx := context.Background()
	info, err := e.drops.Get(ctx, "sneakers")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueueDropEnded(ctx, "sneakers", info.Config, drop.StatusSoldOut, 2, time.Now()); err != nil { // as the sampler tells it
		t.Fatal(err)
	}
	until(t, "to send", func() bool { return card() == "to sendSite told" })
	if err := chromedp.Do(tb, chromedp.Navigate(e.srv.URL+"/admin/drops/sneakers?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "the Korean card", func() bool { return card() == "전송 대기사이트 통보" })
	screenshot(t, tb, "console-drop-site-told-ko")
	if err := chromedp.Do(tb, chromedp.Navigate(e.srv.URL+"/admin?lang=en")); err != nil {
		t.Fatal(err)
	}
	until(t, "the overview's webhooks", func() bool {
		return eval[string](t, tb, `[...document.querySelectorAll('#webhooks tbody tr')].map(r => r.cells[0].textContent).join('|')`) == "sneakers drop ended"
	})
	if href := eval[string](t, tb, `document.querySelector('#webhooks tbody a').getAttribute('href')`); href != "/admin/drops/sneakers" {
		t.Fatalf("the drop's event links %q", href)
	}
	e.want(e.do("GET", "/v1/webhooks?drop=sneakers&auction=lot", adminKey, ""), 400, "invalid_request")
	if r := e.do("GET", "/v1/webhooks?drop=sneakers", adminKey, ""); r.code != 200 || len(r.body["webhooks"].([]any)) != 1 {
		t.Fatalf("the drop's webhooks: %d %v", r.code, r.body)
	}
	if r := e.do("GET", "/v1/webhooks?drop=sneaker", adminKey, ""); r.code != 200 || len(r.body["webhooks"].([]any)) != 0 {
		t.Fatalf("another drop's webhooks: %d %v", r.code, r.body)
	}
}

// typed puts v in the field sel as typing would, with an input event, which marks the form as being
// edited: the page's refresh each second then leaves the field alone until it is sent, where after a
// bare chromedp.SetValue it may put the saved value back first.
func typed(sel, v string) chromedp.Action[chromedp.Void] {
	input := chromedp.Evaluate[bool](`document.querySelector(` + strconv.Quote(sel) + `).dispatchEvent(new Event('input', {bubbles: true}))`)
	return chromedp.Steps(chromedp.SetValue(chromedp.CSS(sel), v), func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := input(ctx, t)
		return chromedp.Void{}, err
	})
}

// TestConsoleKeepsAnEditMadeWhileSaving: a value typed while the form's last save is on its way is not
// put back to the saved config when that save comes back (it marked the form clean, and the refresh
// it asks for filled the form again): the operator's edit stays, to be saved. TestConsole met it as a
// refusal that never came: the value refused was overwritten before its own save.
func TestConsoleKeepsAnEditMadeWhileSaving(t *testing.T) {
	e := setup(t, withConsole())
	e.putRoom("sale", `{"capacity": 2}`)
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey)
	text(t, ctx, "#rooms tbody a") // signed in
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/sale")); err != nil {
		t.Fatal(err)
	}
	text(t, ctx, "#ctl-pause")
	until(t, "the form to show the room", func() bool {
		return eval[string](t, ctx, `document.getElementById('edit-room-capacity').value`) == "2"
	})
	// Saves come back late, as over a slow link.
	eval[bool](t, ctx, `(() => { const f = window.fetch; window.fetch = async (...a) => { const r = await f(...a);
		if ((a[1] || {}).method === 'PATCH') await new Promise((ok) => setTimeout(ok, 700)); return r; }; return true; })()`)
	if err := chromedp.Do(ctx, typed("#edit-room-capacity", "5"), chromedp.Click(chromedp.CSS("#edit button[type=submit]")),
		typed("#edit-room-capacity", "9")); err != nil {
		t.Fatal(err)
	}
	until(t, "the first save to be applied", func() bool { return e.roomConfig("sale")["capacity"] == 5.0 })
	until(t, "the page to say it saved", func() bool {
		return eval[string](t, ctx, `document.getElementById('status').textContent`) == "Saved."
	})
	time.Sleep(1500 * time.Millisecond) // a refresh or two of the page
	if v := eval[string](t, ctx, `document.getElementById('edit-room-capacity').value`); v != "9" {
		t.Fatalf("the capacity typed while the save was on its way shows %q, want 9", v)
	}
	screenshot(t, ctx, "console-edit-kept")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	until(t, "the edit to be saved", func() bool { return e.roomConfig("sale")["capacity"] == 9.0 })
}

// TestConsoleSavesWhatItShows: the form of a room, a drop and an auction, each with every field the
// form has set (a rate, tiers of increment, a soft close, listed codes, links between them), saved
// untouched, changes nothing: the config reads the same, and the audit log has no change from the save.
// A form that shows a value it cannot hold sends it back changed (an auction's tiers were lost so).
func TestConsoleSavesWhatItShows(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	e.want(e.do("PUT", "/v1/drops/tee", adminKey, fmt.Sprintf(`{"title": "Tee", "message": "One each.", "stock": 3, "per_visitor": 2,
		"opens_at": %q, "closes_at": %q, "room": "hall", "identity": "site", "release_on_claim": true, "codes": ["A1", "A2", "A3", "A4"]}`,
		at(time.Hour), at(2*time.Hour))), 200, "")
	e.putRoom("hall", fmt.Sprintf(`{"capacity": 5, "rate": {"admits": 10, "per": "1m"}, "session_ttl": "15m", "grace": "90s",
		"idle_timeout": "3m", "opens_at": %q, "site_url": "https://shop.example/checkout", "entry": "invite", "drop": "tee",
		"paused": true, "page": {"title": "The hall", "message": "Doors at noon."}}`, at(time.Hour)))
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, fmt.Sprintf(`{"title": "Guitar", "message": "Pick-up only.", "currency": "KRW",
		"start_price": 10000, "increment": [{"from": 0, "step": 1000}, {"from": 100000, "step": 5000}], "reserve_price": 50000,
		"buy_now_price": 900000, "starts_at": %q, "ends_at": %q, "soft_close": {"window": "2m", "extend": "1m"}, "room": "hall",
		"identity": "room"}`, at(time.Hour), at(3*time.Hour))), 200, "")
	config := func(path string) string {
		b := e.do("GET", path, adminKey, "").body
		c, _ := b["config"].(map[string]any)
		if c == nil { // a room reads as its config with its counts
			c = b
			delete(c, "stats")
		}
		js, _ := json.Marshal(c)
		return string(js)
	}
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")))
	for _, c := range []struct{ page, read, kind, id string }{
		{"/admin/rooms/hall", "/v1/rooms/hall", "room", "hall"},
		{"/admin/drops/tee", "/v1/drops/tee/config", "drop", "tee"},
		{"/admin/auctions/lot", "/v1/auctions/lot/config", "auction", "lot"},
	} {
		before := config(c.read)
		entries := len(list(e.do("GET", "/v1/audit?kind="+c.kind+"&id="+c.id, adminKey, ""), "entries"))
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+c.page), chromedp.WaitVisible(chromedp.CSS("#edit [name=title], #edit [name=capacity]"))); err != nil {
			t.Fatal(err)
		}
		until(t, c.kind+"'s form filled", func() bool {
			return eval[string](t, ctx, `document.getElementById('edit').dataset.shown || ''`) != ""
		})
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#edit button[type=submit]"))); err != nil {
			t.Fatal(err)
		}
		refused := `[...document.querySelectorAll('#edit [data-err]')].map(p => p.textContent).join('')`
		until(t, c.kind+" saved", func() bool {
			return eval[string](t, ctx, `document.getElementById('status').textContent`) == "Saved." || eval[string](t, ctx, refused) != ""
		})
		if why := eval[string](t, ctx, refused); why != "" {
			t.Fatalf("the %s's untouched form was refused: %s", c.kind, why)
		}
		if after := config(c.read); after != before {
			t.Errorf("the %s's config after a save of its untouched form:\n%s\nbefore:\n%s", c.kind, after, before)
		}
		all := list(e.do("GET", "/v1/audit?kind="+c.kind+"&id="+c.id, adminKey, ""), "entries") // newest first
		for _, en := range all[:len(all)-entries] {
			if ch, _ := en["changes"].([]any); len(ch) > 0 {
				t.Errorf("the %s's save of its untouched form is audited as changing %v", c.kind, ch)
			}
		}
	}
}

// TestConsoleCreatesWhatItShows: a room, a drop and an auction made through the console's "New" forms
// with the values their pages' forms show of ones made through the API (every field the forms have
// set) come out with the same config: what an operator types is what the API takes.
func TestConsoleCreatesWhatItShows(t *testing.T) {
	e := setup(t, withConsole())
	now := e.clock.Now()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	e.putRoom("hall", fmt.Sprintf(`{"capacity": 5, "rate": {"admits": 10, "per": "1m"}, "session_ttl": "15m", "grace": "90s",
		"idle_timeout": "3m", "opens_at": %q, "site_url": "https://shop.example/checkout", "mode": "queue_all", "entry": "invite",
		"paused": true, "page": {"message": "Doors at noon."}}`, at(time.Hour)))
	e.want(e.do("PUT", "/v1/drops/tee", adminKey, fmt.Sprintf(`{"title": "Tee", "message": "One each.", "stock": 3, "per_visitor": 2,
		"opens_at": %q, "closes_at": %q, "room": "hall", "identity": "site", "release_on_claim": true}`, at(time.Hour), at(2*time.Hour))), 200, "")
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, fmt.Sprintf(`{"title": "Guitar", "message": "Pick-up only.", "currency": "KRW",
		"start_price": 10000, "increment": [{"from": 0, "step": 1000}, {"from": 100000, "step": 5000}], "reserve_price": 50000,
		"buy_now_price": 900000, "starts_at": %q, "ends_at": %q, "soft_close": {"window": "2m", "extend": "1m"}, "room": "hall",
		"identity": "room"}`, at(time.Hour), at(3*time.Hour))), 200, "")
	config := func(path string) map[string]any {
		b := e.do("GET", path, adminKey, "").body
		c, _ := b["config"].(map[string]any)
		if c == nil { // a room reads as its config with its counts
			c = b
			delete(c, "stats")
		}
		delete(c, "id")
		return c
	}
	ctx := tab(t)
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#drops tbody a")))
	for _, c := range []struct{ kind, id, read string }{
		{"room", "hall", "/v1/rooms/"}, {"drop", "tee", "/v1/drops/%s/config"}, {"auction", "lot", "/v1/auctions/%s/config"},
	} {
		read := func(id string) map[string]any {
			if c.kind == "room" {
				return config(c.read + id)
			}
			return config(fmt.Sprintf(c.read, id))
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/"+c.kind+"s/"+c.id)); err != nil {
			t.Fatal(err)
		}
		until(t, c.kind+"'s form filled", func() bool {
			return eval[string](t, ctx, `(document.getElementById('edit') || {dataset: {}}).dataset.shown || ''`) != ""
		})
		shown := eval[string](t, ctx, `JSON.stringify(Object.fromEntries([...document.querySelectorAll('#edit [name]')]
			.map(i => [i.name, i.type === 'checkbox' ? i.checked : i.value])))`)
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin"), chromedp.WaitVisible(chromedp.CSS("#drops"))); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `(() => {
			const f = document.querySelector('form[data-kind="`+c.kind+`"][data-create="1"]');
			f.closest('details').open = true;
			const shown = `+shown+`;
			for (const i of f.querySelectorAll('[name]')) {
				if (i.name === 'id') i.value = '`+c.id+`2';
				else if (i.type === 'checkbox') i.checked = shown[i.name];
				else i.value = shown[i.name];
			}
			f.querySelector('button[type=submit]').click();
			return true;
		})()`)
		until(t, "the new "+c.kind+"'s page", func() bool {
			return strings.HasSuffix(eval[string](t, ctx, `location.pathname`), "/"+c.kind+"s/"+c.id+"2")
		})
		if want, got := read(c.id), read(c.id+"2"); !reflect.DeepEqual(want, got) {
			t.Errorf("the %s made through the console's form:\n%v\nthe one it copied:\n%v", c.kind, got, want)
		}
	}
}

// TestConsoleSaysAClosedDropHoldsItsRoom: a room that follows a drop which its operator closed admits
// nobody, and the console says why, in the overview and on the room's page, in English and Korean; so
// does one whose drop opens later.
func TestConsoleSaysAClosedDropHoldsItsRoom(t *testing.T) {
	e := setup(t, withConsole())
	e.want(e.do("PUT", "/v1/drops/tees", adminKey, e.dropCfg(`, "room": "tee-line"`)), 200, "")
	e.putRoom("tee-line", `{"capacity": 1, "drop": "tees"}`)
	e.want(e.do("POST", "/v1/drops/tees/close", adminKey, ""), 200, "")
	ctx := tab(t)
	card := func() string {
		return eval[string](t, ctx, `(document.querySelector('[data-card="status"] .v') || {}).textContent || ''`)
	}
	signIn(t, ctx, e.srv.URL+"/admin?lang=en", adminKey, chromedp.WaitVisible(chromedp.CSS("#rooms tbody a")))
	if got := text(t, ctx, "#rooms tbody .badge"); got != "held: drop closed" {
		t.Fatalf("the overview says the room is %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/tee-line?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "the room's status card", func() bool { return card() == "보류: 판매 마감" })
	screenshot(t, ctx, "console-room-drop-closed-ko")
	e.want(e.do("POST", "/v1/drops/tees/open", adminKey, ""), 200, "")
	until(t, "the room admitting again", func() bool { return card() == "입장 중" })
	later := e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	e.want(e.do("PATCH", "/v1/drops/tees", adminKey, fmt.Sprintf(`{"opens_at": %q}`, later)), 200, "")
	until(t, "the room held for the sale's start", func() bool { return card() == "보류: 판매 전" })

	// Sold out, the room turns new visitors away and keeps its line for a second batch; linked to one,
	// it admits again.
	e.want(e.do("PUT", "/v1/drops/caps", adminKey, e.dropCfg(`, "room": "cap-line"`)), 200, "")
	e.putRoom("cap-line", `{"capacity": 2, "drop": "caps"}`)
	var tokens []string
	for range 2 {
		tokens = append(tokens, e.do("POST", "/v1/rooms/cap-line/join", "", "").str("visitor_token"))
	}
	if tk, err := e.svc.Tick(context.Background(), "cap-line"); err != nil || len(tk.Admitted) != 2 {
		t.Fatalf("tick: %v %v", tk, err)
	}
	for _, tok := range tokens {
		st := e.do("GET", "/v1/rooms/cap-line/status", tok, "")
		e.want(e.do("POST", "/v1/drops/caps/claims", tok, `{"admission_token": "`+st.str("admission_token")+`"}`), 201, "")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin/rooms/cap-line?lang=ko")); err != nil {
		t.Fatal(err)
	}
	until(t, "the sold-out room's status card", func() bool { return card() == "품절: 대기열 유지" })
	screenshot(t, ctx, "console-room-sold-out-ko")
	e.want(e.do("PUT", "/v1/drops/caps-2", adminKey, e.dropCfg(`, "room": "cap-line"`)), 200, "")
	e.want(e.do("PATCH", "/v1/rooms/cap-line", adminKey, `{"drop": "caps-2"}`), 200, "")
	until(t, "the room admitting for the second batch", func() bool { return card() == "입장 중" })
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/admin?lang=en")); err != nil {
		t.Fatal(err)
	}
	e.want(e.do("PATCH", "/v1/rooms/cap-line", adminKey, `{"drop": "caps"}`), 200, "")
	until(t, "the overview's badge of the sold-out room", func() bool {
		return eval[bool](t, ctx, `[...document.querySelectorAll('#rooms tbody .badge')].some((b) => b.textContent === 'sold out: line kept')`)
	})
}
