// Package visitor issues and reads visitor tokens: the identity rushgate gives each person in a line.
// Identity is issued, never claimed: a visitor id is only ever taken from a token this server signed, so
// no request can name somebody else's id to leave, release or bid in their place.
package visitor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
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
	macs   sync.Pool // *macState: keying an HMAC costs more than the MAC of a token
}

// macState is a keyed HMAC-SHA256 with room for its input and output, pooled together so that signing
// and checking a token, which every new visitor and every poll does, allocate nothing but the token.
type macState struct {
	h   hash.Hash
	in  [len(tokenVersion) + 1 + maxIDLen]byte
	sum [sha256.Size]byte
	sig [sigLen]byte
}

// maxIDLen is the longest visitor id; sigLen the length of a token's encoded MAC.
const (
	maxIDLen = 64
	sigLen   = 43 // unpadded base64 of a SHA-256 MAC
)

// NewIssuer returns an issuer; the secret must be at least 32 bytes of randomness.
func NewIssuer(secret []byte) (*Issuer, error) {
	if len(secret) < 32 {
		return nil, errors.New("visitor: secret must be at least 32 bytes")
	}
	is := &Issuer{secret: append([]byte(nil), secret...)}
	is.macs.New = func() any { return &macState{h: hmac.New(sha256.New, is.secret)} }
	return is, nil
}

// New issues a token for a fresh anonymous visitor and returns it with the visitor's id.
func (is *Issuer) New() (token, id string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var raw [2 + 26]byte // "v_" and the base32 of 16 bytes
	raw[0], raw[1] = 'v', '_'
	idEncoding.Encode(raw[2:], b[:])
	return is.issue(raw[:])
}

// ForSubject issues the token of a user the protected site knows. The id is derived from the subject, so
// minting twice for one account yields the same visitor and its one place in line.
func (is *Issuer) ForSubject(subject string) (token, id string) {
	m := hmac.New(sha256.New, is.secret)
	m.Write([]byte("subject\x00" + subject))
	return is.issue([]byte("s_" + idEncoding.EncodeToString(m.Sum(nil)[:16])))
}

// issue returns the token for id, and id as a part of the token's own text.
func (is *Issuer) issue(id []byte) (token, idText string) {
	ms := is.signature(id)
	var b strings.Builder
	b.Grow(len(tokenVersion) + 1 + len(id) + 1 + sigLen)
	b.WriteString(tokenVersion + ".")
	b.Write(id)
	b.WriteByte('.')
	b.Write(ms.sig[:])
	is.macs.Put(ms)
	token = b.String()
	return token, token[len(tokenVersion)+1 : len(tokenVersion)+1+len(id)]
}

// signature computes the encoded MAC of id into a pooled state, which the caller puts back.
func (is *Issuer) signature(id []byte) *macState {
	ms := is.macs.Get().(*macState)
	ms.h.Reset()
	n := copy(ms.in[:], tokenVersion+".")
	n += copy(ms.in[n:], id)
	ms.h.Write(ms.in[:n])
	base64.RawURLEncoding.Encode(ms.sig[:], ms.h.Sum(ms.sum[:0]))
	return ms
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
	id, sig, ok := strings.Cut(rest, ".")
	if !ok || !validID(id) || len(sig) != sigLen {
		return "", ErrInvalid
	}
	// Compare the signature's text with the one this issuer makes for id, rather than decoding it:
	// base64 decoding skips \r and \n, which would let one token have many spellings.
	var raw [maxIDLen]byte
	ms := is.signature(raw[:copy(raw[:], id)])
	good := subtle.ConstantTimeCompare(ms.sig[:], []byte(sig)) == 1
	is.macs.Put(ms)
	if !good {
		return "", ErrInvalid
	}
	return id, nil
}

func validID(id string) bool {
	if len(id) < 3 || len(id) > maxIDLen || (id[:2] != "v_" && id[:2] != "s_") {
		return false
	}
	for _, c := range id[2:] {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}
