// Package visitor issues and reads visitor tokens: the identity rushgate gives each person in a line.
// Identity is issued, never claimed: a visitor id is only ever taken from a token this server signed, so
// no request can name somebody else's id to leave, release or bid in their place.
package visitor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"hash"
	"strings"
	"sync"
)

// ErrInvalid is returned for a token that is malformed or not signed by this issuer.
var ErrInvalid = errors.New("visitor: invalid token")

// tokenVersion prefixes every token so that the format can change without ambiguity.
const tokenVersion = "v1"

// MaxTokenLen bounds the tokens Parse accepts, so that an oversized header costs nothing to refuse.
const MaxTokenLen = 512

// idEncoding is lower-case base32: ids are case-insensitive-safe in URLs, cookies and Redis keys.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Issuer signs and verifies visitor tokens with one secret. Instances that share a line must share it.
type Issuer struct {
	secret []byte
	macs   sync.Pool // keyed HMAC-SHA256 states: keying one costs more than the MAC of a token
}

// NewIssuer returns an issuer; the secret must be at least 32 bytes of randomness.
func NewIssuer(secret []byte) (*Issuer, error) {
	if len(secret) < 32 {
		return nil, errors.New("visitor: secret must be at least 32 bytes")
	}
	is := &Issuer{secret: append([]byte(nil), secret...)}
	is.macs.New = func() any { return hmac.New(sha256.New, is.secret) }
	return is, nil
}

// New issues a token for a fresh anonymous visitor and returns it with the visitor's id.
func (is *Issuer) New() (token, id string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id = "v_" + idEncoding.EncodeToString(b[:])
	return is.sign(id), id
}

// ForSubject issues the token of a user the protected site knows. The id is derived from the subject, so
// minting twice for one account yields the same visitor and its one place in line.
func (is *Issuer) ForSubject(subject string) (token, id string) {
	m := hmac.New(sha256.New, is.secret)
	m.Write([]byte("subject\x00" + subject))
	id = "s_" + idEncoding.EncodeToString(m.Sum(nil)[:16])
	return is.sign(id), id
}

func (is *Issuer) mac(id string) []byte {
	m := is.macs.Get().(hash.Hash)
	m.Reset()
	var buf [80]byte
	m.Write(append(append(buf[:0], tokenVersion+"."...), id...))
	sum := m.Sum(make([]byte, 0, sha256.Size))
	is.macs.Put(m)
	return sum
}

func (is *Issuer) sign(id string) string {
	var sig [43]byte // base64 of a SHA-256 MAC
	base64.RawURLEncoding.Encode(sig[:], is.mac(id))
	return tokenVersion + "." + id + "." + string(sig[:])
}

// Parse verifies a token and returns the visitor id it carries.
func (is *Issuer) Parse(token string) (string, error) {
	if len(token) > MaxTokenLen {
		return "", ErrInvalid
	}
	version, rest, ok := strings.Cut(token, ".")
	if !ok || version != tokenVersion {
		return "", ErrInvalid
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok || !validID(id) {
		return "", ErrInvalid
	}
	// Compare the whole token with the one this issuer signs for id, rather than decoding the
	// signature: base64 decoding skips \r and \n, which would let one token have many spellings.
	if !hmac.Equal([]byte(token), []byte(is.sign(id))) {
		return "", ErrInvalid
	}
	return id, nil
}

func validID(id string) bool {
	if len(id) < 3 || len(id) > 64 || (id[:2] != "v_" && id[:2] != "s_") {
		return false
	}
	for _, c := range id[2:] {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}
