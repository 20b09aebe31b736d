package record_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/webhook"
)

// TestWebhookQueue: an auction's end is queued once, in the transaction that records it (a replay, or
// a later close that does not settle it, queues nothing); only while webhooks are on; the ends of two
// auctions of one id are two events. Due webhooks are leased to one asker at a time, in the order they
// were queued; a failure makes one due again later, a delivery or a last failure ends it.
func TestWebhookQueue(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
		st := auction.State{Config: auction.Config{Title: "Guitar", Currency: "KRW"}}
		end := func(id string, ev auction.Event) {
			t.Helper()
			if err := r.Record(ctx, id, st, []auction.Event{ev}); err != nil {
				t.Fatal(err)
			}
		}
		end("off", auction.Event{Seq: 2, Kind: auction.EventClosed, Bidder: "v_a", Price: 500, At: at})
		r.QueueWebhooks(true)
		end("lot", auction.Event{Seq: 1, Kind: auction.EventBid, Bidder: "v_a", Price: 500, At: at})
		end("lot", auction.Event{Seq: 2, Kind: auction.EventClosed, Bidder: "v_a", Price: 500, At: at.Add(time.Minute)})
		end("lot", auction.Event{Seq: 2, Kind: auction.EventClosed, Bidder: "v_a", Price: 500, At: at.Add(time.Minute)}) // a replay
		end("lot", auction.Event{Seq: 3, Kind: auction.EventSold, Bidder: "v_b", Price: 900, At: at.Add(time.Hour)})     // settled already
		end("unsold", auction.Event{Seq: 1, Kind: auction.EventClosed, At: at})
		if err := r.ForgetAuction(ctx, "unsold"); err != nil { // deleted, and its id used again, numbering on
			t.Fatal(err)
		}
		end("unsold", auction.Event{Seq: 2, Kind: auction.EventSold, Bidder: "v_c", Price: 700, At: at.Add(2 * time.Hour)})

		all, err := r.Webhooks(ctx, notify.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 {
			t.Fatalf("queued %d webhooks, want 3 (lot's end, and unsold's two): %+v", len(all), all)
		}
		var e webhook.Event
		var data webhook.AuctionEnded
		if err := json.Unmarshal(all[2].Payload, &e); err != nil || json.Unmarshal(e.Data, &data) != nil {
			t.Fatalf("payload %s: %v", all[2].Payload, err)
		}
		want := webhook.AuctionEnded{Auction: "lot", Title: "Guitar", Status: "closed", Winner: "v_a", FinalPrice: 500,
			Currency: "KRW", EndedAt: at.Add(time.Minute), Seq: 2}
		if e.ID != all[2].ID || e.Type != webhook.TypeAuctionEnded || data != want || all[2].State != notify.Pending {
			t.Fatalf("the oldest webhook: %+v, event %+v, data %+v", all[2], e, data)
		}

		// Two instances ask at once: each webhook goes to one of them.
		now := time.Now()
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				ws, err := r.DueWebhooks(ctx, now, 10, time.Minute)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, w := range ws {
					got[w.ID]++
				}
			})
		}
		wg.Wait()
		if len(got) != 3 {
			t.Fatalf("leased %v, want each of the 3 once", got)
		}
		for id, n := range got {
			if n != 1 {
				t.Fatalf("%s went to %d askers", id, n)
			}
		}
		if ws, _ := r.DueWebhooks(ctx, now.Add(30*time.Second), 10, time.Minute); len(ws) != 0 {
			t.Fatalf("leased again within the lease: %+v", ws)
		}
		ws, err := r.DueWebhooks(ctx, now.Add(61*time.Second), 10, time.Minute)
		if err != nil || len(ws) != 3 || ws[0].ID != all[2].ID || ws[2].ID != all[0].ID {
			t.Fatalf("after the lease, due in the order queued: %+v %v", ws, err)
		}
		later := now.Add(2 * time.Minute)
		if err := r.WebhookDelivered(ctx, ws[0].ID, later); err != nil {
			t.Fatal(err)
		}
		if err := r.WebhookRetry(ctx, ws[1].ID, "500 Internal Server Error", later.Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := r.WebhookFailed(ctx, ws[2].ID, "404 Not Found"); err != nil {
			t.Fatal(err)
		}
		if due, _ := r.DueWebhooks(ctx, later.Add(5*time.Minute), 10, time.Minute); len(due) != 0 {
			t.Fatalf("due before its retry: %+v", due)
		}
		due, _ := r.DueWebhooks(ctx, later.Add(11*time.Minute), 10, time.Minute)
		if len(due) != 1 || due[0].ID != ws[1].ID || due[0].Attempts != 1 || due[0].LastError != "500 Internal Server Error" {
			t.Fatalf("due after its retry time: %+v", due)
		}
		for state, id := range map[string]string{notify.Delivered: ws[0].ID, notify.Failed: ws[2].ID} {
			ws, err := r.Webhooks(ctx, notify.Filter{State: state}, 10)
			if err != nil || len(ws) != 1 || ws[0].ID != id || ws[0].Attempts != 1 || ws[0].Due != nil {
				t.Fatalf("%s: %+v %v", state, ws, err)
			}
			if (state == notify.Delivered) != (ws[0].SentAt != nil) {
				t.Fatalf("%s: sent at %v", state, ws[0].SentAt)
			}
		}
		// An operator sends one given up now, and one delivered again: both are due at once.
		for _, id := range []string{ws[2].ID, ws[0].ID} {
			w, err := r.SendWebhookNow(ctx, id, later.Add(20*time.Minute))
			if err != nil || w.State != notify.Pending || w.SentAt != nil || !w.Due.Equal(later.Add(20*time.Minute).Truncate(time.Millisecond)) {
				t.Fatalf("sent now: %+v %v", w, err)
			}
		}
		if due, _ := r.DueWebhooks(ctx, later.Add(20*time.Minute), 10, time.Minute); len(due) != 3 {
			t.Fatalf("due after sending two now: %+v", due)
		}
		if _, err := r.SendWebhookNow(ctx, "auction.none.1.0", later); !errors.Is(err, notify.ErrNotFound) {
			t.Fatalf("an unknown webhook: %v", err)
		}
		// A test event is due at once, and two of one millisecond are two.
		p1, err1 := r.QueuePing(ctx, later)
		p2, err2 := r.QueuePing(ctx, later)
		if err1 != nil || err2 != nil || p1.ID == p2.ID || p1.Type != webhook.TypePing || !p1.Due.Equal(later.Truncate(time.Millisecond)) {
			t.Fatalf("pings %+v %v, %+v %v", p1, err1, p2, err2)
		}
		due, _ = r.DueWebhooks(ctx, later, 10, time.Minute)
		if len(due) != 2 || due[0].Type != webhook.TypePing || string(due[0].Payload) != string(p1.Payload) && string(due[0].Payload) != string(p2.Payload) {
			t.Fatalf("due with the pings: %+v", due)
		}
	})
}

