package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is the headless Chromium that the package's page tests share: starting one costs about a
// second, so each test opens a tab in it instead.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

// tab opens a new tab of the shared browser, in a browser context of its own, closed when the test
// ends. Without Chromium the test skips locally (apt-get install chromium fonts-nanum) and fails in CI.
func tab(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install -y chromium fonts-nanum)")
	}
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1000, 800))
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		browser.ctx, browser.cancel = bctx, func() { bcancel(); acancel() }
		browser.err = chromedp.Do(bctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("starting chromium: %v", browser.err)
	}
	// As an incognito window: no cookie or storage of an earlier test (or run of this one) reaches it.
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	ctx, stop := context.WithTimeout(ctx, 30*time.Second)
	faults := watchFaults(t, ctx)
	t.Cleanup(func() {
		stop()
		cancel()
		for _, f := range faults() {
			t.Errorf("in the browser: %s", f)
		}
	})
	return ctx
}

// watchFaults collects what a page should never do, and a test's assertions on what it shows may not
// notice: throw an exception nothing catches (a promise's rejection too), or do something the
// Content-Security-Policy refuses (an inline script or style, another origin).
func watchFaults(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var faults []string
	err := chromedp.Listen(ctx, func(ev any) {
		var f string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			f = d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				f += " " + d.Exception.Description
			}
			f = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, f)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity {
				f = "refused by the page's policy: " + ev.Entry.Text
			}
		}
		if f != "" {
			mu.Lock()
			faults = append(faults, f)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(faults)
	}
}

// stopBrowser ends the shared browser, if a test started it.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// screenshot saves the tab as testdata/screens/NAME.png, for a person to look at.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join("testdata", "screens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// shownIn returns a reader of an element's text in the tab ("" for no such element), for the
// conditions a test polls with until.
func shownIn(t *testing.T, ctx context.Context) func(sel string) string {
	return func(sel string) string {
		return eval[string](t, ctx, `(document.querySelector('`+sel+`') || {}).textContent || ''`)
	}
}

// text returns an element's text once it is visible.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("waiting for %s: %v", sel, err)
	}
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// TestPageSwitchesOnlyOnClick: a visitor waiting in room a whose browser is sent to room b's page
// (by any site, with a plain link) keeps its place in a: the page asks, and moves it only when the
// visitor clicks. The switch button takes the keyboard focus, and the page fits a phone.
func TestPageSwitchesOnlyOnClick(t *testing.T) {
	e := setup(t)
	e.putRoom("a", `{"capacity": 1, "paused": true}`)
	e.putRoom("b", `{"capacity": 1, "paused": true}`)
	ctx := tab(t)
	waiting := func(id string) int64 {
		stats, _ := e.do("GET", "/v1/rooms/"+id, adminKey, "").body["stats"].(map[string]any)
		n, _ := stats["waiting"].(float64)
		return int64(n)
	}
	position := func() string {
		t.Helper()
		var got string
		for range 100 {
			got, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#position")))
			if got != "" {
				return got
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no position shown: %q", got)
		return ""
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/r/a")); err != nil {
		t.Fatal(err)
	}
	if p := position(); p != "#1" {
		t.Fatalf("position in a: %q", p)
	}
	screenshot(t, ctx, "room-waiting")

	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/r/b")); err != nil {
		t.Fatal(err)
	}
	if other := text(t, ctx, "#other"); other != "a" {
		t.Fatalf("the page names %q as the line waited in, want a", other)
	}
	if a, b := waiting("a"), waiting("b"); a != 1 || b != 0 {
		t.Fatalf("after opening b's page: %d waiting in a, %d in b; want the place in a kept", a, b)
	}
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.activeElement.id"))
	if err != nil || focused != "switch" {
		t.Fatalf("focus on %q (%v), want the switch button", focused, err)
	}
	screenshot(t, ctx, "room-elsewhere")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "room-elsewhere-phone")

	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil { // Enter on the focused button
		t.Fatal(err)
	}
	if p := position(); p != "#1" {
		t.Fatalf("position in b after switching: %q", p)
	}
	if a, b := waiting("a"), waiting("b"); a != 0 || b != 1 {
		t.Fatalf("after the click: %d waiting in a, %d in b; want the visitor moved to b", a, b)
	}
	screenshot(t, ctx, "room-switched-phone")
}
