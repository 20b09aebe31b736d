package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
)

var _ auction.Store = (*Auctions)(nil)

// auctionScript is an auction script with its preludes: the shared helpers, then the auction rules.
func auctionScript(name string) *rueidis.Lua { return rueidis.NewLuaScript(auctionSource(name)) }

func auctionSource(name string) string {
	return mustSource("lib") + "\n" + mustSource("auction_lib") + "\n" + mustSource(name)
}

var (
	auctionPutScript    = auctionScript("auction_put")
	auctionRestScript   = auctionScript("auction_restore")
	auctionDeleteScript = auctionScript("auction_delete")
	auctionStepScript   = newReplicated(auctionSource("auction_step"))
	auctionDueScript    = auctionScript("auction_due")
	auctionAmendScript  = auctionScript("auction_amend")
)

// Auctions is the Redis implementation of [auction.Store]. Each step is one script over the auction's
// hash-tagged state and event stream, applying the same rules as the memory backend with Redis's
// clock. The deadline index is one sorted set of its own (another Cluster slot), updated right after
// each step: it only wakes closers, and the close script checks the end itself, so an index entry that
// is early or stale costs a no-op step and is then corrected.
type Auctions struct {
	*conn
	// RecordLease is how long a recorder's lease on an auction lasts unless renewed (see
	// DefaultRecordLease); tests shorten it.
	RecordLease time.Duration

	steps   *batcher[revision, stepReq, stepped] // by auction and config revision
	configs rushgate.Configs[auction.Config]     // parsed configs, so that a step's answer carries no JSON
}

// stepReq is one action in a batch of steps, stepped its answer.
type (
	stepReq struct {
		op, bidder string
		max        int64
		exact      bool
	}
	stepped struct {
		outcome auction.Outcome
		err     error
	}
)

// offers reports whether the step is a bid or a buy-now: what the replicas must hold before it is
// answered (see Options.Replicas).
func (q stepReq) offers() bool { return q.op == "bid" || q.op == "buynow" }

func newAuctions(c *conn) *Auctions {
	a := &Auctions{conn: c, RecordLease: DefaultRecordLease}
	a.steps = newBatcher(c.timeout+c.replicaWait, a.sendSteps)
	return a
}

// Put implements [auction.Store]. The index entry is written first, so that a crash between the two
// leaves at worst an entry for an auction that a closer finds missing and drops.
func (a *Auctions) Put(ctx context.Context, id string, cfg auction.Config) error {
	f, err := fieldsOf(cfg)
	if err != nil {
		return err
	}
	if err := a.indexBy(ctx, id, cfg.EndsAt); err != nil {
		return err
	}
	return a.made(ctx, a.keys.auctions(), "auctions", id, func() error {
		return a.runCode(ctx, auctionPutScript, a.keys.auction(id), &auctionErrors, f.startPrice, f.reserve, f.buyNow,
			f.startsAt, itoa(cfg.EndsAt.UnixMilli()), f.window, f.extend, f.inc, f.js, rushgate.NewRevision())
	})
}

// configFields are the fields of an auction's state hash that its config sets, as the scripts read
// them (see auction_lib.lua), and the config as JSON.
type configFields struct{ startPrice, reserve, buyNow, startsAt, window, extend, inc, js string }

func fieldsOf(cfg auction.Config) (configFields, error) {
	js, err := json.Marshal(cfg)
	if err != nil {
		return configFields{}, err
	}
	optional := func(p *int64) string {
		if p == nil {
			return ""
		}
		return itoa(*p)
	}
	f := configFields{startPrice: itoa(cfg.StartPrice), reserve: optional(cfg.ReservePrice), buyNow: optional(cfg.BuyNowPrice),
		startsAt: itoa(cfg.StartsAt.UnixMilli()), js: string(js)}
	if sc := cfg.SoftClose; sc != nil {
		f.window, f.extend = itoa(time.Duration(sc.Window).Milliseconds()), itoa(time.Duration(sc.Extend).Milliseconds())
	}
	tiers := make([]string, len(cfg.Increment.Tiers))
	for i, t := range cfg.Increment.Tiers {
		tiers[i] = itoa(t.From) + ":" + itoa(t.Step)
	}
	f.inc = strings.Join(tiers, ",")
	return f, nil
}

