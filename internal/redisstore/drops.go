package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
)

var _ drop.Store = (*Drops)(nil)

// dropScript is a script that writes a drop's config, with the helpers it shares (lua/drop_lib.lua).
func dropScript(name string) *rueidis.Lua {
	return rueidis.NewLuaScript(source("drop_lib") + "\n" + mustSource(name))
}

var (
	dropPutScript   = dropScript("drop_put")
	dropClaimScript = newReplicated(source("drop_claim"))
	dropDelScript   = rueidis.NewLuaScript(source("drop_delete"))
	dropAmendScript = dropScript("drop_amend")
	dropOverScript  = rueidis.NewLuaScript(source("drop_over"))
	dropRestScript  = dropScript("drop_restore")
)

// Drops is the Redis implementation of [drop.Store]: each claim is one script over the drop's
// hash-tagged keys, and the script appends the claim to the drop's stream, which is both the claims'
// log and the outbox that the record consumers copy into SQL.
type Drops struct {
	*conn
	claims *batcher[revision, claimReq, claimed] // by drop and config revision
}

// revision names an entity's config at one revision: requests checked against different revisions
// never share a batch, whose script checks one.
type revision struct{ id, rev string }

// claimReq is one claim in a batch, claimed its answer.
type (
	claimReq struct{ visitor, key, code string }
	claimed  struct {
		claim   drop.Claim
		created bool
		err     error
	}
)

func newDrops(c *conn) *Drops {
	d := &Drops{conn: c}
	d.claims = newBatcher(c.timeout+c.replicaWait, d.sendClaims)
	return d
}

// Put implements [drop.Store].
func (d *Drops) Put(ctx context.Context, id string, cfg drop.Config) error {
	args, err := configArgs(cfg)
	if err != nil {
		return err
	}
	return d.made(ctx, d.keys.drops(), "drops", id, func() error {
		return d.runCode(ctx, dropPutScript, d.keys.drop(id), &dropErrors, args...)
	})
}

// configArgs are the arguments lua/drop_put.lua and lua/drop_restore.lua take for a config: stock,
// per visitor, opens_at and closes_at (ms, 0: never), the config as JSON, a new revision, then the
// codes to hand out in order. The JSON leaves the codes out: they are in the codes list, and Get reads
// the JSON for every poll of the drop.
func configArgs(cfg drop.Config) ([]string, error) {
	bare := cfg
	bare.Codes = nil
	js, err := json.Marshal(bare)
	if err != nil {
		return nil, err
	}
	var closes int64
	if cfg.ClosesAt != nil {
		closes = cfg.ClosesAt.UnixMilli()
	}
	return append([]string{itoa(int64(cfg.Stock)), itoa(int64(cfg.PerVisitor)), itoa(cfg.OpensAt.UnixMilli()), itoa(closes),
		string(js), rushgate.NewRevision()}, cfg.Codes...), nil
}

// Restore implements [drop.Store]. The claims go in pieces, then a last call creates the drop if all
// of them are there (see lua/drop_restore.lua).
func (d *Drops) Restore(ctx context.Context, id string, cfg drop.Config, claims []drop.Claim) error {
	if err := drop.Numbered(claims); err != nil {
		return err
	}
	args, err := configArgs(cfg)
	if err != nil {
		return err
	}
	last := append([]string{itoa(int64(len(claims)))}, args...)
	keys := append(d.keys.drop(id), d.keys.restoring("drop:"+id))
	return d.made(ctx, d.keys.drops(), "drops", id, func() error {
		err := restoreInPieces(ctx, d.conn, dropRestScript, keys, &dropErrors, len(claims), func(i int) []string {
			c := claims[i]
			return []string{itoa(c.Seq), c.ID, c.Code, c.Visitor, itoa(c.ClaimedAt.UnixMilli()), c.Key}
		}, last)
		if err != nil {
			return fmt.Errorf("drop %s: %w", id, err)
		}
		return nil
	})
}

// Delete implements [drop.Store]: the script removes the drop, then it leaves the recorders' registry.
func (d *Drops) Delete(ctx context.Context, id string) error {
	if err := d.runCode(ctx, dropDelScript, d.keys.drop(id), &dropErrors); err != nil {
		return err
	}
	if _, err := d.do(ctx, d.rdb.B().Srem().Key(d.keys.drops()).Member(id).Build()); err != nil {
		return err
	}
	return d.catalogue(ctx, "drops", id, false)
}

