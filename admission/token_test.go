package admission

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	t0    = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	seed1 = ed25519.NewKeyFromSeed(make([]byte, 32))
	seed2 = ed25519.NewKeyFromSeed([]byte("01234567890123456789012345678901"))
)

func claims(room string, exp time.Time) Claims {
	return Claims{Room: room, RegisteredClaims: jwt.RegisteredClaims{
		Subject: "v_abc", ID: "e.1", ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(t0),
	}}
}

func mustSign(t testing.TB, kid string, key ed25519.PrivateKey, c Claims) string {
	tok, err := Sign(kid, key, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func verifier() *Verifier {
	return NewVerifier(map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)}).WithClock(func() time.Time { return t0 })
}

func TestVerify(t *testing.T) {
	v := verifier()
	good := mustSign(t, "k1", seed1, claims("sale", t0.Add(time.Minute)))
	c, err := v.Verify(context.Background(), good, "sale")
	if err != nil || c.Visitor() != "v_abc" || c.Room != "sale" || c.ID != "e.1" {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	parts := strings.Split(good, ".")
	payload, _ := json.Marshal(claims("other", t0.Add(time.Hour)))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`)) + "." + parts[1] + "."
	cases := []struct {
		name, token, room string
		want              error
	}{
		{"expired", mustSign(t, "k1", seed1, claims("sale", t0)), "sale", ErrExpired},
		{"wrong room", good, "other", ErrWrongRoom},
		{"wrong key", mustSign(t, "k1", seed2, claims("sale", t0.Add(time.Minute))), "sale", ErrSignature},
		{"unknown kid", mustSign(t, "k9", seed1, claims("sale", t0.Add(time.Minute))), "sale", ErrUnknownKey},
		{"tampered", tampered, "sale", ErrSignature},
		{"alg none", none, "sale", ErrSignature},
		{"garbage", "not.a.token", "sale", ErrMalformed},
		{"empty", "", "sale", ErrMalformed},
		{"no room", mustSign(t, "k1", seed1, claims("", t0.Add(time.Minute))), "", ErrMalformed},
		{"huge", strings.Repeat("a", MaxTokenLen+1), "sale", ErrMalformed},
		{"carriage return in a genuine signature", good[:len(good)-5] + "\r" + good[len(good)-5:], "sale", ErrMalformed},
		{"newline in a genuine payload", parts[0] + "." + parts[1][:4] + "\n" + parts[1][4:] + "." + parts[2], "sale", ErrMalformed},
	}
	for _, tc := range cases {
		if _, err := v.Verify(context.Background(), tc.token, tc.room); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := v.VerifySignature(context.Background(), cases[0].token); err != nil {
		t.Errorf("VerifySignature refused an expired but genuine token: %v", err)
	}
	if Reason(ErrExpired) != "expired" || Reason(errors.New("x")) != "malformed" {
		t.Error("Reason")
	}
}

func TestRemoteVerifierRefetchesOnRotation(t *testing.T) {
	var fetches atomic.Int32
	set := KeySet{Keys: []JWK{PublicJWK("k1", seed1.Public().(ed25519.PublicKey))}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	v := NewRemoteVerifier(srv.URL, srv.Client())
	ctx := context.Background()
	if _, err := v.Verify(ctx, mustSign(t, "k1", seed1, claims("sale", time.Now().Add(time.Minute))), "sale"); err != nil {
		t.Fatal(err)
	}
	for range 5 { // unknown kids within the refetch interval cost no requests
		if _, err := v.Verify(ctx, mustSign(t, "k2", seed2, claims("sale", time.Now().Add(time.Minute))), "sale"); !errors.Is(err, ErrUnknownKey) {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestParseKeySet(t *testing.T) {
	for _, bad := range []string{`{`, `{"keys":[]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"!!"}]}`} {
		if _, err := ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func FuzzVerify(f *testing.F) {
	v := verifier()
	f.Add(mustSign(f, "k1", seed1, claims("sale", t0.Add(time.Minute))))
	f.Add(mustSign(f, "k1", seed1, claims("sale", t0)))
	f.Add("eyJhbGciOiJFZERTQSJ9.e30.")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.Verify(context.Background(), tok, "")
		if err == nil && (c.Room == "" || c.Subject == "" || !c.ExpiresAt.After(t0)) {
			t.Fatalf("accepted incomplete claims %+v", c)
		}
		if err != nil && Reason(err) == "" {
			t.Fatalf("refusal without a reason: %v", err)
		}
	})
}

// TestRemoteVerifierDropsRetiredKeys: a key that rotation retired (or an operator pulled) stops
// verifying once the fetched set's cache lifetime has passed, in a verifier that has run all along. The
// set is fetched again in the background, so a rushgate that does not answer never holds a
// verification up, and is tried once a second.
func TestRemoteVerifierDropsRetiredKeys(t *testing.T) {
	var published atomic.Value
	published.Store(KeySet{Keys: []JWK{PublicJWK("k1", seed1.Public().(ed25519.PublicKey))}})
	var fetches atomic.Int32
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=60")
		_ = json.NewEncoder(w).Encode(published.Load())
	}))
	defer srv.Close()
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := NewRemoteVerifier(srv.URL, srv.Client()).WithClock(clock)
	refreshed := make(chan struct{}, 10)
	v.refreshed = func() { refreshed <- struct{}{} }
	ctx := context.Background()
	old := mustSign(t, "k1", seed1, claims("sale", t0.Add(24*time.Hour)))
	if _, err := v.Verify(ctx, old, "sale"); err != nil {
		t.Fatal(err)
	}
	// Rotation: k2 is published beside k1; a token of it is fetched for at once.
	published.Store(KeySet{Keys: []JWK{PublicJWK("k2", seed2.Public().(ed25519.PublicKey)), PublicJWK("k1", seed1.Public().(ed25519.PublicKey))}})
	advance(40 * time.Second)
	fresh := mustSign(t, "k2", seed2, claims("sale", t0.Add(24*time.Hour)))
	if _, err := v.Verify(ctx, fresh, "sale"); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	// k1 is retired (or pulled): no longer published. Within the set's lifetime it still verifies...
	published.Store(KeySet{Keys: []JWK{PublicJWK("k2", seed2.Public().(ed25519.PublicKey))}})
	advance(30 * time.Second)
	if _, err := v.Verify(ctx, old, "sale"); err != nil {
		t.Fatalf("within the cache lifetime: %v", err)
	}
	// ...and once the lifetime has passed, the set is fetched again and no longer holds it.
	advance(61 * time.Second)
	_, _ = v.Verify(ctx, old, "sale") // answered from the set it has; the refetch starts
	<-refreshed
	if _, err := v.Verify(ctx, old, "sale"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("retired key after the cache lifetime: %v, want ErrUnknownKey", err)
	}
	if _, err := v.Verify(ctx, fresh, "sale"); err != nil {
		t.Fatalf("the current key after the refetch: %v", err)
	}
	// While rushgate does not answer, the last set stays in use, and it is tried once a second.
	down.Store(true)
	advance(2 * time.Minute)
	before := fetches.Load()
	for range 20 {
		if _, err := v.Verify(ctx, fresh, "sale"); err != nil {
			t.Fatalf("with rushgate down: %v", err)
		}
	}
	<-refreshed
	for range 20 {
		if _, err := v.Verify(ctx, fresh, "sale"); err != nil {
			t.Fatalf("with rushgate down, after a failed refetch: %v", err)
		}
	}
	if n := fetches.Load() - before; n != 1 {
		t.Fatalf("%d fetches within a second while rushgate is down, want 1", n)
	}
	advance(time.Second)
	_, _ = v.Verify(ctx, fresh, "sale")
	<-refreshed
	if n := fetches.Load() - before; n != 2 {
		t.Fatalf("%d fetches a second later, want 2", n)
	}
}

func TestKeyLife(t *testing.T) {
	for h, want := range map[string]time.Duration{
		"": DefaultKeyLife, "public, max-age=60": time.Minute, "max-age=0": time.Second,
		"no-store, Max-Age=7200": time.Hour, "max-age=x": DefaultKeyLife, "max-age=99999999999999": time.Hour,
		"max-age=-5": time.Second,
	} {
		if got := keyLife(h); got != want {
			t.Errorf("keyLife(%q) = %v, want %v", h, got, want)
		}
	}
}

// TestVerifierRemembers: a token verified once is taken again without its signature checked, but not
// past its expiry, and not once its key is no longer published.
func TestVerifierRemembers(t *testing.T) {
	now := time.Now()
	keys := map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)}
	v := NewVerifierFunc(func() map[string]ed25519.PublicKey { return keys }).WithClock(func() time.Time { return now })
	tok := mustSign(t, "k1", seed1, claims("sale", now.Add(time.Minute)))
	for i := range 3 {
		if _, err := v.Verify(context.Background(), tok, "sale"); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	if len(v.verified) != 1 {
		t.Fatalf("remembered %d tokens", len(v.verified))
	}
	if _, err := v.Verify(context.Background(), tok, "other"); !errors.Is(err, ErrWrongRoom) {
		t.Fatalf("a remembered token for another room: %v", err)
	}
	keys = map[string]ed25519.PublicKey{} // the key is pulled
	if _, err := v.Verify(context.Background(), tok, "sale"); err == nil {
		t.Fatal("a remembered token outlived its key")
	}
	keys = map[string]ed25519.PublicKey{"k1": seed1.Public().(ed25519.PublicKey)}
	if _, err := v.Verify(context.Background(), tok, "sale"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := v.Verify(context.Background(), tok, "sale"); !errors.Is(err, ErrExpired) {
		t.Fatalf("a remembered token past its expiry: %v", err)
	}
}
