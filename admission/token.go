// Package admission lets a protected site check, offline, that a request comes from a visitor whom a
// rushgate waiting room has admitted. Rushgate signs each admission as an Ed25519 JWT (claims room,
// sub, exp, jti; header kid) and publishes its public keys as a JWK set at GET /v1/keys; a [Verifier]
// checks tokens against those keys without calling rushgate, and [Gate] wraps an http.Handler so that
// only admitted visitors reach it while everyone else is sent to the room.
package admission

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Reasons a token is refused. Verify wraps exactly one of them, so a caller can tell a visitor whose
// session ran out from a forgery.
var (
	ErrMalformed  = errors.New("admission: malformed token")
	ErrExpired    = errors.New("admission: token expired")
	ErrSignature  = errors.New("admission: invalid signature")
	ErrUnknownKey = errors.New("admission: unknown signing key")
	ErrWrongRoom  = errors.New("admission: token is for another room")
)

// Reason returns the stable snake_case name of a verification error, for APIs and logs.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrSignature):
		return "invalid_signature"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrWrongRoom):
		return "wrong_room"
	default:
		return "malformed"
	}
}

// MaxTokenLen bounds the tokens Verify reads; a real admission token is about 300 bytes.
const MaxTokenLen = 4096

// Claims are the contents of an admission token.
type Claims struct {
	// Room is the room the visitor was admitted through.
	Room string `json:"room"`
	jwt.RegisteredClaims
}

// Visitor returns the admitted visitor's id (the sub claim).
func (c *Claims) Visitor() string { return c.Subject }

// JWK is one Ed25519 public key in JSON Web Key form (RFC 8037).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// KeySet is a JWK set, as served at GET /v1/keys.
type KeySet struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK describes pub under key id kid.
func PublicJWK(kid string, pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: kid, Alg: "EdDSA", Use: "sig"}
}

// ParseKeySet reads a JWK set and returns its Ed25519 keys by key id.
func ParseKeySet(data []byte) (map[string]ed25519.PublicKey, error) {
	var s KeySet
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("admission: key set: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(s.Keys))
	for _, k := range s.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid == "" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("admission: key %q: bad x", k.Kid)
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	if len(keys) == 0 {
		return nil, errors.New("admission: key set holds no Ed25519 key")
	}
	return keys, nil
}

// Sign creates an admission token; rushgate uses it, and tests of a protected site may too.
func Sign(kid string, key ed25519.PrivateKey, c Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = kid
	return t.SignedString(key)
}

// Verifier checks admission tokens against a set of public keys. It is safe for concurrent use.
type Verifier struct {
	mu      sync.RWMutex
	keys    map[string]ed25519.PublicKey
	fetch   func(ctx context.Context) (map[string]ed25519.PublicKey, time.Duration, error)
	fetched time.Time // when the last fetch was tried
	expires time.Time // when the keys fetched last must be fetched again
	// refreshing is set while a background fetch of an outlived key set runs; refreshed, when set (by
	// tests), is called as it ends.
	refreshing bool
	refreshed  func()
	source     func() map[string]ed25519.PublicKey
	now        func() time.Time

	// verified remembers tokens whose signature checked out, so that a visitor's every request does
	// not pay an Ed25519 verification (tens of µs) again: a hit still checks expiry and that the key
	// is still published.
	vmu      sync.Mutex
	verified map[string]verifiedToken
}

// verifiedToken is a token whose signature checked out with the key kid.
type verifiedToken struct {
	claims Claims
	kid    string
	key    ed25519.PublicKey
}

// maxVerified bounds the verified tokens remembered; past it half are forgotten at random.
const maxVerified = 1 << 16

// NewVerifier returns a verifier for a fixed set of keys.
func NewVerifier(keys map[string]ed25519.PublicKey) *Verifier {
	return &Verifier{keys: keys, now: time.Now}
}

// NewVerifierFunc returns a verifier that looks keys up in whatever set keys returns at the time of
// each verification, for a process that holds the keys itself and rotates them (rushgate does). keys
// must be cheap and must not return a map that is changed afterwards.
func NewVerifierFunc(keys func() map[string]ed25519.PublicKey) *Verifier {
	return &Verifier{source: keys, now: time.Now}
}

// refetchEvery limits how often a remote verifier reloads keys for an unknown kid, so that a flood of
// forged kids cannot turn into a flood of requests to rushgate.
const refetchEvery = 30 * time.Second

// DefaultKeyLife is how long a remote verifier trusts a fetched key set when the response names no
// Cache-Control max-age (rushgate's says 60 seconds). After it the set is fetched again and keys no
// longer published are dropped, so a key retired by rotation, or pulled after a compromise, stops
// verifying within a minute. Lifetimes a server states are kept between a second and an hour.
const DefaultKeyLife = 60 * time.Second

// NewRemoteVerifier returns a verifier that loads keys from a rushgate's GET /v1/keys URL on first use
// and, at most every 30 seconds, when a token names a key it does not know (after a rotation); and, in
// the background, once the set's cache lifetime (its Cache-Control max-age) has passed. A refetched set
// replaces the old one whole, so keys no longer published stop verifying; if a refetch fails, the keys
// last fetched stay in use and a later verification tries again. A nil client means a client with a
// 5-second timeout.
func NewRemoteVerifier(keysURL string, client *http.Client) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	v := &Verifier{now: time.Now}
	v.fetch = func(ctx context.Context) (map[string]ed25519.PublicKey, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, keysURL, nil)
		if err != nil {
			return nil, 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, 0, fmt.Errorf("admission: fetch keys: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, 0, fmt.Errorf("admission: fetch keys: %s", resp.Status)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, 0, fmt.Errorf("admission: fetch keys: %w", err)
		}
		keys, err := ParseKeySet(body)
		return keys, keyLife(resp.Header.Get("Cache-Control")), err
	}
	return v
}

