package httpapi

import (
	"encoding/json"
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
