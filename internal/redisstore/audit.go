package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/rushgate/rushgate"
)

// auditKeep is about how many entries the audit stream keeps: years of an operator's changes.
const auditKeep = 100_000

// Audit keeps operators' changes in one stream shared by every instance; an entry's cursor is its
// stream ID.
type Audit struct{ *conn }

// Append implements [rushgate.Audit].
func (a Audit) Append(ctx context.Context, e rushgate.Entry) error {
	e.Cursor = ""
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = a.do(ctx, a.rdb.B().Xadd().Key(a.keys.audit()).Maxlen().Almost().Threshold(itoa(auditKeep)).Id("*").
		FieldValue().FieldValue("e", string(b)).Build())
	return err
}

// Entries implements [rushgate.Audit]. Entries of one entity, or one operator, are found by reading
// the stream back a page at a time, at most auditScan entries, which an admin page can afford.
func (a Audit) Entries(ctx context.Context, f rushgate.AuditFilter, limit int) ([]rushgate.Entry, error) {
	const page, auditScan = 500, 20_000
	out := []rushgate.Entry{}
	end := "+"
	if f.Before != "" {
		if !afterFirstID(f.Before) {
			return out, nil // no entry has such a cursor, or none is before it
		}
		end = "(" + f.Before
	}
	for scanned := 0; len(out) < limit && scanned < auditScan; scanned += page {
		m, err := a.do(ctx, a.rdb.B().Xrevrange().Key(a.keys.audit()).End(end).Start("-").Count(page).Build())
		if err != nil {
			return nil, err
		}
		rows, _ := m.AsXRange()
		for _, row := range rows {
			var e rushgate.Entry
			if json.Unmarshal([]byte(row.FieldValues["e"]), &e) != nil {
				continue
			}
			e.Cursor = row.ID
			if (f.Kind == "" || e.Kind == f.Kind) && (f.ID == "" || e.ID == f.ID) && (f.By == "" || e.By == f.By) && len(out) < limit {
				out = append(out, e)
			}
		}
		if len(rows) < page {
			break
		}
		end = "(" + rows[len(rows)-1].ID
	}
	return out, nil
}

// afterFirstID reports whether id is a stream ID, "ms" or "ms-seq" in decimal, above the stream's
// lowest, 0-0: the cursors Entries hands out are, and Redis refuses anything else as the end of a
// range, which a mistyped URL's cursor must not turn into the store's failure.
func afterFirstID(id string) bool {
	ms, seq, hasSeq := strings.Cut(id, "-")
	for _, part := range []string{ms, seq} {
		if strings.TrimLeft(part, "0123456789") != "" {
			return false
		}
	}
	m, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return false
	}
	if !hasSeq {
		return true
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return err == nil && (m > 0 || n > 0)
}