// keyLife reads a Cache-Control header's max-age, within [time.Second, time.Hour], or DefaultKeyLife.
func keyLife(cacheControl string) time.Duration {
	for _, d := range strings.Split(cacheControl, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(strings.ToLower(d)), "max-age="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				n = min(max(n, 1), 3600) // bounded before it is multiplied
				return time.Duration(n) * time.Second
			}
		}
	}
	return DefaultKeyLife
}

// WithClock makes the verifier judge expiry by now instead of time.Now; it returns v.
func (v *Verifier) WithClock(now func() time.Time) *Verifier {
	v.now = now
	return v
}

func (v *Verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	if v.source != nil {
		if k, ok := v.source()[kid]; ok {
			return k, nil
		}
		return nil, ErrUnknownKey
	}
	v.mu.RLock()
	k, ok := v.keys[kid]
	stale := ok && v.stale()
	v.mu.RUnlock()
	if ok {
		if stale {
			v.refresh()
		}
		return k, nil
	}
	// A key not in the set: on first use, or after a rotation, fetch now, at most every refetchEvery.
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	if v.fetch != nil && (v.fetched.IsZero() || v.now().Sub(v.fetched) >= refetchEvery) {
		v.fetched = v.now()
		keys, life, err := v.fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnknownKey, err)
		}
		v.keys, v.expires = keys, v.fetched.Add(life)
	}
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// stale reports, with v.mu held, whether the key set has outlived its cache lifetime and the last try
// to fetch it is a second old or more, so that a rushgate that does not answer costs one try a second.
func (v *Verifier) stale() bool {
	now := v.now()
	return v.fetch != nil && !v.refreshing && now.After(v.expires) && now.Sub(v.fetched) >= time.Second
}

