package visitor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func issuer(t testing.TB, b byte) *Issuer {
	is, err := NewIssuer(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func TestRoundTrip(t *testing.T) {
	is := issuer(t, 1)
	tok, id := is.New()
	got, err := is.Parse(tok)
	if err != nil || got != id {
		t.Fatalf("Parse = %q, %v; want %q", got, err, id)
	}
	if _, id2 := is.New(); id2 == id {
		t.Fatal("two anonymous visitors share an id")
	}
}

func TestSubjectIsStable(t *testing.T) {
	is := issuer(t, 1)
	t1, id1 := is.ForSubject("user-123")
	_, id2 := is.ForSubject("user-123")
	_, other := is.ForSubject("user-124")
	if id1 != id2 || id1 == other {
		t.Fatalf("ids: %s %s %s", id1, id2, other)
	}
	if _, id3 := issuer(t, 2).ForSubject("user-123"); id3 == id1 {
		t.Fatal("subject ids must depend on the secret, or anyone could compute them")
	}
	if got, err := is.Parse(t1); err != nil || got != id1 {
		t.Fatal(got, err)
	}
}

func TestRejects(t *testing.T) {
	is := issuer(t, 1)
	tok, id := is.New()
	forged, _ := issuer(t, 2).New()
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	for name, bad := range map[string]string{
		"empty":        "",
		"other secret": forged,
		"renamed":      "v1.v_aaaaaaaaaaaaaaaaaaaaaaaaaa." + sig,
		"version":      "v2" + tok[2:],
		"truncated":    tok[:len(tok)-2],
		"no sig":       "v1." + id,
		"long":         tok + strings.Repeat("A", MaxTokenLen),
	} {
		if _, err := is.Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewIssuer([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}

// signed is the token an issuer keyed with 32 bytes of b makes for id, computed from the format's
// definition rather than by the issuer, as the oracle the issuer is checked against.
func signed(b byte, id string) string {
	m := hmac.New(sha256.New, bytes.Repeat([]byte{b}, 32))
	m.Write([]byte(tokenVersion + "." + id))
	return tokenVersion + "." + id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestTokenFormat(t *testing.T) {
	is := issuer(t, 3)
	tok, id := is.New()
	if tok != signed(3, id) || len(id) != 28 {
		t.Fatalf("New = %q, %q; want %q", tok, id, signed(3, id))
	}
	tok, id = is.ForSubject("user-1")
	if tok != signed(3, id) {
		t.Fatalf("ForSubject = %q, %q; want %q", tok, id, signed(3, id))
	}
}

func FuzzParse(f *testing.F) {
	is := issuer(f, 1)
	tok, _ := is.New()
	f.Add(tok)
	f.Add("v1.s_abc.def")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := is.Parse(s)
		if err != nil {
			return
		}
		if !validID(id) || signed(1, id) != s {
			t.Fatalf("accepted %q as %q, which this issuer never signed", s, id)
		}
	})
}
