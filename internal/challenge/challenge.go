// Package challenge is rushgate's proof of work on join: a room can ask a new visitor to spend some CPU
// before it takes a place, which costs a person's browser a second and a script that wants a thousand
// places a thousand of them.
//
// A challenge is stateless to issue: a token signed with the server's secret that names the room, the
// difficulty, its expiry and a hash of whom it was issued to (the visitor, or the client address of one
// that has no token yet). A solution is a nonce such that SHA-256(token + ":" + nonce) starts with at
// least difficulty zero bits; the client sends "Rushgate-Challenge: token:nonce". Verifying costs two
// hashes and an HMAC, and a solution is spent once: the token is remembered as used until it expires.
package challenge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/bits"
	"strings"
	"time"
)

// Refusals of a solution, each answered with its own error code.
var (
	// ErrRequired means the join carried no solution.
	ErrRequired = errors.New("challenge: a solved challenge is required")
	// ErrInvalid means the challenge is malformed or was not signed by this server, or not for this
	// client.
	ErrInvalid = errors.New("challenge: not a challenge of this server for this client")
	// ErrExpired means the challenge ran out before it was used.
	ErrExpired = errors.New("challenge: expired")
	// ErrOtherRoom means the challenge was issued for another room.
	ErrOtherRoom = errors.New("challenge: issued for another room")
	// ErrUnsolved means the nonce does not give the difficulty's zero bits.
	ErrUnsolved = errors.New("challenge: the nonce does not solve it")
	// ErrUsed means the solution was used already.
	ErrUsed = errors.New("challenge: already used")
)

// MaxDifficulty bounds a room's difficulty: 2^30 hashes is minutes for a phone.
const MaxDifficulty = 30

// TTL is how long a challenge may be solved and used.
const TTL = 5 * time.Minute

// Challenge is what a client must solve.
type Challenge struct {
	Token      string
	Difficulty int
	ExpiresAt  time.Time
}

// Issuer issues and verifies challenges with one secret; every instance that shares the secret
// accepts the others' challenges.
type Issuer struct {
	key [32]byte
	now func() time.Time
}

// NewIssuer returns an issuer keyed by secret; a nil clock means time.Now.
func NewIssuer(secret []byte, clock func() time.Time) *Issuer {
	if clock == nil {
		clock = time.Now
	}
	return &Issuer{key: sha256.Sum256(append([]byte("rushgate challenge\x00"), secret...)), now: clock}
}

// payload: version, difficulty, expiry (unix seconds, 8 bytes), 16 bytes of SHA-256(room), 16 bytes of
// SHA-256(client), 8 random bytes.
const payloadLen = 1 + 1 + 8 + 16 + 16 + 8

// Issue returns a challenge of difficulty for client in room.
func (i *Issuer) Issue(room, client string, difficulty int) Challenge {
	exp := i.now().Add(TTL).Truncate(time.Second)
	p := make([]byte, payloadLen)
	p[0], p[1] = 1, byte(difficulty)
	binary.BigEndian.PutUint64(p[2:], uint64(exp.Unix()))
	r, c := sha256.Sum256([]byte(room)), sha256.Sum256([]byte(client))
	copy(p[10:], r[:16])
	copy(p[26:], c[:16])
	_, _ = rand.Read(p[42:])
	tok := base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(i.mac(p))
	return Challenge{Token: tok, Difficulty: difficulty, ExpiresAt: exp.UTC()}
}

func (i *Issuer) mac(p []byte) []byte {
	m := hmac.New(sha256.New, i.key[:])
	m.Write(p)
	return m.Sum(nil)[:16]
}

// Solution is a verified solution: the token to spend, until when it must be remembered.
type Solution struct {
	Token     string
	ExpiresAt time.Time
}

// Verify checks a "token:nonce" solution for client in room: signature, room, client, expiry and the
// zero bits of its hash. It does not spend it; the caller spends Solution.Token.
func (i *Issuer) Verify(solution, room, client string) (Solution, error) {
	tok, nonce, ok := strings.Cut(solution, ":")
	if !ok || len(tok) > 200 || len(nonce) == 0 || len(nonce) > 64 {
		return Solution{}, ErrInvalid
	}
	enc, sig, ok := strings.Cut(tok, ".")
	p, err1 := base64.RawURLEncoding.DecodeString(enc)
	s, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || len(p) != payloadLen || p[0] != 1 || !hmac.Equal(s, i.mac(p)) {
		return Solution{}, ErrInvalid
	}
	r, c := sha256.Sum256([]byte(room)), sha256.Sum256([]byte(client))
	exp := time.Unix(int64(binary.BigEndian.Uint64(p[2:])), 0).UTC()
	switch {
	case !hmac.Equal(p[10:26], r[:16]):
		return Solution{}, ErrOtherRoom
	case !hmac.Equal(p[26:42], c[:16]):
		return Solution{}, ErrInvalid
	case !i.now().Before(exp):
		return Solution{}, ErrExpired
	case !Solves(tok, nonce, int(p[1])):
		return Solution{}, ErrUnsolved
	}
	return Solution{Token: tok, ExpiresAt: exp}, nil
}

// Solves reports whether SHA-256(token + ":" + nonce) starts with at least difficulty zero bits.
func Solves(token, nonce string, difficulty int) bool {
	h := sha256.Sum256([]byte(token + ":" + nonce))
	zeros := 0
	for j := 0; j < len(h); j += 8 {
		w := binary.BigEndian.Uint64(h[j:])
		zeros += bits.LeadingZeros64(w)
		if w != 0 {
			break
		}
	}
	return zeros >= difficulty
}
