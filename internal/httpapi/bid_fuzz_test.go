package httpapi

import (
	"reflect"
	"testing"

	"github.com/rushgate/rushgate"
)

// FuzzQuickBid: a body quickBid takes, the strict decoder takes too, and reads alike; and the bodies of
// the seeds it is meant for it does take.
func FuzzQuickBid(f *testing.F) {
	for _, s := range []string{`{"amount": 1500}`, `{"max_amount":99000}`, " {\n\t\"amount\" : 0 } \n", `{"amount": 012}`,
		`{"amount": -5}`, `{"amount": 1.5}`, `{"amount": 1e3}`, `{"Amount": 5}`, `{"amount": 5, "amount": 6}`, `{"amount": 5}{}`,
		`{"amount": "5"}`, `{"amount": 5, "admission_token": "x"}`, `{"amount": 999999999999999999}`, `{"amount": 9999999999999999999}`,
		`{"amo\u0075nt": 5}`, `{}`, ``, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := quickBid(b)
		if !ok {
			return
		}
		var strict bidRequest
		if err := rushgate.DecodeObject(b, &strict); err != nil {
			t.Fatalf("quickBid took %q, which the strict decoder refuses: %v", b, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: quickBid read %+v, the strict decoder %+v", b, show(fast), show(strict))
		}
	})
}

// TestQuickBidTakesTheCommonBodies: the short cut is taken for the bodies browsers and the load tool
// send, and left for the rest.
func TestQuickBidTakesTheCommonBodies(t *testing.T) {
	for body, want := range map[string]bool{`{"amount": 1500}`: true, `{"max_amount":99000}`: true, " {\n\"amount\" : 0 } ": true,
		`{"amount": 012}`: false, `{"amount": 1.5}`: false, `{"amount": 5, "admission_token": "x"}`: false, `{"Amount": 5}`: false,
		`{"amount": 5}{}`: false, `{"amount": 9999999999999999999}`: false} {
		if _, ok := quickBid([]byte(body)); ok != want {
			t.Errorf("quickBid(%s) took it: %v, want %v", body, ok, want)
		}
	}
	if req, _ := quickBid([]byte(`{"max_amount": 123456789012345678}`)); req.MaxAmount == nil || *req.MaxAmount != 123456789012345678 || req.Amount != nil {
		t.Errorf("read %+v", show(req))
	}
}

// show is a bid's body with its amounts, not their addresses, for a failure's message.
func show(r bidRequest) map[string]any {
	m := map[string]any{"admission_token": r.AdmissionToken}
	if r.Amount != nil {
		m["amount"] = *r.Amount
	}
	if r.MaxAmount != nil {
		m["max_amount"] = *r.MaxAmount
	}
	return m
}

// BenchmarkBidBody compares the short cut with the strict decoder on a bid's usual body.
func BenchmarkBidBody(b *testing.B) {
	body := []byte(`{"amount": 123456}`)
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, ok := quickBid(body); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var r bidRequest
			if err := rushgate.DecodeObject(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
