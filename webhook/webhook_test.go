package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/webhook"
)

func TestSignAndVerify(t *testing.T) {
	secret, body := []byte("a-secret-the-site-shares"), []byte(`{"id":"auction.lot.7","type":"auction.ended"}`)
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	h := webhook.Sign(secret, at, body)
	if !strings.HasPrefix(h, "t=1796493600,v1=") || len(h) != len("t=1796493600,v1=")+64 {
		t.Fatalf("header %q", h)
	}
	for _, c := range []struct {
		name   string
		secret []byte
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"as sent", secret, h, body, at, nil},
		{"four minutes on", secret, h, body, at.Add(4 * time.Minute), nil},
		{"a clock a little behind", secret, h, body, at.Add(-time.Minute), nil},
		{"replayed later", secret, h, body, at.Add(6 * time.Minute), webhook.ErrTooOld},
		{"from the future", secret, h, body, at.Add(-6 * time.Minute), webhook.ErrTooOld},
		{"another secret", []byte("another"), h, body, at, webhook.ErrSignature},
		{"a changed body", secret, h, []byte(`{"id":"auction.lot.8","type":"auction.ended"}`), at, webhook.ErrSignature},
		{"a changed time", secret, strings.Replace(h, "t=1796493600", "t=1796493601", 1), body, at, webhook.ErrSignature},
		{"two signatures, the second right", secret, "t=1796493600,v1=" + strings.Repeat("00", 32) + "," + h[len("t=1796493600,"):], body, at, nil},
		{"no signature", secret, "t=1796493600", body, at, webhook.ErrMalformed},
		{"no time", secret, h[len("t=1796493600,"):], body, at, webhook.ErrMalformed},
		{"a short signature", secret, "t=1796493600,v1=abcd", body, at, webhook.ErrMalformed},
		{"not hex", secret, "t=1796493600,v1=" + strings.Repeat("zz", 32), body, at, webhook.ErrMalformed},
		{"empty", secret, "", body, at, webhook.ErrMalformed},
	} {
		if err := webhook.Verify(c.secret, c.header, c.body, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestSecretChanged: while rushgate signs with a new secret and the previous one, a site that checks
// with either takes the delivery, and one with neither does not.
func TestSecretChanged(t *testing.T) {
	newer, older, body := []byte("the-new-secret-of-the-shop"), []byte("the-old-secret-of-the-shop"), []byte(`{}`)
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	h := webhook.Sign(newer, at, body, older)
	if strings.Count(h, "v1=") != 2 {
		t.Fatalf("header %q", h)
	}
	for _, secret := range [][]byte{newer, older} {
		if err := webhook.Verify(secret, h, body, at); err != nil {
			t.Errorf("checked with %q: %v", secret, err)
		}
	}
	if err := webhook.Verify([]byte("neither-of-the-two"), h, body, at); !errors.Is(err, webhook.ErrSignature) {
		t.Errorf("checked with another secret: %v", err)
	}
}

// FuzzVerify: no header or body makes Verify panic, and a header that passes is bound to its body and
// its secret: it fails for any other.
func FuzzVerify(f *testing.F) {
	secret := []byte("fuzz-secret")
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	f.Add(webhook.Sign(secret, at, []byte("{}")), []byte("{}"))
	f.Add("t=1796493600,v1=", []byte(""))
	f.Add("t=-9223372036854775808,v1="+strings.Repeat("ab", 32), []byte("x"))
	f.Add(",,=,t=,v1", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if webhook.Verify(secret, header, body, at) != nil {
			return
		}
		if webhook.Verify(secret, header, append(body, 'x'), at) == nil || webhook.Verify([]byte("other"), header, body, at) == nil {
			t.Fatalf("%q passes for more than body %q under its secret", header, body)
		}
	})
}
