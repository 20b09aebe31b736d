package rushgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

// TestDecodeObject: one object, no unknown field, nothing after it; the room, drop and auction configs
// once decoded with three copies that drifted (two took a trailing "}" or a second object), and request
// bodies took a trailing "}", a repeated name and null.
func TestDecodeObject(t *testing.T) {
	type cfg struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	var c cfg
	if err := rushgate.DecodeObject([]byte(` {"a": 1, "b": "x"} `), &c); err != nil || c.A != 1 || c.B != "x" {
		t.Fatalf("%+v %v", c, err)
	}
	for in, want := range map[string]string{
		`{"a": 1}}`:        "after the JSON object",
		`{"a": 1} {}`:      "after the JSON object",
		`{"a": 1} x`:       "after the JSON object",
		`{"a": 1, "c":1}`:  "unknown field",
		`{"a": "1"}`:       `a: must be a whole number`,
		`{"a": 1`:          "ends inside",
		``:                 "empty body",
		`[1]`:              "must be a JSON object",
		`null`:             "must be a JSON object",
		` "x"`:             "must be a JSON object",
		`7`:                "must be a JSON object",
		`{"a": 1,}`:        "malformed JSON",
		`{"a": 1, "a": 2}`: `a: is given twice`,
		`{"a": 1.5}`:       `a: must be a whole number`,
		`{"b": 1}`:         `b: must be a string`,
	} {
		var c cfg
		err := rushgate.DecodeObject([]byte(in), &c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

// TestDecodeObjectRepeatedName: a name given twice in one object, at any depth, is refused with its
// path (encoding/json would keep the second value silently), also when the two differ in case or are
// spelt with escapes, as encoding/json matches them to one field; the same name in different objects,
// or inside a string, is not.
func TestDecodeObjectRepeatedName(t *testing.T) {
	type step struct {
		From int `json:"from"`
		Step int `json:"step"`
	}
	type cfg struct {
		A     int            `json:"a"`
		Rate  map[string]int `json:"rate"`
		Steps []step         `json:"steps"`
		Page  struct {
			Title string `json:"title"`
			Inner struct {
				X int `json:"x"`
			} `json:"inner"`
		} `json:"page"`
	}
	for in, want := range map[string]string{
		`{"a": 1, "rate": {"n": 1}, "a": 2}`:                          "a",
		`{"rate": {"n": 1, "n": 2}}`:                                  "rate.n",
		`{"steps": [{"from": 0, "step": 5}, {"from": 1, "from": 2}]}`: "steps.from",
		`{"page": {"inner": {"x": 1}, "title": "t", "title": "u"}}`:   "page.title",
		`{"page": {"inner": {"x": 1, "x": 2}}}`:                       "page.inner.x",
		`{"steps": [], "rate": {}, "steps": []}`:                      "steps",
		`{"a": 1, "A": 2}`:                                            "A",
		`{"page": {"Title": "t", "title": "u"}}`:                      "page.title",
		`{"rate": {"\u212a": 1, "k": 2}}`:                             "rate.k",
		`{"a": 1, "\u0061": 2}`:                                       "a",
		`{"rate": {"n0": 0, "n1": 1, "n2": 2, "n3": 3, "n4": 4, "n5": 5, "n6": 6, "n7": 7, "n8": 8, "n9": 9, "N3": 3}}`: "rate.N3",
		`{"page": {"title": "{\"a\": 1, \"a\": 2}"}, "rate": {"x\"y": 1, "x\"Y": 2}}`:                                   "rate.x\"Y",
	} {
		var c cfg
		err := rushgate.DecodeObject([]byte(in), &c)
		de, _ := errors.AsType[*rushgate.DecodeError](err)
		if de == nil || de.Field != want || de.Reason != "is given twice" {
			t.Errorf("%s: %v (%+v), want field %q given twice", in, err, de, want)
		}
	}
	for _, in := range []string{
		`{"a": 1, "rate": {"a": 1, "n": 2}, "page": {"title": "a", "inner": {"x": 1}}}`,
		`{"steps": [{"from": 0, "step": 5}, {"from": 1, "step": 10}], "a": 3}`,
		`{"rate": {"a": 1}, "page": {"inner": {"x": 1}, "title": "x"}}`,
		`{"page": {"title": "{\"a\": 1, \"a\": 2}"}, "rate": {"a\\": 1, "a": 2}}`,
		`{"rate": {"n0": 0, "n1": 1, "n2": 2, "n3": 3, "n4": 4, "n5": 5, "n6": 6, "n7": 7, "n8": 8, "n9": 9, "n10": 10}}`,
	} {
		var c cfg
		if err := rushgate.DecodeObject([]byte(in), &c); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"sale": true, "A-b_9": true, "": false, strings.Repeat("a", 65): false, "a b": false, "a.b": false, "é": false} {
		if got := rushgate.ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v", id, got)
		}
	}
}

// TestConfigsRun: a cached config is used without a read; a stale one is read again; a store that keeps
// finding it stale ends in ErrUnavailable after a bounded number of reads, not a loop.
func TestConfigsRun(t *testing.T) {
	var c rushgate.Configs[string]
	reads := 0
	read := func() (string, string, error) { reads++; return "cfg", fmt.Sprint("r", reads), nil }
	ok := func(string, string) error { return nil }
	for range 3 {
		if err := c.Run("x", read, ok); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Fatalf("%d reads for three steps, want 1", reads)
	}
	var revs []string
	err := c.Run("x", read, func(_, rev string) error {
		revs = append(revs, rev)
		if rev == "r3" {
			return nil
		}
		return rushgate.ErrStale
	})
	if err != nil || !slices.Equal(revs, []string{"r1", "r2", "r3"}) {
		t.Fatalf("stale twice: %v, revisions tried %v", err, revs)
	}
	err = c.Run("x", read, func(string, string) error { return rushgate.ErrStale })
	if !errors.Is(err, rushgate.ErrUnavailable) || reads != 5 { // the cached r3, then r4 and r5
		t.Fatalf("always stale: %v after %d reads", err, reads)
	}
	if err := c.Run("y", func() (string, string, error) { return "", "", rushgate.ErrUnavailable }, ok); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("failed read: %v", err)
	}
	for i := range 5000 {
		c.Put(fmt.Sprint(i), "r", "cfg")
	}
	if _, _, ok := c.Get("4999"); !ok {
		t.Fatal("the newest entry was not kept")
	}
}

// flakyAudit fails its first fails appends, then keeps entries.
type flakyAudit struct {
	fails   int
	tries   int
	entries []rushgate.Entry
}

func (a *flakyAudit) Append(_ context.Context, e rushgate.Entry) error {
	if a.tries++; a.tries <= a.fails {
		return errors.New("store blipped")
	}
	a.entries = append(a.entries, e)
	return nil
}

func (a *flakyAudit) Entries(context.Context, rushgate.AuditFilter, int) ([]rushgate.Entry, error) {
	return a.entries, nil
}

// TestAuditedTriesAgain: an append that fails is tried again, so a store that blips still gets the
// entry, once. One that keeps failing leaves the whole entry in the log instead, changes included.
func TestAuditedTriesAgain(t *testing.T) {
	e := rushgate.Entry{Kind: "drop", ID: "d", Action: rushgate.ActionUpdate,
		Changes: []rushgate.Change{{Field: "stock", Old: json.RawMessage("5"), New: json.RawMessage("7")}}}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	blip := &flakyAudit{fails: 2}
	rushgate.Audited(context.Background(), blip, log, e)
	if len(blip.entries) != 1 || blip.tries != 3 || logs.Len() != 0 {
		t.Fatalf("after two failures: %d entries in %d tries, log %q; want the entry once, nothing logged", len(blip.entries), blip.tries, logs.String())
	}

	down := &flakyAudit{fails: 100}
	rushgate.Audited(context.Background(), down, log, e)
	if len(down.entries) != 0 || down.tries != 4 {
		t.Fatalf("a failing audit log: %d entries in %d tries; want none in 4", len(down.entries), down.tries)
	}
	if out := logs.String(); !strings.Contains(out, "cannot record a change") || !strings.Contains(out, "changes=") || !strings.Contains(out, "stock") {
		t.Fatalf("the log of the lost entry lacks its changes: %s", out)
	}
}

// TestAuditedSkipsNoChange: a config put again as it was is no entry, while a create or a delete
// without fields still is one.
func TestAuditedSkipsNoChange(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := &flakyAudit{}
	rushgate.Audited(context.Background(), a, log, rushgate.Entry{Kind: "room", ID: "r", Action: rushgate.ActionUpdate,
		Changes: rushgate.Diff(map[string]int{"capacity": 5}, map[string]int{"capacity": 5})})
	if len(a.entries) != 0 {
		t.Fatalf("an update that changed nothing was audited: %+v", a.entries)
	}
	rushgate.Audited(context.Background(), a, log, rushgate.Entry{Kind: "drop", ID: "d", Action: rushgate.ActionOpen})
	rushgate.Audited(context.Background(), a, log, rushgate.Entry{Kind: "room", ID: "r", Action: rushgate.ActionUpdate,
		Changes: rushgate.Diff(map[string]int{"capacity": 5}, map[string]int{"capacity": 6})})
	if len(a.entries) != 2 || a.entries[0].Action != rushgate.ActionOpen || len(a.entries[1].Changes) != 1 {
		t.Fatalf("entries %+v; want the open and the change of capacity", a.entries)
	}
}

// TestDecodeObjectNamesTheField: a value refused by its type's own UnmarshalJSON (a time, a duration,
// at any depth) names its field, as a wrong type does, so that the console can show the refusal by
// the field; before, a time said only "parsing time ... as 2006-01-02T15:04:05Z07:00" and no field.
func TestDecodeObjectNamesTheField(t *testing.T) {
	type cfg struct {
		At   time.Time         `json:"at"`
		TTL  rushgate.Duration `json:"ttl"`
		Rate struct {
			Per rushgate.Duration `json:"per"`
		} `json:"rate"`
		N int `json:"n"`
	}
	for in, want := range map[string][2]string{
		`{"n": 1, "at": "tomorrow"}`:        {"at", `must be an RFC 3339 time such as "2026-12-24T18:00:00Z"`},
		`{"at": 5}`:                         {"at", `must be an RFC 3339 time such as "2026-12-24T18:00:00Z"`},
		`{"ttl": "soon"}`:                   {"ttl", `must be a duration such as "90s" or "10m"`},
		`{"ttl": 90}`:                       {"ttl", `must be a duration such as "90s" or "10m"`},
		`{"rate": {"per": "x"}, "n": 1}`:    {"rate.per", `must be a duration such as "90s" or "10m"`},
		`{"n": "1"}`:                        {"n", "must be a whole number"},
		`{"rate": 1}`:                       {"rate", "must be an object"},
		`{"at": "2026-12-24T18:00:00Z"} {}`: {"", "unexpected data after the JSON object"},
	} {
		var c cfg
		de, _ := errors.AsType[*rushgate.DecodeError](rushgate.DecodeObject([]byte(in), &c))
		if de == nil || de.Field != want[0] || de.Reason != want[1] {
			t.Errorf("%s: %+v, want field %q: %q", in, de, want[0], want[1])
		}
	}
}

// TestLogActors: a line logged for an operator's request says by whom, through loggers derived with
// attributes and groups too; one logged without an actor says nothing of one.
func TestLogActors(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(rushgate.LogActors(slog.NewTextHandler(&buf, nil)))
	as := rushgate.WithActor(context.Background(), "mina")
	log.InfoContext(as, "room saved", "room", "sale")
	log.With("component", "drops").InfoContext(as, "drop saved")
	log.WithGroup("g").InfoContext(as, "grouped", "k", "v")
	log.InfoContext(context.Background(), "on its own")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, want := range []string{`msg="room saved" room=sale by=mina`, `msg="drop saved" component=drops by=mina`, `msg=grouped g.k=v g.by=mina`,
		`msg="on its own"`} {
		if i >= len(lines) || !strings.HasSuffix(lines[i], want) {
			t.Fatalf("line %d: %q, want it to end %s", i, lines, want)
		}
	}
}