// Restore implements [auction.Store]. The events go in pieces, then a last call writes the state if
// all of them are there (see lua/auction_restore.lua); the deadline index follows, as for Put.
func (a *Auctions) Restore(ctx context.Context, id string, st auction.State, evs []auction.Event) error {
	if err := auction.Rising(evs, st.Seq); err != nil {
		return err
	}
	f, err := fieldsOf(st.Config)
	if err != nil {
		return err
	}
	var lastSeq int64
	if len(evs) > 0 {
		lastSeq = evs[len(evs)-1].Seq
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	last := []string{itoa(int64(len(evs))), itoa(lastSeq),
		itoa(st.Price), st.Leader, itoa(st.LeaderMax), itoa(st.Bids), itoa(st.EndsAt.UnixMilli()), flag(st.Closed), flag(st.Sold),
		st.Winner, itoa(st.Final), itoa(st.Seq),
		f.startsAt, f.startPrice, f.reserve, f.buyNow, f.window, f.extend, f.inc, rushgate.NewRevision(), f.js}
	if !st.Closed && !st.Sold {
		if err := a.indexBy(ctx, id, st.EndsAt); err != nil {
			return err
		}
	}
	keys := append(a.keys.auction(id), a.keys.restoring("auction:"+id))
	return a.made(ctx, a.keys.auctions(), "auctions", id, func() error {
		err := restoreInPieces(ctx, a.conn, auctionRestScript, keys, &auctionErrors, len(evs), func(i int) []string {
			e := evs[i]
			return []string{itoa(e.Seq), e.Kind, itoa(e.At.UnixMilli()), e.Bidder, itoa(e.Price), flag(e.Proxy), itoa(e.EndsAt.UnixMilli())}
		}, last)
		if err != nil {
			return fmt.Errorf("auction %s: %w", id, err)
		}
		return nil
	})
}

// Delete implements [auction.Store]. The script removes the auction; then it leaves the deadline index
// and the recorders' registry (other slots), whose stale entries would cost only a no-op step.
func (a *Auctions) Delete(ctx context.Context, id string) error {
	if err := a.runCode(ctx, auctionDeleteScript, a.keys.auction(id), &auctionErrors); err != nil {
		return err
	}
	if _, err := a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(id).Build()); err != nil {
		return err
	}
	if _, err := a.do(ctx, a.rdb.B().Srem().Key(a.keys.auctions()).Member(id).Build()); err != nil {
		return err
	}
	return a.catalogue(ctx, "auctions", id, false)
}

// Amend implements [auction.Store]. The config is read first and its title and message replaced; the
// script keeps the result only if the config is still of that revision, and the auction is not over.
// The outcome is read after it, with the event it appended.
func (a *Auctions) Amend(ctx context.Context, id, rev string, cfg auction.Config) (auction.Outcome, error) {
	st, err := a.Get(ctx, id)
	if err != nil {
		return auction.Outcome{}, err
	}
	if rev == "" || st.Rev != rev {
		return auction.Outcome{}, rushgate.ErrStale
	}
	c := st.Config
	c.Title, c.Message = cfg.Title, cfg.Message
	js, err := json.Marshal(c)
	if err != nil {
		return auction.Outcome{}, err
	}
	if err := a.runCode(ctx, auctionAmendScript, a.keys.auction(id)[:2], &auctionErrors, a.now(), rev, string(js),
		rushgate.NewRevision(), a.keys.auctionChanges(id)); err != nil {
		return auction.Outcome{}, err
	}
	before := st.Seq
	if st, err = a.Get(ctx, id); err != nil {
		return auction.Outcome{}, err
	}
	o := auction.Outcome{State: st}
	if st.Seq > before {
		o.Events, err = a.Events(ctx, id, before, int(st.Seq-before))
	}
	return o, err
}

func (a *Auctions) index(ctx context.Context, id string, end time.Time) error {
	_, err := a.do(ctx, a.rdb.B().Zadd().Key(a.keys.auctionDeadlines()).ScoreMember().ScoreMember(float64(end.UnixMilli()), id).Build())
	return err
}

// indexBy indexes an auction's deadline ahead of a step that may then refuse to move it (Put, Restore),
// so that no crash between the two leaves an auction unindexed; it moves an indexed deadline earlier,
// never later, since a refused put of an auction with bids must not delay its close (ZADD LT). A put
// that did move the end later wakes a closer at the old deadline, whose Close finds the auction not due
// and indexes its end (see sendSteps).
func (a *Auctions) indexBy(ctx context.Context, id string, end time.Time) error {
	_, err := a.do(ctx, a.rdb.B().Zadd().Key(a.keys.auctionDeadlines()).Lt().ScoreMember().ScoreMember(float64(end.UnixMilli()), id).Build())
	return err
}

// step runs one action in the auction's next batch (see batch.go); rev is the config revision it was
// checked against, "" for none.
func (a *Auctions) step(ctx context.Context, id, rev, op, bidder string, max int64, exact bool) (auction.Outcome, error) {
	r, err := a.steps.do(ctx, revision{id, rev}, stepReq{op: op, bidder: bidder, max: max, exact: exact})
	if err != nil {
		return auction.Outcome{}, err
	}
	return r.outcome, r.err
}

