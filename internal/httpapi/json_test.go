package httpapi

import (
	"cmp"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

func TestStatusJSONMatchesEncoding(t *testing.T) {
	eta := int64(42)
	exp := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, b := range []statusBody{
		{State: room.StateNone},
		{VisitorToken: "v1.v_abc.def", State: room.StateWaiting, Position: 7, ETASeconds: &eta},
		{State: room.StateWaiting, Position: 70, ETASeconds: &eta, ETAUpperBound: true},
		{State: room.StateWaiting, Position: 3, ETASeconds: &eta, Paused: true},
		{State: room.StateWaiting, Position: 4, ETASeconds: &eta, Paused: true, DropClosed: true},
		{State: room.StateWaiting, Position: 5, ETASeconds: &eta, ETAUpperBound: true, OpensAt: &exp},
		{State: room.StateWaiting, Position: 6, ETASeconds: &eta, DropOpensAt: &exp, OpensAt: &exp},
		{State: room.StateAdmitted, AdmissionToken: "a.b.c", ExpiresAt: &exp},
		{State: room.StateSoldOut, Message: "A second <batch> at 18:00 & \"more\"\u2028"},
		{VisitorToken: "odd \"token\"\n\u00e9", State: room.StateWaiting, ETASeconds: new(int64)},
	} {
		want, _ := json.Marshal(b)
		if got := b.appendJSON(nil); string(got) != string(want) {
			t.Errorf("hand-encoded %s, encoding/json %s", got, want)
		}
	}
}

func TestErrorJSONMatchesEncoding(t *testing.T) {
	var bodies []errorBody
	add := func(code, msg string, min int64, room, field string) {
		var b errorBody
		b.Error.Code, b.Error.Message, b.Error.MinNextBid, b.Error.Room, b.Error.Field = code, msg, min, room, field
		bodies = append(bodies, b)
	}
	add(codeBidTooLow, (&auction.TooLowError{Min: 1250}).Error(), 1250, "", "")
	add(codeInternal, "internal error", 0, "", "")
	add(codeWaitingElsewhere, `you are waiting in the line of room r1; join with {"switch": true} to move here`, 0, "r1", "")
	add(codeInvalidConfig, "send Rushgate-Invite: <code> & more", 0, "", "stock")
	add(codeInvalidJSON, "odd \"message\"\n\u00e9\t\\", -3, "é", "a<b")
	for _, b := range bodies {
		want, _ := json.Marshal(b)
		got, ok := b.appendJSON(nil)
		if !ok || string(got) != string(want) {
			t.Errorf("hand-encoded %s (ok %v), encoding/json %s", got, ok, want)
		}
	}
	var withClaims, withChallenge, withRedemption errorBody
	withClaims.Error.Claims = []drop.Claim{{Seq: 1}}
	withChallenge.challengeBody = &challengeBody{Challenge: "c"}
	withRedemption.Error.Redemption = &drop.Redemption{Order: "o"}
	for _, b := range []errorBody{withClaims, withChallenge, withRedemption} {
		if _, ok := b.appendJSON(nil); ok {
			t.Errorf("%+v: hand-encoded, but it needs encoding/json", b)
		}
	}
}

func TestClaimJSONMatchesEncoding(t *testing.T) {
	for _, v := range []claimView{
		{ID: "d1.42", Code: "ABCD-EFGH-IJKL", ClaimedAt: time.Date(2026, 12, 4, 3, 30, 0, 123456789, time.UTC), Seq: 42},
		{ID: "d1.1", Code: "<listed & odd \"code\">", ClaimedAt: time.Date(2026, 12, 4, 12, 0, 0, 0, time.FixedZone("KST", 9*3600))},
		{},
	} {
		want, _ := json.Marshal(v)
		if got := v.appendJSON(nil); string(got) != string(want) {
			t.Errorf("hand-encoded %s, encoding/json %s", got, want)
		}
	}
}

func TestVisitorCookieMatchesNetHTTP(t *testing.T) {
	for _, base := range []string{"", "/rushgate"} {
		for _, secure := range []bool{false, true} {
			want := (&http.Cookie{Name: VisitorCookie, Value: "v1.v_abc234.xyz-_AZ", Path: cmp.Or(base, "/"), HttpOnly: true,
				Secure: secure, SameSite: http.SameSiteLaxMode, MaxAge: 7 * 24 * 3600}).String()
			if got := visitorCookie("v1.v_abc234.xyz-_AZ", base, secure); got != want {
				t.Errorf("base=%q secure=%v: %q, net/http writes %q", base, secure, got, want)
			}
		}
	}
}

// TestEveryCodeIsDocumented: each error code the API answers with is in the README's table of errors,
// which clients switch on; "internal" (500) was not.
func TestEveryCodeIsDocumented(t *testing.T) {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "### Errors")
	table, _, _ = strings.Cut(table, "\n## ")
	codes := regexp.MustCompile(`(?m)^\s+code[A-Z]\w*\s+= "([a-z_]+)"$`).FindAllStringSubmatch(string(src), -1)
	if len(codes) < 30 {
		t.Fatalf("found %d codes in errors.go", len(codes))
	}
	for _, c := range codes {
		if !strings.Contains(table, "`"+c[1]+"`") {
			t.Errorf("%s is not in the README's table of errors", c[1])
		}
	}
}