// Amend implements [drop.Store].
// The config is read first and what may change replaced; the script keeps the result only if the
// config is still of that revision, so that nothing else changes.
func (d *Drops) Amend(ctx context.Context, id, rev string, cfg drop.Config) error {
	info, err := d.Get(ctx, id)
	if err != nil {
		return err
	}
	if info.Rev != rev {
		return rushgate.ErrStale
	}
	c := info.Config
	c.Title, c.Message, c.Stock, c.PerVisitor, c.OpensAt, c.ClosesAt = cfg.Title, cfg.Message, cfg.Stock, cfg.PerVisitor, cfg.OpensAt, cfg.ClosesAt
	js, err := json.Marshal(c)
	if err != nil {
		return err
	}
	var closes int64
	if c.ClosesAt != nil {
		closes = c.ClosesAt.UnixMilli()
	}
	// A drop reopened or restocked after the recorders retired it takes claims again: they must poll
	// it again, before its first claim can come.
	return d.made(ctx, d.keys.drops(), "drops", id, func() error {
		return d.runCode(ctx, dropAmendScript, d.keys.drop(id)[:1], &amendErrors, rev, itoa(int64(c.Stock)),
			itoa(c.OpensAt.UnixMilli()), itoa(closes), string(js), rushgate.NewRevision(), itoa(int64(c.PerVisitor)))
	})
}

// Get implements [drop.Store].
func (d *Drops) Get(ctx context.Context, id string) (drop.Info, error) {
	m, err := d.do(ctx, d.rdb.B().Hmget().Key(d.keys.drop(id)[0]).Field("cfg", "claimed", "rev", "listed", "written").Build())
	if err != nil {
		return drop.Info{}, err
	}
	f, _ := m.ToArray()
	js, err := f[0].ToString()
	if err != nil {
		return drop.Info{}, drop.ErrNotFound
	}
	var info drop.Info
	if err := json.Unmarshal([]byte(js), &info.Config); err != nil {
		return info, err
	}
	n, _ := f[1].ToString()
	info.Claimed, _ = strconv.Atoi(n)
	info.Rev, _ = f[2].ToString()
	n, _ = f[3].ToString()
	info.Listed, _ = strconv.Atoi(n)
	n, _ = f[4].ToString()
	// 0 for a drop last written by a version before the field: any later write is past it.
	info.Written, _ = strconv.ParseInt(n, 10, 64)
	info.Config.Codes = nil // kept in the JSON by versions before 2026-12-05
	return info, nil
}

