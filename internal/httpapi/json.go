package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// appendJSON encodes the status body by hand. It is the one response on the hot path of a crowd (join,
// status and every pushed event), and encoding/json's reflection was a tenth of a join's cost; the
// field names and omissions match the struct tags, which TestStatusJSONMatchesEncoding checks.
func (b statusBody) appendJSON(buf []byte) []byte {
	buf = append(buf, '{')
	if b.VisitorToken != "" {
		buf = append(buf, `"visitor_token":`...)
		buf = appendString(buf, b.VisitorToken)
		buf = append(buf, ',')
	}
	buf = append(buf, `"state":`...)
	buf = appendString(buf, string(b.State))
	if b.Position != 0 {
		buf = append(buf, `,"position":`...)
		buf = strconv.AppendInt(buf, b.Position, 10)
	}
	if b.ETASeconds != nil {
		buf = append(buf, `,"eta_seconds":`...)
		buf = strconv.AppendInt(buf, *b.ETASeconds, 10)
	}
	if b.ETAUpperBound {
		buf = append(buf, `,"eta_upper_bound":true`...)
	}
	if b.Paused {
		buf = append(buf, `,"paused":true`...)
	}
	if b.DropClosed {
		buf = append(buf, `,"drop_closed":true`...)
	}
	buf = appendTime(buf, `,"drop_opens_at":"`, b.DropOpensAt)
	buf = appendTime(buf, `,"opens_at":"`, b.OpensAt)
	if b.AdmissionToken != "" {
		buf = append(buf, `,"admission_token":`...)
		buf = appendString(buf, b.AdmissionToken)
	}
	buf = appendTime(buf, `,"expires_at":"`, b.ExpiresAt)
	if b.Message != "" {
		buf = append(buf, `,"message":`...)
		buf = appendString(buf, b.Message)
	}
	return append(buf, '}')
}

// appendTime appends key (a comma, the field's name and the opening quote) and t as encoding/json
// writes a time, or nothing for nil.
func appendTime(buf []byte, key string, t *time.Time) []byte {
	if t == nil {
		return buf
	}
	buf = append(buf, key...)
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"')
}

// appendJSON encodes the error envelope by hand when it carries neither claims nor a challenge, as
// encoding/json would (TestErrorJSONMatchesEncoding): a refusal is the answer to most bids of a hot
// auction (bid_too_low), and reflection over the nested struct was a tenth of such an answer's cost.
// ok is false when the envelope needs the general encoder.
func (b *errorBody) appendJSON(buf []byte) (_ []byte, ok bool) {
	e := &b.Error
	if b.challengeBody != nil || e.Claims != nil || e.Redemption != nil {
		return buf, false
	}
	buf = append(buf, `{"error":{"code":`...)
	buf = appendString(buf, e.Code)
	buf = append(buf, `,"message":`...)
	buf = appendString(buf, e.Message)
	if e.MinNextBid != 0 {
		buf = append(buf, `,"min_next_bid":`...)
		buf = strconv.AppendInt(buf, e.MinNextBid, 10)
	}
	if e.Room != "" {
		buf = append(buf, `,"room":`...)
		buf = appendString(buf, e.Room)
	}
	if e.Field != "" {
		buf = append(buf, `,"field":`...)
		buf = appendString(buf, e.Field)
	}
	return append(buf, "}}"...), true
}

// appendJSON encodes a claim's answer by hand, as encoding/json would (TestClaimJSONMatchesEncoding):
// a crowd's every successful claim sends one, and the time's MarshalJSON, which encoding/json then
// validates, was most of its cost.
func (c claimView) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"claim_id":`...)
	buf = appendString(buf, c.ID)
	buf = append(buf, `,"code":`...)
	buf = appendString(buf, c.Code)
	buf = append(buf, `,"claimed_at":"`...)
	buf = c.ClaimedAt.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","seq":`...)
	buf = strconv.AppendInt(buf, c.Seq, 10)
	return append(buf, '}')
}

// appendString appends s as a JSON string. Tokens, states and messages are mostly printable ASCII
// without quotes, backslashes or the characters encoding/json escapes for HTML; anything else takes
// the general encoder's path.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// Header values shared by every JSON response. net/http only reads them, and a handler that adds a
// value gets a new slice from append, since each has no spare capacity.
var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
	// sharedBriefly marks an answer that is the same for every visitor and may be a second old: a
	// cache in front (a CDN) may then answer a crowd's polls of it.
	sharedBriefly = []string{"public, max-age=1"}
)

// writeJSONHeader sends the status line and the headers every JSON answer carries; it keeps a
// Cache-Control the handler set (sharedBriefly), and otherwise says no-store.
func writeJSONHeader(w http.ResponseWriter, status int) {
	h := w.Header()
	h["Content-Type"] = jsonType
	if _, ok := h["Cache-Control"]; !ok || status != http.StatusOK {
		h["Cache-Control"] = noStore
	}
	w.WriteHeader(status)
}

// statusBufs recycles the buffers hand-encoded bodies are written from.
var statusBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func writeStatus(w http.ResponseWriter, status int, b statusBody) {
	bp := statusBufs.Get().(*[]byte)
	*bp = b.appendJSON((*bp)[:0])
	writeEncoded(w, status, bp)
}

// writeEncoded sends a hand-encoded JSON body, adding the newline encoding/json ends with, and gives
// its buffer back to statusBufs.
func writeEncoded(w http.ResponseWriter, status int, bp *[]byte) {
	writeJSONHeader(w, status)
	*bp = append(*bp, '\n')
	_, _ = w.Write(*bp)
	statusBufs.Put(bp)
}

// jsonEncoder is an encoder with the buffer it writes to, recycled by writeJSON: every answer not
// encoded by hand above passes through it, and a new encoder per answer was a tenth of the
// allocations of a bid.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

func writeJSON(w http.ResponseWriter, status int, v any) {
	e := jsonEncoders.Get().(*jsonEncoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	writeJSONHeader(w, status)
	if err == nil {
		_, _ = w.Write(e.buf.Bytes())
	}
	if e.buf.Cap() <= 64<<10 { // a page of a long list is not kept for the next small answer
		jsonEncoders.Put(e)
	}
}