// sendSteps runs one batch of actions through the step script, then keeps the deadline index in line
// with where the batch left the auction. The index only wakes closers, and the close script checks the
// end itself, so a write to it that fails costs at most an early no-op close, which writes it again;
// only a close reports such a failure, to the closer.
func (a *Auctions) sendSteps(ctx context.Context, r revision, batch []stepReq) ([]stepped, error) {
	held, heldRev, _ := a.configs.Get(r.id)
	args := make([]string, 4, 4+4*len(batch))
	args[0], args[1], args[2], args[3] = a.now(), r.rev, heldRev, a.keys.auctionChanges(r.id)
	for _, q := range batch {
		ex := "0"
		if q.exact {
			ex = "1"
		}
		args = append(args, q.op, q.bidder, itoa(q.max), ex)
	}
	// Bids and buy-nows are what must not be lost; a batch of reads, closes and reschedules (which the
	// deadline index makes again) waits for no replica.
	var v rueidis.RedisMessage
	var err error
	if slices.ContainsFunc(batch, stepReq.offers) {
		v, err = a.runConfirmed(ctx, auctionStepScript, a.keys.auction(r.id), args...)
	} else {
		v, err = a.run(ctx, auctionStepScript.Lua, a.keys.auction(r.id), args...)
	}
	unconfirmed := err
	if err != nil && !errors.Is(err, rushgate.ErrUnconfirmed) {
		return nil, err
	}
	res, _ := v.ToArray()
	if len(res) == 1 { // the batch was refused as a whole
		err := auctionErrors.err(integer(res[0]))
		if errors.Is(err, auction.ErrNotFound) {
			_, _ = a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(r.id).Build())
		}
		return nil, err
	}
	rev, _ := res[0].ToString()
	cfg := held
	if js, err := res[1].ToString(); err == nil {
		// Into a zero config: one decoded over the held one would keep every field the new JSON leaves
		// out (a room, a reserve, a message removed by a replacement).
		cfg = auction.Config{}
		if err := json.Unmarshal([]byte(js), &cfg); err != nil {
			return nil, err
		}
		a.configs.Put(r.id, rev, cfg)
	}
	out := make([]stepped, len(res)-2)
	var over, moved bool // the batch closed or sold the auction; it moved the end or was a close
	for i, m := range res[2:] {
		o := &out[i].outcome
		var prev *auction.State
		if i > 0 {
			prev = &out[i-1].outcome.State
		}
		out[i].err = outcome(m, o, prev)
		o.State.Config, o.State.Rev = cfg, rev
		for _, e := range o.Events {
			over = over || e.Ends()
			moved = moved || e.Kind == auction.EventExtended
		}
		moved = moved || batch[i].op == "close"
	}
	var ierr error
	if last := out[len(out)-1].outcome.State; over || last.Over() {
		if over || moved {
			_, ierr = a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(r.id).Build())
		}
	} else if moved {
		ierr = a.index(ctx, r.id, last.EndsAt)
	}
	for i := range out {
		if ierr != nil && batch[i].op == "close" && out[i].err == nil {
			out[i].err = ierr
		}
		if unconfirmed != nil && batch[i].offers() {
			out[i].err = unconfirmed // made or refused on the master, not yet on the replicas
		}
	}
	return out, nil
}

// outcome rebuilds one answer of the step script into o, returning the refusal it reports; an answer
// without a state left the state as prev, the previous answer's.
func outcome(m rueidis.RedisMessage, o *auction.Outcome, prev *auction.State) error {
	r, _ := m.ToArray()
	if len(r) == 2 {
		if prev != nil {
			o.State = *prev
		}
		return stepError(r)
	}
	f, _ := r[2].AsStrSlice()
	num := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	s := &o.State
	s.Price, s.Leader, s.LeaderMax, s.Bids = num(0), f[1], num(2), num(3)
	s.EndsAt = time.UnixMilli(num(4)).UTC()
	s.Closed, s.Sold, s.Winner, s.Final, s.Seq = f[5] == "1", f[6] == "1", f[7], num(8), num(9)
	evs, _ := r[3].ToArray()
	for _, e := range evs {
		fields, _ := e.AsStrSlice()
		o.Events = append(o.Events, event(fields))
	}
	return stepError(r)
}

// stepError returns the refusal of an answer of the step script, {code, min next bid, ...}.
func stepError(r []rueidis.RedisMessage) error {
	err := auctionErrors.err(integer(r[0]))
	if errors.Is(err, auction.ErrTooLow) {
		return &auction.TooLowError{Min: integer(r[1])}
	}
	return err
}

