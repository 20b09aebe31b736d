// Package webhook is what a site needs to take rushgate's webhooks: the events rushgate POSTs to the
// URL given by rushgate serve --webhook-url, and the check that one came from rushgate unaltered.
//
// Each delivery is one Event as JSON, sent until the site answers 2xx (at least once: a site that
// acts on an event keys what it does by the event's ID). Its Rushgate-Signature header is
// "t=UNIX,v1=HEX": HEX is the HMAC-SHA256, under the secret the operator gave rushgate
// (--webhook-secret), of the decimal UNIX time, a '.', and the body as sent; while the secret is being
// changed, a second v1 is the same under the previous one (--webhook-previous-secret). Verify checks
// it, and that the time is recent, so that a delivery captured on the way cannot be replayed later.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	// SignatureHeader carries the signature that Verify checks.
	SignatureHeader = "Rushgate-Signature"
	// EventHeader carries the event's type, so that a site may route before it reads the body.
	EventHeader = "Rushgate-Event"
	// IDHeader carries the event's ID, the same on every delivery of one event.
	IDHeader = "Rushgate-Event-Id"
)

// The types of events.
const (
	// TypeAuctionEnded is sent when an auction ends, with AuctionEnded as its data.
	TypeAuctionEnded = "auction.ended"
	// TypeDropEnded is sent when a drop stops taking claims, with DropEnded as its data.
	TypeDropEnded = "drop.ended"
	// TypePing is sent when an operator asks for a test (the console's "Send a test event"), with
	// empty data: a site answers it 2xx, as any type it does not act on, or rushgate sends it again.
	TypePing = "ping"
)

// Event is the body of a delivery.
type Event struct {
	// ID is the same on every delivery of one event: a site that acts once per event keys by it.
	ID string `json:"id"`
	// Type says what happened, and so what Data holds.
	Type string `json:"type"`
	// CreatedAt is when rushgate recorded what happened.
	CreatedAt time.Time `json:"created_at"`
	// Data is the event's own fields (AuctionEnded for TypeAuctionEnded, DropEnded for TypeDropEnded).
	Data json.RawMessage `json:"data"`
}

// AuctionEnded is how an auction ended: to a winner (at the close, or by buy-now), or unsold.
type AuctionEnded struct {
	Auction string `json:"auction"`
	Title   string `json:"title"`
	// Status is "closed" (at its end) or "sold" (bought now).
	Status string `json:"status"`
	// Winner is the visitor ID that won it, as rushgate's other answers name it; "" when nobody did
	// (no bids, or the reserve not met).
	Winner string `json:"winner"`
	// FinalPrice is what the winner pays, in the currency's minor units (0 without a winner).
	FinalPrice int64     `json:"final_price"`
	Currency   string    `json:"currency"`
	EndedAt    time.Time `json:"ended_at"`
	// Seq is the ending's number in the auction's event feed.
	Seq int64 `json:"seq"`
}

// DropEnded is how a drop stopped taking claims: sold out, for good, or closed (at its closes_at, or by
// an operator, who may open it again: its next end is then another event). A site reconciles its
// orders with the drop's claims (GET /v1/drops/{id}/claims.csv) and takes the offer down.
type DropEnded struct {
	Drop  string `json:"drop"`
	Title string `json:"title"`
	// Status is "sold_out" or "closed".
	Status  string    `json:"status"`
	Stock   int       `json:"stock"`
	Claimed int       `json:"claimed"`
	EndedAt time.Time `json:"ended_at"`
}

// Tolerance is how far from now a delivery's time may be for Verify: rushgate signs each attempt as it
// sends it, so only a delivery held back on the way, or a clock far off, is older.
const Tolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrMalformed = errors.New("webhook: malformed signature header")
	ErrTooOld    = errors.New("webhook: signature time too far from now")
	ErrSignature = errors.New("webhook: signature does not match")
)

// Sign returns the signature header's value for body sent at t under secret, and under each of older
// too: while a secret is changed, a site that still checks with the old one takes the delivery.
func Sign(secret []byte, t time.Time, body []byte, older ...[]byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	h := "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
	for _, o := range older {
		h += ",v1=" + hex.EncodeToString(mac(o, ts, body))
	}
	return h
}

// Verify checks header (a delivery's Rushgate-Signature) against body, as received, under secret, and
// that its time is within Tolerance of now. A header may carry several v1 values (a secret being
// changed); one that matches is enough.
func Verify(secret []byte, header string, body []byte, now time.Time) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformed
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return ErrMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrMalformed
	}
	if d := now.Sub(time.Unix(unix, 0)); d > Tolerance || d < -Tolerance {
		return ErrTooOld
	}
	want := mac(secret, ts, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrSignature
}

func mac(secret []byte, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
