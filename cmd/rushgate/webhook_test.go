package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/pgtest"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/webhook"
)

const webhookSecret = "the-shop-checks-with-this"

// receiver is a site's webhook endpoint: it keeps every delivery whose signature holds, and fails the
// test on one that does not.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []webhook.Event
	auth string // the basic auth of the last delivery, "user:password"
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		if err := webhook.Verify([]byte(webhookSecret), r.Header.Get(webhook.SignatureHeader), body, time.Now()); err != nil {
			t.Errorf("a delivery that does not verify: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var e webhook.Event
		if err := json.Unmarshal(body, &e); err != nil || e.ID != r.Header.Get(webhook.IDHeader) {
			t.Errorf("a delivery %s: %v", body, err)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, e)
		rc.auth = user + ":" + pass
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) events() []webhook.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]webhook.Event(nil), rc.got...)
}

// ended waits for one auction.ended event and returns its data; it fails the test on a second. The
// wait covers a record lease of the instances killed before (5 s) running out.
func (rc *receiver) ended(t *testing.T) webhook.AuctionEnded {
	t.Helper()
	for range 750 {
		if len(rc.events()) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // a second instance, or a second pass, would have sent it again by now
	got := rc.events()
	if len(got) != 1 || got[0].Type != webhook.TypeAuctionEnded {
		t.Fatalf("the site got %d webhooks, want one auction.ended: %+v", len(got), got)
	}
	var d webhook.AuctionEnded
	if err := json.Unmarshal(got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func auctionConfig(ends time.Time, extra string) string {
	return fmt.Sprintf(`{"title": "Guitar", "currency": "EUR", "start_price": 1000, "increment": 100, "starts_at": %q, "ends_at": %q%s}`,
		time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano), ends.UTC().Format(time.RFC3339Nano), extra)
}

// TestWebhookOnTheEmbeddedBackend: an operator who ends an auction has the site told, once, who won it
// and for how much, signed with the shared secret; GET /v1/webhooks says it was delivered.
func TestWebhookOnTheEmbeddedBackend(t *testing.T) {
	rc := newReceiver(t)
	// The site asks for basic auth too: the password goes to the site, and is never shown to operators.
	base, _ := serveInProcess(t, "--webhook-url", strings.Replace(rc.URL, "http://", "http://shop:hunter2-the-password@", 1)+"/hooks/rushgate",
		"--webhook-secret", webhookSecret)
	if code, _, _ := do(t, "PUT", base+"/v1/auctions/lot", testAdminKey, auctionConfig(time.Now().Add(time.Hour), "")); code != 200 {
		t.Fatal(code)
	}
	_, v, _ := do(t, "POST", base+"/v1/visitors", testAdminKey, `{"subject": "alice"}`)
	if code, _, _ := do(t, "POST", base+"/v1/auctions/lot/bids", v["visitor_token"].(string), `{"max_amount": 2500}`); code != 201 {
		t.Fatal(code)
	}
	if code, _, _ := do(t, "POST", base+"/v1/auctions/lot/end", testAdminKey, ""); code != 200 {
		t.Fatal(code)
	}
	if d := rc.ended(t); d.Auction != "lot" || d.Status != "closed" || d.Winner != v["visitor_id"] || d.FinalPrice != 1000 || d.Currency != "EUR" || d.Title != "Guitar" {
		t.Fatalf("the site was told %+v", d)
	}
	rc.mu.Lock()
	auth := rc.auth
	rc.mu.Unlock()
	if auth != "shop:hunter2-the-password" {
		t.Fatalf("the site got basic auth %q", auth)
	}
	_, list, _ := do(t, "GET", base+"/v1/webhooks", testAdminKey, "")
	ws, _ := list["webhooks"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["state"] != "delivered" || list["url"] != strings.Replace(rc.URL, "http://", "http://shop:xxxxx@", 1)+"/hooks/rushgate" {
		t.Fatalf("GET /v1/webhooks: %v", list)
	}
	// A test event reaches the site the same way.
	if code, _, _ := do(t, "POST", base+"/v1/webhooks/ping", testAdminKey, ""); code != 201 {
		t.Fatalf("a test event: %d", code)
	}
	for range 300 {
		if len(rc.events()) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := rc.events(); len(got) != 2 || got[1].Type != webhook.TypePing || string(got[1].Data) != "{}" {
		t.Fatalf("after the test event the site got %+v", got)
	}
	if code, body, _ := do(t, "GET", base+"/v1/webhooks?state=sent", testAdminKey, ""); code != 400 || errorCode(body) != "invalid_request" {
		t.Fatalf("an unknown state: %d %v", code, body)
	}
	if code, _, _ := do(t, "GET", base+"/v1/webhooks", "", ""); code != 401 {
		t.Fatalf("without the admin key: %d", code)
	}
}

// TestWebhookAfterAllInstancesDown: two instances on Redis share a PostgreSQL record; the auction ends
// while both are down, the first to start again closes it, and the site is told once (not once per
// instance), here of a buy-now on the next auction too.
func TestWebhookAfterAllInstancesDown(t *testing.T) {
	addr, dsn := redistest.Shared(t), pgtest.Database(t)
	rc := newReceiver(t)
	flags := []string{"--postgres", dsn, "--webhook-url", rc.URL, "--webhook-secret", webhookSecret}
	bin := buildBinary(t)
	in := startInstances(t, bin, addr, 2, flags...)
	end := time.Now().Add(1500 * time.Millisecond)
	if code, _, _ := do(t, "PUT", in[0].base+"/v1/auctions/lot", testAdminKey, auctionConfig(end, "")); code != 200 {
		t.Fatal(code)
	}
	_, v, _ := do(t, "POST", in[1].base+"/v1/visitors", testAdminKey, `{"subject": "bob"}`)
	if code, _, _ := do(t, "POST", in[1].base+"/v1/auctions/lot/bids", v["visitor_token"].(string), `{"amount": 1200}`); code != 201 {
		t.Fatal(code)
	}
	for _, i := range in {
		_ = i.cmd.Process.Kill()
		_ = i.cmd.Wait()
	}
	time.Sleep(time.Until(end) + 300*time.Millisecond)
	if n := len(rc.events()); n != 0 {
		t.Fatalf("told of an end while every instance was down: %d", n)
	}
	in = startInstances(t, bin, addr, 2, flags...)
	if d := rc.ended(t); d.Auction != "lot" || d.Winner != v["visitor_id"] || d.FinalPrice != 1200 {
		t.Fatalf("the site was told %+v", d)
	}

	if code, _, _ := do(t, "PUT", in[0].base+"/v1/auctions/now", testAdminKey, auctionConfig(time.Now().Add(time.Hour), `, "buy_now_price": 9000`)); code != 200 {
		t.Fatal(code)
	}
	if code, _, _ := do(t, "POST", in[1].base+"/v1/auctions/now/buy-now", v["visitor_token"].(string), `{}`); code != 200 {
		t.Fatal(code)
	}
	for range 300 {
		if len(rc.events()) > 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	got := rc.events()
	var d webhook.AuctionEnded
	if len(got) != 2 || json.Unmarshal(got[1].Data, &d) != nil || d.Auction != "now" || d.Status != "sold" || d.FinalPrice != 9000 {
		t.Fatalf("after the buy-now the site got %+v", got)
	}
}

// TestWebhookFlagsRefused: serve refuses a webhook URL it could not send to, and one without a secret
// long enough for the site to check deliveries by, before it starts.
func TestWebhookFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--webhook-url", "shop.example/hooks", "--webhook-secret", webhookSecret}, "want the site's http(s) URL"},
		{[]string{"--webhook-url", "https://shop.example/hooks"}, "needs --webhook-secret"},
		{[]string{"--webhook-url", "https://shop.example/hooks", "--webhook-secret", "short"}, "at least 16 characters"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--data", t.TempDir(), "--addr", freeAddr(t)}, c.args...), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want a refusal saying %q", c.args, err, c.want)
		}
	}
}

// TestDropWebhooks: two instances on Redis share a PostgreSQL record; a drop that sells out and one
// whose closes_at passes are each told to the site once, though both instances' samplers find them.
func TestDropWebhooks(t *testing.T) {
	addr, dsn := redistest.Shared(t), pgtest.Database(t)
	rc := newReceiver(t)
	in := startInstances(t, buildBinary(t), addr, 2, "--postgres", dsn, "--webhook-url", rc.URL, "--webhook-secret", webhookSecret)
	opens := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	closes := time.Now().UTC().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	for id, cfg := range map[string]string{
		"sneakers": fmt.Sprintf(`{"title": "Sneakers", "stock": 2, "opens_at": %q}`, opens),
		"coupon":   fmt.Sprintf(`{"stock": 100, "opens_at": %q, "closes_at": %q}`, opens, closes.Format(time.RFC3339Nano)),
	} {
		if code, b, _ := do(t, "PUT", in[0].base+"/v1/drops/"+id, testAdminKey, cfg); code != 200 {
			t.Fatalf("PUT %s: %d %v", id, code, b)
		}
	}
	for i, id := range []string{"sneakers", "sneakers", "coupon"} {
		if code, b, _ := do(t, "POST", in[i%2].base+"/v1/drops/"+id+"/claims", "", ""); code != 201 {
			t.Fatalf("claim %d on %s: %d %v", i, id, code, b)
		}
	}
	ended := map[string]webhook.DropEnded{}
	for deadline := time.Now().Add(15 * time.Second); len(ended) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range rc.events() {
			var d webhook.DropEnded
			if e.Type == webhook.TypeDropEnded && json.Unmarshal(e.Data, &d) == nil {
				ended[d.Drop] = d
			}
		}
	}
	time.Sleep(2 * time.Second) // the other instance, or a later read, would have told it again by now
	if got := rc.events(); len(got) != 2 {
		t.Fatalf("the site got %d webhooks, want two drop.ended: %+v", len(got), got)
	}
	if d := ended["sneakers"]; d.Status != "sold_out" || d.Claimed != 2 || d.Stock != 2 || d.Title != "Sneakers" || d.EndedAt.IsZero() {
		t.Errorf("the sold-out drop was told as %+v", d)
	}
	if d := ended["coupon"]; d.Status != "closed" || d.Claimed != 1 || d.Stock != 100 || !d.EndedAt.Equal(closes) {
		t.Errorf("the closed drop was told as %+v (closes_at %s)", d, closes)
	}
	_, list, _ := do(t, "GET", in[1].base+"/v1/webhooks?drop=coupon", testAdminKey, "")
	if ws, _ := list["webhooks"].([]any); len(ws) != 1 {
		t.Errorf("GET /v1/webhooks?drop=coupon: %v", list)
	}
}
