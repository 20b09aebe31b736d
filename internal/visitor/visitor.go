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

	"github.com/rushgate/rushgate"
)

// ErrInvalid is returned for a token that is malformed or not signed by this issuer.
var ErrInvalid = errors.New("visitor: invalid token")

// Token versions: v1 tokens ("v1.<id>.<mac>") carry an id alone; v2 tokens ("v2.<id>.<origin>.<mac>")
// also name the room whose join issued them. The MAC covers everything before its own dot.
const (
	versionPlain  = "v1"
	versionOrigin = "v2"
)

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
	in  [maxSignedLen]byte
	sum [sha256.Size]byte
	sig [sigLen]byte
}

// maxIDLen is the longest visitor id; maxSignedLen the longest text a MAC covers (a v2 token's version,
// id and origin room); sigLen the length of a token's encoded MAC.
const (
	maxIDLen     = 64
	maxSignedLen = len(versionOrigin) + 1 + maxIDLen + 1 + rushgate.MaxIDLen
	sigLen       = 43 // unpadded base64 of a SHA-256 MAC
)

// Visitor is what a verified token says about its bearer.
type Visitor struct {
	// ID names the visitor in every room, drop and auction.
	ID string
	// Origin is the room whose join issued the token to an anonymous visitor ("" for a subject's
	// token). Until that visitor joins another room, its origin's line is the only one it can be in,
	// which spares a shared store from recording where each of a crowd's visitors waits (see
	// room.Entrant).
	Origin string
}

// Identity says whose identity a rule that counts people (a drop's per_visitor, one leading bid per
// bidder) counts. A free anonymous visitor is fine for waiting in line, but anyone can mint as many as
// they can send requests, so a drop or an auction that must count people asks for more.
type Identity string

// The identities a drop or an auction may require.
const (
	// IdentityAny takes any visitor, anonymous ones included: per_visitor counts tokens, not people.
	IdentityAny Identity = "any"
	// IdentitySite takes only visitors the site minted for a subject (POST /v1/visitors): one
	// subject, one visitor, so per_visitor counts the site's accounts.
	IdentitySite Identity = "site"
	// IdentityRoom takes only visitors holding a live admission of the drop's or auction's room, so
	// per_visitor counts admissions, each paid for with a place in line.
	IdentityRoom Identity = "room"
)

// Valid reports whether id is one of the identities above, or empty (IdentityAny).
func (id Identity) Valid() bool {
	switch id {
	case "", IdentityAny, IdentitySite, IdentityRoom:
		return true
	}
	return false
}

// Subject reports whether a visitor id was minted for a subject of the site (ForSubject), not for an
// anonymous visitor.
func Subject(id string) bool { return strings.HasPrefix(id, "s_") }

// NewIssuer returns an issuer; the secret must be at least 32 bytes of randomness.
func NewIssuer(secret []byte) (*Issuer, error) {
	if len(secret) < 32 {
		return nil, errors.New("visitor: secret must be at least 32 bytes")
	}
	is := &Issuer{secret: append([]byte(nil), secret...)}
	is.macs.New = func() any { return &macState{h: hmac.New(sha256.New, is.secret)} }
	return is, nil
}

// New issues a token for a fresh anonymous visitor joining the room origin, which must be a valid room
// id, and returns it with the visitor's id.
func (is *Issuer) New(origin string) (token, id string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var raw [2 + 26]byte // "v_" and the base32 of 16 bytes
	raw[0], raw[1] = 'v', '_'
	idEncoding.Encode(raw[2:], b[:])
	return is.issue(raw[:], origin)
}

// ForSubject issues the token of a user the protected site knows. The id is derived from the subject, so
// minting twice for one account yields the same visitor and its one place in line; for the same reason
// the token names no origin: the account may already wait anywhere.
func (is *Issuer) ForSubject(subject string) (token, id string) {
	m := hmac.New(sha256.New, is.secret)
	m.Write([]byte("subject\x00" + subject))
	return is.issue([]byte("s_"+idEncoding.EncodeToString(m.Sum(nil)[:16])), "")
}

// issue returns the token for id and origin (v2 with an origin, v1 without), and id as a part of the
// token's own text.
func (is *Issuer) issue(id []byte, origin string) (token, idText string) {
	version := versionPlain
	if origin != "" {
		version = versionOrigin
	}
	var b strings.Builder
	b.Grow(len(version) + 1 + len(id) + 1 + len(origin) + 1 + sigLen)
	b.WriteString(version + ".")
	b.Write(id)
	if origin != "" {
		b.WriteByte('.')
		b.WriteString(origin)
	}
	ms := is.signature(b.String())
	b.WriteByte('.')
	b.Write(ms.sig[:])
	is.macs.Put(ms)
	token = b.String()
	return token, token[len(version)+1 : len(version)+1+len(id)]
}

// signature computes the encoded MAC of a token's signed text (at most maxSignedLen bytes) into a
// pooled state, which the caller puts back.
func (is *Issuer) signature(signed string) *macState {
	ms := is.macs.Get().(*macState)
	ms.h.Reset()
	ms.h.Write(ms.in[:copy(ms.in[:], signed)])
	base64.RawURLEncoding.Encode(ms.sig[:], ms.h.Sum(ms.sum[:0]))
	return ms
}

// Parse verifies a token and returns what it says.
func (is *Issuer) Parse(token string) (Visitor, error) {
	if len(token) > MaxTokenLen {
		return Visitor{}, ErrInvalid
	}
	dot := strings.LastIndexByte(token, '.')
	if dot < 0 || len(token)-dot-1 != sigLen {
		return Visitor{}, ErrInvalid
	}
	signed, sig := token[:dot], token[dot+1:]
	v, ok := parseSigned(signed)
	if !ok {
		return Visitor{}, ErrInvalid
	}
	// Compare the signature's text with the one this issuer makes, rather than decoding it: base64
	// decoding skips \r and \n, which would let one token have many spellings.
	ms := is.signature(signed)
	good := subtle.ConstantTimeCompare(ms.sig[:], []byte(sig)) == 1
	is.macs.Put(ms)
	if !good {
		return Visitor{}, ErrInvalid
	}
	return v, nil
}

// parseSigned reads the signed text of a token: "v1.<id>" or "v2.<id>.<origin>".
func parseSigned(signed string) (Visitor, bool) {
	version, rest, _ := strings.Cut(signed, ".")
	var v Visitor
	switch version {
	case versionPlain:
		v.ID = rest
	case versionOrigin:
		var ok bool
		if v.ID, v.Origin, ok = strings.Cut(rest, "."); !ok || !rushgate.ValidID(v.Origin) {
			return Visitor{}, false
		}
	default:
		return Visitor{}, false
	}
	return v, validID(v.ID)
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
