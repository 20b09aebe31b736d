package rushgate

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"
)

// Change is one field of a config an operator changed, with its JSON before and after (null when the
// field was absent).
type Change struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// Entry is one operator action in the audit log: what changed on which room, drop or auction, and when.
type Entry struct {
	// Cursor orders entries in their log; pass it as before to read older ones.
	Cursor string    `json:"cursor"`
	At     time.Time `json:"at"`
	// Kind is "room", "drop", "auction" or "operator" (an operator's key made or taken back).
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Action is one of [Actions].
	Action  string   `json:"action"`
	Changes []Change `json:"changes"`
	// By names who made the change: [Owner] for the admin key, an operator's name, or "" for rushgate
	// itself (a restore from the record) and for entries older than operators. [Audited] takes it from
	// the request's context.
	By string `json:"by"`
}

// Owner is the name the audit log gives the holder of the admin key; no operator may take it.
const Owner = "admin"

// actorKey is the context key of the name a request acts under.
type actorKey struct{}

// WithActor returns ctx carrying the name of who makes its request's changes, for the audit log: the
// transport knows who signed in, the domain services that append entries do not.
func WithActor(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, actorKey{}, name)
}

// ActorOf returns the name WithActor put in ctx, or "".
func ActorOf(ctx context.Context) string {
	name, _ := ctx.Value(actorKey{}).(string)
	return name
}

// LogActors wraps h so that a record logged with a context that names an actor says "by" whom: the
// log lines of a change (a room saved, a drop deleted) then name who made it, as its audit entry does.
func LogActors(h slog.Handler) slog.Handler { return actorHandler{h} }

type actorHandler struct{ slog.Handler }

func (h actorHandler) Handle(ctx context.Context, r slog.Record) error {
	if name := ActorOf(ctx); name != "" {
		r.AddAttrs(slog.String("by", name))
	}
	return h.Handler.Handle(ctx, r)
}

func (h actorHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return actorHandler{h.Handler.WithAttrs(attrs)}
}

func (h actorHandler) WithGroup(name string) slog.Handler {
	return actorHandler{h.Handler.WithGroup(name)}
}

// The actions an [Entry] records. They are part of the audit API, and the console labels each.
const (
	ActionCreate  = "create"
	ActionUpdate  = "update"
	ActionDelete  = "delete"
	ActionOpen    = "open"    // a drop opened now by an operator
	ActionClose   = "close"   // a drop closed now
	ActionEnd     = "end"     // an auction ended now
	ActionExtend  = "extend"  // an auction's end moved later
	ActionInvites = "invites" // invite codes added to a room
	ActionRestore = "restore" // a drop or an auction put back from the SQL record after the state store lost it
)

// Actions lists every action an [Entry] may record.
var Actions = []string{ActionCreate, ActionUpdate, ActionDelete, ActionOpen, ActionClose, ActionEnd, ActionExtend,
	ActionInvites, ActionRestore}

// Audit keeps operators' changes so that, after an on-sale, anyone can tell who paused what when. On a
// shared backend it is shared by every instance.
type Audit interface {
	// Append adds an entry; the store sets its Cursor.
	Append(ctx context.Context, e Entry) error
	// Entries returns up to limit entries that f selects, newest first.
	Entries(ctx context.Context, f AuditFilter, limit int) ([]Entry, error)
}

// AuditFilter selects entries of an audit log; its zero value selects them all, the newest first.
type AuditFilter struct {
	// Kind and ID, when set, keep the entries of one kind, or of one entity.
	Kind, ID string
	// By, when set, keeps the changes one operator made (Owner for the admin key's).
	By string
	// Before, when set, is the cursor of an entry of an earlier page: only older entries follow.
	Before string
}

// Diff lists the top-level fields whose JSON differs between two configs, in field order; old or new
// may be nil (a creation, a deletion).
func Diff(old, new any) []Change {
	a, b := fields(old), fields(new)
	var names []string
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	changes := []Change{}
	for _, k := range names {
		o, n := a[k], b[k]
		if bytes.Equal(o, n) {
			continue
		}
		if o == nil {
			o = json.RawMessage("null")
		}
		if n == nil {
			n = json.RawMessage("null")
		}
		changes = append(changes, Change{Field: k, Old: o, New: n})
	}
	return changes
}

// fields returns v's JSON object fields, compacted so that spacing is no change.
func fields(v any) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if v == nil {
		return m
	}
	b, err := json.Marshal(v)
	if err != nil {
		return m
	}
	_ = json.Unmarshal(b, &m)
	for k, raw := range m {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			m[k] = buf.Bytes()
		}
	}
	return m
}

// auditRetries are the pauses before Audited tries an append again: a store that blips (a failover, a
// write refused for a moment) still gets the entry, and the change's request waits at most their sum.
var auditRetries = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}

// Audited appends the entry of a change that has happened to a, when there is an audit log, trying
// again after each of auditRetries. A failure is logged, not returned: the change stands, and its
// caller must not be told it failed. The log line then carries the whole entry, changes included, so
// that the operator's logs keep what the audit log could not. An update that changed no field (a
// config put again as it was, as a deploy script does) is not an entry: the log answers who changed
// what, and a screen of such entries would hide the changes.
func Audited(ctx context.Context, a Audit, log *slog.Logger, e Entry) {
	if a == nil || e.Action == ActionUpdate && len(e.Changes) == 0 {
		return
	}
	if e.Changes == nil {
		e.Changes = []Change{}
	}
	if e.By == "" {
		e.By = ActorOf(ctx)
	}
	ctx = context.WithoutCancel(ctx)
	err := a.Append(ctx, e)
	for _, pause := range auditRetries {
		if err == nil {
			return
		}
		time.Sleep(pause)
		err = a.Append(ctx, e)
	}
	if err != nil {
		changes, _ := json.Marshal(e.Changes)
		log.Error("audit: cannot record a change", "kind", e.Kind, "id", e.ID, "action", e.Action, "at", e.At, "by", e.By,
			"changes", json.RawMessage(changes), "err", err)
	}
}
