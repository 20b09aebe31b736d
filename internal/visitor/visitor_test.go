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
	tok, id := is.New("sale")
	got, err := is.Parse(tok)
	if want := (Visitor{ID: id, Origin: "sale"}); err != nil || got != want {
		t.Fatalf("Parse = %+v, %v; want %+v", got, err, want)
	}
	if _, id2 := is.New("sale"); id2 == id {
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
	if got, err := is.Parse(t1); err != nil || got != (Visitor{ID: id1}) {
		t.Fatal(got, err)
	}
}

// TestPlainTokensStayValid checks that the v1 tokens anonymous visitors were given before tokens named
// their origin (and that still sit in their cookies) are read, with no origin.
func TestPlainTokensStayValid(t *testing.T) {
	const id = "v_abcdefghijklmnopqrstuvwxyz"
	got, err := issuer(t, 1).Parse(signed(1, id, ""))
	if err != nil || got != (Visitor{ID: id}) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
}

func TestRejects(t *testing.T) {
	is := issuer(t, 1)
	tok, id := is.New("sale")
	plain, _ := is.ForSubject("user-1")
	forged, _ := issuer(t, 2).New("sale")
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	for name, bad := range map[string]string{
		"empty":          "",
		"other secret":   forged,
		"renamed":        "v2.v_aaaaaaaaaaaaaaaaaaaaaaaaaa.sale." + sig,
		"other origin":   "v2." + id + ".sold." + sig,
		"origin dropped": "v1." + id + "." + sig,
		"origin added":   "v2" + plain[2:strings.LastIndexByte(plain, '.')] + ".sale" + plain[strings.LastIndexByte(plain, '.'):],
		"bad origin":     signed(1, id, "a.b"),
		"version":        "v3" + tok[2:],
		"truncated":      tok[:len(tok)-2],
		"no sig":         "v2." + id + ".sale",
		"long":           tok + strings.Repeat("A", MaxTokenLen),
	} {
		if _, err := is.Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewIssuer([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}

// signed is the token an issuer keyed with 32 bytes of b makes for id and origin, computed from the
// format's definition rather than by the issuer, as the oracle the issuer is checked against.
func signed(b byte, id, origin string) string {
	text := "v1." + id
	if origin != "" {
		text = "v2." + id + "." + origin
	}
	m := hmac.New(sha256.New, bytes.Repeat([]byte{b}, 32))
	m.Write([]byte(text))
	return text + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestTokenFormat(t *testing.T) {
	is := issuer(t, 3)
	origin := strings.Repeat("R", 64) // the longest room id
	tok, id := is.New(origin)
	if tok != signed(3, id, origin) || len(id) != 28 {
		t.Fatalf("New = %q, %q; want %q", tok, id, signed(3, id, origin))
	}
	tok, id = is.ForSubject("user-1")
	if tok != signed(3, id, "") {
		t.Fatalf("ForSubject = %q, %q; want %q", tok, id, signed(3, id, ""))
	}
}

func FuzzParse(f *testing.F) {
	is := issuer(f, 1)
	tok, _ := is.New("sale")
	subject, _ := is.ForSubject("user-1")
	f.Add(tok)
	f.Add(subject)
	f.Add("v1.s_abc.def")
	f.Add("v2.v_abc.room.def")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := is.Parse(s)
		if err != nil {
			return
		}
		if !validID(v.ID) || signed(1, v.ID, v.Origin) != s {
			t.Fatalf("accepted %q as %+v, which this issuer never signed", s, v)
		}
	})
}