// event rebuilds an event from {seq, kind, at, bidder, price, proxy, ends_at}.
func event(f []string) auction.Event {
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return auction.Event{Seq: n(0), Kind: f[1], At: time.UnixMilli(n(2)).UTC(), Bidder: f[3], Price: n(4),
		Proxy: f[5] == "1", EndsAt: time.UnixMilli(n(6)).UTC()}
}

// Get implements [auction.Store].
func (a *Auctions) Get(ctx context.Context, id string) (auction.State, error) {
	o, err := a.step(ctx, id, "", "get", "", 0, false)
	return o.State, err
}

// Bid implements [auction.Store].
func (a *Auctions) Bid(ctx context.Context, id, rev string, b auction.Bid) (auction.Outcome, error) {
	if b.Max < 1 || b.Max > auction.MaxAmount || b.Bidder == "" {
		return auction.Outcome{}, auction.ErrInvalidAmount
	}
	return a.step(ctx, id, rev, "bid", b.Bidder, b.Max, b.Exact)
}

// BuyNow implements [auction.Store].
func (a *Auctions) BuyNow(ctx context.Context, id, rev, bidder string) (auction.Outcome, error) {
	return a.step(ctx, id, rev, "buynow", bidder, 0, false)
}

// Bidders implements [auction.Store].
func (a *Auctions) Bidders(ctx context.Context, id string) (int64, error) {
	m, err := a.do(ctx, a.rdb.B().Hlen().Key(a.keys.auction(id)[2]).Build())
	if err != nil {
		return 0, err
	}
	return m.AsInt64()
}

// HasBidder implements [auction.Store].
func (a *Auctions) HasBidder(ctx context.Context, id, bidder string) (bool, error) {
	m, err := a.do(ctx, a.rdb.B().Hexists().Key(a.keys.auction(id)[2]).Field(bidder).Build())
	if err != nil {
		return false, err
	}
	return m.AsBool()
}

// Reschedule implements [auction.Store].
func (a *Auctions) Reschedule(ctx context.Context, id string, end time.Time) (auction.Outcome, error) {
	return a.step(ctx, id, "", "reschedule", "", end.UnixMilli(), false)
}

// Close implements [auction.Store].
func (a *Auctions) Close(ctx context.Context, id string) (auction.Outcome, error) {
	return a.step(ctx, id, "", "close", "", 0, false)
}

// Due implements [auction.Store].
func (a *Auctions) Due(ctx context.Context, limit int) ([]string, time.Time, error) {
	v, err := a.run(ctx, auctionDueScript, []string{a.keys.auctionDeadlines()}, itoa(int64(limit)), a.now())
	if err != nil {
		return nil, time.Time{}, err
	}
	r, _ := v.ToArray()
	ids, _ := r[0].AsStrSlice()
	var next time.Time
	if ms := integer(r[1]); ms > 0 {
		next = time.UnixMilli(ms).UTC()
	}
	return ids, next, nil
}

// Events implements [auction.Store]: the stream's ids are seq-1, so the events after a sequence number
// are one XRANGE.
func (a *Auctions) Events(ctx context.Context, id string, after int64, limit int) ([]auction.Event, error) {
	k := a.keys.auction(id)
	// A deleted auction leaves its sequence number behind (lua/auction_delete.lua): a live one has a price.
	if _, err := a.do(ctx, a.rdb.B().Hget().Key(k[0]).Field("price").Build()); errors.Is(err, errNil) {
		return nil, auction.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	entries, err := a.entriesAfter(ctx, k[1], after, int64(limit))
	if err != nil {
		return nil, err
	}
	out := make([]auction.Event, 0, len(entries))
	for _, e := range entries {
		out = append(out, eventOfEntry(e))
	}
	return out, nil
}

// Watch implements [auction.Watcher]: one subscription per auction per instance, on which the step
// script announces new events. Pub/sub loses what is said while a subscription is not yet or no longer
// held, so the channel is also told each time the subscription is confirmed, after a reconnection too,
// and the feeds then read whatever they missed.
func (a *Auctions) Watch(ctx context.Context, id string) <-chan struct{} {
	out := make(chan struct{}, 1)
	tell := func() {
		select {
		case out <- struct{}{}:
		default: // a change is already pending: the feeds' next read takes both
		}
	}
	go func() {
		defer close(out)
		ctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				tell()
			}
		})
		_ = a.rdb.Receive(ctx, a.rdb.B().Subscribe().Channel(a.keys.auctionChanges(id)).Build(), func(rueidis.PubSubMessage) { tell() })
	}()
	return out
}

func eventOfEntry(e rueidis.XRangeEntry) auction.Event {
	fv := e.FieldValues
	return event([]string{seqOf(e.ID), fv["kind"], fv["at"], fv["bidder"], fv["price"], fv["proxy"], fv["ends_at"]})
}
