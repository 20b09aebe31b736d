package keyring

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/vault"
)

var ctx = context.Background()

// clock is a settable time shared by the keyrings of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)} }

func open(t *testing.T, v Vault, c *clock) *Keyring {
	t.Helper()
	kr, err := Open(ctx, v, Options{Now: c.Now, Retain: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func claims() admission.Claims {
	return admission.Claims{Room: "r", RegisteredClaims: jwt.RegisteredClaims{
		Subject: "v_a", ID: "x.1", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour)),
	}}
}

// signer returns the key id a token signed now carries, checking the token against the published keys.
func signer(t *testing.T, kr *Keyring) string {
	t.Helper()
	tok, err := kr.Sign(claims())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(kr.KeySet())
	keys, err := admission.ParseKeySet(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admission.NewVerifier(keys).Verify(ctx, tok, "r"); err != nil {
		t.Fatalf("a fresh token does not verify against the published keys: %v", err)
	}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, &admission.Claims{})
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Header["kid"].(string)
}

func kids(kr *Keyring) []string {
	var out []string
	for _, k := range kr.KeySet().Keys {
		out = append(out, k.Kid)
	}
	return out
}

func TestRotationPublishesAhead(t *testing.T) {
	dir, c := vault.Dir(t.TempDir()), newClock()
	kr := open(t, dir, c)
	first := signer(t, kr)
	old, _ := kr.Sign(claims())

	kid, signs, err := kr.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !signs.Equal(c.Now().Add(PublishAhead)) {
		t.Fatalf("new key signs from %v, want %v", signs, c.Now().Add(PublishAhead))
	}
	if got := kids(kr); !slices.Equal(got, []string{kid, first}) {
		t.Fatalf("published %v, want the new key first, then the old: %v", got, []string{kid, first})
	}
	if got := signer(t, kr); got != first {
		t.Fatal("a key signs as soon as it is published")
	}
	c.Advance(PublishAhead - time.Second)
	if got := signer(t, kr); got != first {
		t.Fatal("the new key signs before its time")
	}
	c.Advance(time.Second)
	if got := signer(t, kr); got != kid {
		t.Fatalf("after %v the signer is %s, want the new key %s", PublishAhead, got, kid)
	}
	if _, err := admission.NewVerifierFunc(kr.PublicKeys).Verify(ctx, old, "r"); err != nil {
		t.Fatalf("token signed before the rotation: %v", err)
	}

	again := open(t, dir, c) // a restart keeps the keys and who signs
	if got := signer(t, again); got != kid || !slices.Equal(kids(again), kids(kr)) {
		t.Fatalf("after restart: signer %s, keys %v; want %s, %v", got, kids(again), kid, kids(kr))
	}
}

func TestRetention(t *testing.T) {
	c := newClock()
	kr := open(t, vault.Dir(t.TempDir()), c) // retains for an hour
	first := signer(t, kr)
	second, _, _ := kr.Rotate(ctx)
	c.Advance(PublishAhead + time.Hour) // second signs since an hour: first is still inside retention
	third, _, _ := kr.Rotate(ctx)
	if got := kids(kr); !slices.Equal(got, []string{third, second, first}) {
		t.Fatalf("keys %v, want all three", got)
	}
	c.Advance(time.Second) // first stopped signing more than an hour ago
	fourth, _, _ := kr.Rotate(ctx)
	// second still signs (third is not due yet), so it stays, and so does the pending third.
	if got := kids(kr); !slices.Equal(got, []string{fourth, third, second}) {
		t.Fatalf("keys %v, want %v", got, []string{fourth, third, second})
	}
	if got := signer(t, kr); got != second {
		t.Fatalf("signer %s, want %s until the next key's time", got, second)
	}
}

// TestScheduledRotation runs the schedule on two keyrings at once: one rotation per period between
// them, none while a new key waits to sign.
func TestScheduledRotation(t *testing.T) {
	dir, c := vault.Dir(t.TempDir()), newClock()
	a, b := open(t, dir, c), open(t, dir, c)
	const every = 24 * time.Hour
	rotations := func() int {
		n := 0
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, kr := range []*Keyring{a, b, a, b} {
			wg.Go(func() {
				kid, _, err := kr.rotate(ctx, every)
				if err != nil {
					t.Error(err)
				}
				if kid != "" {
					mu.Lock()
					n++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return n
	}
	if n := rotations(); n != 0 {
		t.Fatalf("%d rotations of a fresh key", n)
	}
	c.Advance(every)
	if n := rotations(); n != 1 {
		t.Fatalf("%d rotations once due, want 1", n)
	}
	c.Advance(PublishAhead / 2)
	if n := rotations(); n != 0 {
		t.Fatalf("%d rotations while the new key waits to sign", n)
	}
	c.Advance(PublishAhead / 2)
	if n := rotations(); n != 0 {
		t.Fatalf("%d rotations right after the new key began to sign", n)
	}
	if got := len(kids(a)); got != 2 {
		t.Fatalf("%d keys, want 2", got)
	}
}

func TestReloadTakesUpRotation(t *testing.T) {
	dir, c := vault.Dir(t.TempDir()), newClock()
	a, b := open(t, dir, c), open(t, dir, c)
	kid, _, err := a.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.PublicKeys()[kid]; ok {
		t.Fatal("b knows the key before reloading")
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.PublicKeys()[kid]; !ok {
		t.Fatal("b does not know the rotated key after reloading")
	}
	c.Advance(PublishAhead)
	if got := signer(t, b); got != kid {
		t.Fatalf("b signs with %s, want the rotated key %s", got, kid)
	}
}

func TestDamagedFile(t *testing.T) {
	dir := vault.Dir(t.TempDir())
	for _, bad := range []string{`not json`, `[]`, `[{"kid":"a","seed":"AAAA"}]`, `[{"kid":"","seed":"` +
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" + `"}]`} {
		if err := saveRaw(dir, bad); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, dir, Options{}); err == nil {
			t.Errorf("Open accepted %s", bad)
		}
	}
}

func saveRaw(d vault.Dir, s string) error { return d.Save(ctx, Name, []byte(s)) }

// TestRetiredKeyLeavesWithoutRotation: a key stops being published, and stops verifying here, once its
// retention after its successor took over has passed, as the README says; it once stayed until the
// next rotation, however long after that came.
func TestRetiredKeyLeavesWithoutRotation(t *testing.T) {
	c := newClock()
	kr := open(t, vault.Dir(t.TempDir()), c) // retains for an hour
	first := signer(t, kr)
	old, err := kr.Sign(claims())
	if err != nil {
		t.Fatal(err)
	}
	second, _, _ := kr.Rotate(ctx)
	verifier := admission.NewVerifierFunc(kr.PublicKeys)
	c.Advance(PublishAhead + time.Hour) // second has signed for exactly the retention
	if got := kids(kr); !slices.Equal(got, []string{second, first}) {
		t.Fatalf("at the end of the retention: keys %v, want both", got)
	}
	if _, err := verifier.Verify(ctx, old, "r"); err != nil {
		t.Fatalf("a token of the first key within its retention: %v", err)
	}
	c.Advance(time.Second)
	if got := kids(kr); !slices.Equal(got, []string{second}) {
		t.Fatalf("after the retention, with no rotation since: keys %v, want only %s", got, second)
	}
	if _, err := verifier.Verify(ctx, old, "r"); err == nil {
		t.Fatal("a token of the retired key still verifies")
	}
	if got := signer(t, kr); got != second {
		t.Fatalf("signer %s, want %s", got, second)
	}
	// Another instance loading the same keys later agrees.
	if got := kids(open(t, kr.vault, c)); !slices.Equal(got, []string{second}) {
		t.Fatalf("a fresh load publishes %v, want only %s", got, second)
	}
}

// TestLostSecretsArePutBack: the vault loses everything (Redis restarted without its data) under a
// running instance. Its next watch tick puts back the keys and the secrets it holds, so an instance
// started afterwards signs and verifies with them instead of making its own, which would refuse every
// token issued before. A secret found replaced by another value is reported once and left alone.
func TestLostSecretsArePutBack(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	v := vault.Dir(dir)
	a := open(t, v, c)
	kid := signer(t, a)
	secret, _, err := v.LoadOrCreate(ctx, "visitor.secret", func() ([]byte, error) { return []byte("s1\n"), nil })
	if err != nil {
		t.Fatal(err)
	}
	a.Hold("visitor.secret", secret)
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := a.keep(ctx, log); err != nil {
		t.Fatal(err)
	}
	if restored, err := a.reload(ctx); err != nil || !restored {
		t.Fatalf("reload after the loss: restored %v, %v", restored, err)
	}
	b := open(t, v, c)
	if got := signer(t, b); got != kid || !slices.Equal(kids(b), kids(a)) {
		t.Fatalf("an instance started after the loss signs with %s (keys %v), want %s (keys %v)", got, kids(b), kid, kids(a))
	}
	if got, _, _ := v.LoadOrCreate(ctx, "visitor.secret", nil); string(got) != "s1\n" {
		t.Fatalf("visitor.secret after the loss: %q", got)
	}
	if n := strings.Count(logged.String(), "put back a shared secret"); n != 1 {
		t.Fatalf("%d put-backs logged:\n%s", n, logged.String())
	}

	if err := v.Save(ctx, "visitor.secret", []byte("s2\n")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.keep(ctx, log); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logged.String(), "holds another value"); n != 1 {
		t.Fatalf("a replaced secret reported %d times:\n%s", n, logged.String())
	}
	if got, _, _ := v.LoadOrCreate(ctx, "visitor.secret", nil); string(got) != "s2\n" {
		t.Fatalf("the replaced secret was overwritten: %q", got)
	}
}