// TestWebhooksOfOneAuction: a list of one auction's webhooks holds its own, not those of an auction
// whose id only looks alike (an underscore is a wildcard to SQL's LIKE) or starts the same.
func TestWebhooksOfOneAuction(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		r.QueueWebhooks(true)
		at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
		for _, id := range []string{"a_b", "aXb", "a_bc"} {
			if err := r.Record(ctx, id, auction.State{}, []auction.Event{{Seq: 1, Kind: auction.EventClosed, At: at}}); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := r.Webhooks(ctx, notify.Filter{Auction: "a_b"}, 10)
		if err != nil || len(ws) != 1 || !strings.HasPrefix(ws[0].ID, "auction.a_b.") {
			t.Fatalf("a_b's webhooks: %+v %v", ws, err)
		}
		if ws, _ := r.Webhooks(ctx, notify.Filter{Auction: "a_b", State: notify.Delivered}, 10); len(ws) != 0 {
			t.Fatalf("a_b's delivered webhooks: %+v", ws)
		}
	})
}

// TestDropEndQueuedOnce: a drop's end, told by many instances at once and again later, is queued once;
// a reopened drop's next end is another event; an end from before the record first queued webhooks,
// or told while webhooks are off, is not queued.
func TestDropEndQueuedOnce(t *testing.T) {
	eachDatabase(t, func(t *testing.T, r *record.DB) {
		ctx := context.Background()
		cfg := drop.Config{Title: "Sneakers", Stock: 3}
		now := time.Now().UTC().Truncate(time.Millisecond)
		tell := func(status drop.Status, claimed int, at time.Time) {
			t.Helper()
			if err := r.QueueDropEnded(ctx, "d", cfg, status, claimed, at); err != nil {
				t.Fatal(err)
			}
		}
		tell(drop.StatusSoldOut, 3, now) // off: not queued, and not remembered as the start either
		r.QueueWebhooks(true)
		early := time.Now().UTC().Truncate(time.Millisecond).Add(time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		tell(drop.StatusClosed, 0, early) // an end after webhooks were on, told a little later
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if err := r.QueueDropEnded(ctx, "d", cfg, drop.StatusClosed, 1, now.Add(time.Minute)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		tell(drop.StatusClosed, 1, now.Add(time.Minute))    // again, after a restart
		tell(drop.StatusSoldOut, 3, now.Add(2*time.Minute)) // reopened, then sold out
		tell(drop.StatusClosed, 0, now.Add(-time.Hour))     // before webhooks were on
		all, err := r.Webhooks(ctx, notify.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 {
			t.Fatalf("queued %d webhooks, want 3: %+v", len(all), all)
		}
		var got []webhook.DropEnded
		for _, w := range all {
			var e webhook.Event
			var data webhook.DropEnded
			if err := json.Unmarshal(w.Payload, &e); err != nil || json.Unmarshal(e.Data, &data) != nil || e.Type != webhook.TypeDropEnded || e.ID != w.ID {
				t.Fatalf("payload %s: %v", w.Payload, err)
			}
			got = append(got, data)
		}
		want := []webhook.DropEnded{
			{Drop: "d", Title: "Sneakers", Status: "sold_out", Stock: 3, Claimed: 3, EndedAt: now.Add(2 * time.Minute)},
			{Drop: "d", Title: "Sneakers", Status: "closed", Stock: 3, Claimed: 1, EndedAt: now.Add(time.Minute)},
			{Drop: "d", Title: "Sneakers", Status: "closed", Stock: 3, Claimed: 0, EndedAt: early},
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("webhook %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
