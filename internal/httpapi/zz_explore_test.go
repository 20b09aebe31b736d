package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestZZExplore(t *testing.T) {
	e := setup(t)
	e.putRoom("paused", `{"capacity": 1, "paused": true}`)
	e.putRoom("gate", `{"capacity": 1}`)
	e.want(e.do("PUT", "/v1/auctions/gated", adminKey, e.auctionCfg(`, "room": "gate"`)), 200, "")
	e.want(e.do("PUT", "/v1/drops/gated", adminKey, e.dropCfg(`, "room": "gate"`)), 200, "")
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"/r/paused?lang=en", "/a/gated?lang=en", "/d/gated?lang=ko", "/r/nope?lang=en"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+p)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(900 * time.Millisecond)
		screenshot(t, ctx, fmt.Sprint("zz", i))
	}
}