// Codes implements [drop.Store]: the codes list, which claims read by index and never shorten.
func (d *Drops) Codes(ctx context.Context, id string) ([]string, error) {
	k := d.keys.drop(id)
	if _, err := d.do(ctx, d.rdb.B().Hget().Key(k[0]).Field("rev").Build()); errors.Is(err, errNil) {
		return nil, drop.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	m, err := d.do(ctx, d.rdb.B().Lrange().Key(k[4]).Start(0).Stop(-1).Build())
	if err != nil {
		return nil, err
	}
	codes, _ := m.AsStrSlice()
	if len(codes) == 0 {
		return nil, nil
	}
	return codes, nil
}

// Claim implements [drop.Store]. Concurrent claims on one drop share a script call (see batch.go).
func (d *Drops) Claim(ctx context.Context, id, rev, visitor, key string) (drop.Claim, bool, error) {
	r, err := d.claims.do(ctx, revision{id, rev}, claimReq{visitor: visitor, key: key, code: drop.NewCode()})
	if err != nil {
		return drop.Claim{}, false, err
	}
	return r.claim, r.created, r.err
}

// sendClaims runs one batch of claims through the claim script.
func (d *Drops) sendClaims(ctx context.Context, r revision, batch []claimReq) ([]claimed, error) {
	args := make([]string, 3, 3+3*len(batch))
	args[0], args[1], args[2] = d.now(), r.id, r.rev
	for _, c := range batch {
		args = append(args, c.visitor, c.key, c.code)
	}
	v, err := d.runConfirmed(ctx, dropClaimScript, d.keys.drop(r.id), args...)
	if err != nil && !errors.Is(err, rushgate.ErrUnconfirmed) {
		return nil, err
	}
	answers, _ := v.ToArray()
	if len(answers) == 1 && answers[0].IsInt64() { // the batch was refused as a whole
		return nil, dropErrors.err(integer(answers[0]))
	}
	if err != nil { // claims made, not yet on the replicas: none is answered as made
		return nil, err
	}
	if len(answers) != len(batch)+1 {
		return nil, fmt.Errorf("redisstore: %d answers to %d claims", len(answers)-1, len(batch))
	}
	at := time.UnixMilli(integer(answers[0])).UTC()
	out := make([]claimed, len(batch))
	for i, a := range answers[1:] {
		if a.IsInt64() { // refused
			out[i].err = dropErrors.err(integer(a))
			continue
		}
		f, _ := a.ToArray()
		if len(f) == 2 && !f[0].IsInt64() { // new: {seq, code}
			seq := integer(f[0])
			code, _ := f[1].ToString()
			out[i].claim = drop.Claim{Seq: seq, ID: drop.ClaimID(r.id, seq), Code: code, Visitor: batch[i].visitor, ClaimedAt: at}
			out[i].created = true
			continue
		}
		var claims []drop.Claim
		for _, c := range f[2:] {
			fields, _ := c.AsStrSlice()
			claims = append(claims, claimOf(fields))
		}
		switch err := dropErrors.err(integer(f[0])); {
		case errors.Is(err, errAlreadyClaimed):
			out[i].err = &drop.AlreadyClaimedError{Claims: claims}
		case err != nil:
			out[i].err = err
		default:
			out[i].claim, out[i].created = claims[0], integer(f[1]) == 1
		}
	}
	return out, nil
}

// claimOf rebuilds a claim from {seq, id, code, visitor, at ms}.
func claimOf(f []string) drop.Claim {
	seq, _ := strconv.ParseInt(f[0], 10, 64)
	at, _ := strconv.ParseInt(f[4], 10, 64)
	return drop.Claim{Seq: seq, ID: f[1], Code: f[2], Visitor: f[3], ClaimedAt: time.UnixMilli(at).UTC()}
}

// claimOfEntry rebuilds a claim from its stream entry, with the idempotency key it was made with, which
// the record keeps so that a repeat still answers with it after the drop is restored from the record.
func claimOfEntry(e rueidis.XRangeEntry) drop.Claim {
	c := claimOf([]string{seqOf(e.ID), e.FieldValues["claim_id"], e.FieldValues["code"], e.FieldValues["visitor"], e.FieldValues["at"]})
	c.Key = e.FieldValues["key"]
	return c
}

// Claims implements [drop.Store].
func (d *Drops) Claims(ctx context.Context, id string, after int64, limit int) ([]drop.Claim, error) {
	if _, err := d.Get(ctx, id); err != nil {
		return nil, err
	}
	entries, err := d.entriesAfter(ctx, d.keys.drop(id)[1], after, int64(limit))
	if err != nil {
		return nil, err
	}
	out := make([]drop.Claim, 0, len(entries))
	for _, e := range entries {
		out = append(out, claimOfEntry(e))
	}
	return out, nil
}

// Mine implements [drop.Store].
func (d *Drops) Mine(ctx context.Context, id, visitor string) ([]drop.Claim, error) {
	if _, err := d.Get(ctx, id); err != nil {
		return nil, err
	}
	m, err := d.do(ctx, d.rdb.B().Hget().Key(d.keys.drop(id)[2]).Field(visitor).Build())
	if errors.Is(err, errNil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	list, _ := m.ToString()
	var out []drop.Claim
	for _, seq := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		mm, err := d.do(ctx, d.rdb.B().Xrange().Key(d.keys.drop(id)[1]).Start(seq+"-1").End(seq+"-1").Build())
		if err != nil {
			return nil, err
		}
		if entries, _ := mm.AsXRange(); len(entries) == 1 {
			out = append(out, claimOfEntry(entries[0]))
		}
	}
	return out, nil
}
