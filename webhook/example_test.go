package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/rushgate/rushgate/webhook"
)

// A site's endpoint for rushgate's webhooks checks each delivery before it acts on it, once per event ID.
func ExampleVerify() {
	secret := []byte("the-shop-checks-with-this") // as given to rushgate serve --webhook-secret
	hooks := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now()) != nil {
			http.Error(w, "not from rushgate", http.StatusUnauthorized)
			return
		}
		var e webhook.Event
		var ended webhook.AuctionEnded
		if json.Unmarshal(body, &e) != nil || e.Type != webhook.TypeAuctionEnded || json.Unmarshal(e.Data, &ended) != nil {
			return // a type this site does not act on: 2xx, or rushgate sends it again
		}
		fmt.Printf("%s: charge %s %d %s\n", e.ID, ended.Winner, ended.FinalPrice, ended.Currency)
	})

	// What rushgate sends, made here with Sign.
	body := `{"id": "auction.guitar.7.1796493600123", "type": "auction.ended",
		"data": {"auction": "guitar", "status": "closed", "winner": "v_alice", "final_price": 31000, "currency": "KRW"}}`
	for _, sig := range []string{webhook.Sign(secret, time.Now(), []byte(body)), webhook.Sign([]byte("a guess"), time.Now(), []byte(body))} {
		req := httptest.NewRequest("POST", "/hooks/rushgate", strings.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, sig)
		rec := httptest.NewRecorder()
		hooks.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// auction.guitar.7.1796493600123: charge v_alice 31000 KRW
	// 200
	// 401
}