// refresh fetches the key set again in the background, once at a time: verifications go on with the
// keys they have meanwhile, so a slow or absent rushgate never holds up the protected site. If the
// fetch fails the keys stay as they are; keys no longer published are dropped by one that succeeds.
// The fetch ends within the client's timeout.
func (v *Verifier) refresh() {
	v.mu.Lock()
	if !v.stale() {
		v.mu.Unlock()
		return
	}
	v.refreshing, v.fetched = true, v.now()
	v.mu.Unlock()
	go func() {
		keys, life, err := v.fetch(context.Background())
		v.mu.Lock()
		defer v.mu.Unlock()
		if err == nil {
			v.keys, v.expires = keys, v.fetched.Add(life)
		}
		v.refreshing = false
		if v.refreshed != nil {
			v.refreshed()
		}
	}()
}

// compact reports whether token uses only the base64url alphabet and dots, as a compact JWT does.
// base64 decoding skips \r and \n, so without this check one token would have many spellings.
func compact(token string) bool {
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Verify checks a token's signature, expiry and, when room is not empty, its room. The error wraps one
// of the Err values of this package.
func (v *Verifier) Verify(ctx context.Context, token, room string) (*Claims, error) {
	c, err := v.remembered(ctx, token)
	if c == nil && err == nil {
		c, err = v.parse(ctx, token, true)
	}
	if err != nil {
		return nil, err
	}
	if room != "" && c.Room != room {
		return nil, ErrWrongRoom
	}
	return c, nil
}

// remembered returns the claims of a token verified before if it is still good: not expired, and its
// key still the one published under its kid. It returns nil, nil for a token it does not know.
func (v *Verifier) remembered(ctx context.Context, token string) (*Claims, error) {
	v.vmu.Lock()
	t, ok := v.verified[token]
	v.vmu.Unlock()
	if !ok {
		return nil, nil
	}
	if k, err := v.key(ctx, t.kid); err != nil || !k.Equal(t.key) {
		v.vmu.Lock()
		delete(v.verified, token)
		v.vmu.Unlock()
		return nil, nil // verify again, to report why
	}
	if t.claims.ExpiresAt == nil || !v.now().Before(t.claims.ExpiresAt.Time) {
		return nil, ErrExpired
	}
	c := t.claims
	return &c, nil
}

// remember keeps a verified token.
func (v *Verifier) remember(token, kid string, key ed25519.PublicKey, c *Claims) {
	v.vmu.Lock()
	defer v.vmu.Unlock()
	if v.verified == nil {
		v.verified = make(map[string]verifiedToken)
	}
	if len(v.verified) >= maxVerified {
		n := 0
		for k := range v.verified { // map order is random: a random half goes
			delete(v.verified, k)
			if n++; n >= maxVerified/2 {
				break
			}
		}
	}
	v.verified[token] = verifiedToken{claims: *c, kid: kid, key: key}
}

// VerifySignature checks only that rushgate signed the token, ignoring its expiry: releasing an
// admission that already ran out is harmless, and refusing it would only confuse the caller.
func (v *Verifier) VerifySignature(ctx context.Context, token string) (*Claims, error) {
	return v.parse(ctx, token, false)
}

func (v *Verifier) parse(ctx context.Context, token string, checkExpiry bool) (*Claims, error) {
	if len(token) > MaxTokenLen || !compact(token) {
		return nil, ErrMalformed
	}
	var keyErr error
	var usedKid string
	var usedKey ed25519.PublicKey
	keyfunc := func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := v.key(ctx, kid)
		keyErr, usedKid, usedKey = err, kid, k
		return k, err
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(v.now), jwt.WithStrictDecoding()}
	if checkExpiry {
		opts = append(opts, jwt.WithExpirationRequired())
	} else {
		opts = append(opts, jwt.WithoutClaimsValidation())
	}
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, keyfunc, opts...)
	switch {
	case err == nil:
	case keyErr != nil:
		return nil, keyErr
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return nil, ErrSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, ErrExpired
	default:
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if c.Subject == "" || c.Room == "" || c.ID == "" {
		return nil, fmt.Errorf("%w: missing room, sub or jti", ErrMalformed)
	}
	if checkExpiry {
		v.remember(token, usedKid, usedKey, &c)
	}
	return &c, nil
}
