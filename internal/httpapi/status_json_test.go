package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

func TestStatusJSONMatchesEncoding(t *testing.T) {
	eta := int64(42)
	exp := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, b := range []statusBody{
		{State: room.StateNone},
		{VisitorToken: "v1.v_abc.def", State: room.StateWaiting, Position: 7, ETASeconds: &eta},
		{State: room.StateAdmitted, AdmissionToken: "a.b.c", ExpiresAt: &exp},
		{VisitorToken: "odd \"token\"\n\u00e9", State: room.StateWaiting, ETASeconds: new(int64)},
	} {
		want, _ := json.Marshal(b)
		if got := b.appendJSON(nil); string(got) != string(want) {
			t.Errorf("hand-encoded %s, encoding/json %s", got, want)
		}
	}
}

func TestVisitorCookieMatchesNetHTTP(t *testing.T) {
	for _, secure := range []bool{false, true} {
		want := (&http.Cookie{Name: VisitorCookie, Value: "v1.v_abc234.xyz-_AZ", Path: "/", HttpOnly: true,
			Secure: secure, SameSite: http.SameSiteLaxMode, MaxAge: 7 * 24 * 3600}).String()
		if got := visitorCookie("v1.v_abc234.xyz-_AZ", secure); got != want {
			t.Errorf("secure=%v: %q, net/http writes %q", secure, got, want)
		}
	}
}
