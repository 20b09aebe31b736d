package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate/internal/auction"
)

var _ auction.Store = (*Auctions)(nil)

// auctionScript is an auction script with its preludes: the shared helpers, then the auction rules.
func auctionScript(name string) *rueidis.Lua {
	return rueidis.NewLuaScript(mustSource("lib") + "\n" + mustSource("auction_lib") + "\n" + mustSource(name))
}

var (
	auctionPutScript    = auctionScript("auction_put")
	auctionDeleteScript = auctionScript("auction_delete")
	auctionStepScript   = auctionScript("auction_step")
	auctionDueScript    = auctionScript("auction_due")
)

// Result codes of the auction scripts (see lua/auction_lib.lua).
const (
	codeOK = iota
	codeNotFound
	codeNotStarted
	codeClosed
	codeTooLow
	codeBuyNowGone
	codeStarted
)

// Auctions is the Redis implementation of [auction.Store]. Each step is one script over the auction's
// hash-tagged state and event stream, applying the same rules as the memory backend with Redis's
// clock. The deadline index is one sorted set of its own (another Cluster slot), updated right after
// each step: it only wakes closers, and the close script checks the end itself, so an index entry that
// is early or stale costs a no-op step and is then corrected.
type Auctions struct {
	*Store
	// ClaimIdle is how long before a consumer takes over events another left unacknowledged.
	ClaimIdle time.Duration
}

// NewAuctions returns the auction store sharing s's client, key prefix and options.
func NewAuctions(s *Store) *Auctions { return &Auctions{Store: s, ClaimIdle: DefaultClaimIdle} }

// Put implements [auction.Store]. The index entry is written first, so that a crash between the two
// leaves at worst an entry for an auction that a closer finds missing and drops.
func (a *Auctions) Put(ctx context.Context, id string, cfg auction.Config) error {
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := a.index(ctx, id, cfg.EndsAt); err != nil {
		return err
	}
	optional := func(p *int64) string {
		if p == nil {
			return ""
		}
		return itoa(*p)
	}
	var window, extend string
	if sc := cfg.SoftClose; sc != nil {
		window, extend = itoa(time.Duration(sc.Window).Milliseconds()), itoa(time.Duration(sc.Extend).Milliseconds())
	}
	tiers := make([]string, len(cfg.Increment.Tiers))
	for i, t := range cfg.Increment.Tiers {
		tiers[i] = itoa(t.From) + ":" + itoa(t.Step)
	}
	v, err := a.run(ctx, auctionPutScript, a.keys.auction(id), itoa(cfg.StartPrice), optional(cfg.ReservePrice),
		optional(cfg.BuyNowPrice), itoa(cfg.StartsAt.UnixMilli()), itoa(cfg.EndsAt.UnixMilli()), window, extend,
		strings.Join(tiers, ","), string(js))
	if err != nil {
		return err
	}
	if r := ints(v); r[0] == codeStarted {
		return auction.ErrStarted
	}
	return a.register(ctx, a.keys.auctions(), id, a.keys.auction(id)[1])
}

// Delete implements [auction.Store]. The script removes the auction; then it leaves the deadline index
// and the recorders' registry (other slots), whose stale entries would cost only a no-op step.
func (a *Auctions) Delete(ctx context.Context, id string) error {
	v, err := a.run(ctx, auctionDeleteScript, a.keys.auction(id))
	if err != nil {
		return err
	}
	switch ints(v)[0] {
	case codeNotFound:
		return auction.ErrNotFound
	case codeStarted:
		return auction.ErrStarted
	}
	if _, err := a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(id).Build()); err != nil {
		return err
	}
	_, err = a.do(ctx, a.rdb.B().Srem().Key(a.keys.auctions()).Member(id).Build())
	return err
}

func (a *Auctions) index(ctx context.Context, id string, end time.Time) error {
	_, err := a.do(ctx, a.rdb.B().Zadd().Key(a.keys.auctionDeadlines()).ScoreMember().ScoreMember(float64(end.UnixMilli()), id).Build())
	return err
}

// step runs one auction step and keeps the deadline index in line with its outcome.
func (a *Auctions) step(ctx context.Context, id, op, bidder string, max int64, exact bool) (auction.Outcome, error) {
	ex := "0"
	if exact {
		ex = "1"
	}
	v, err := a.run(ctx, auctionStepScript, a.keys.auction(id), op, a.now(), bidder, itoa(max), ex)
	if err != nil {
		return auction.Outcome{}, err
	}
	r, _ := v.ToArray()
	code := integer(r[0])
	if code == codeNotFound {
		_, _ = a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(id).Build())
		return auction.Outcome{}, auction.ErrNotFound
	}
	o, err := outcome(r)
	if err != nil {
		return o, err
	}
	if o.State.Closed || o.State.Sold {
		_, err = a.do(ctx, a.rdb.B().Zrem().Key(a.keys.auctionDeadlines()).Member(id).Build())
	} else if len(o.Events) > 0 || op == "close" {
		err = a.index(ctx, id, o.State.EndsAt)
	}
	if err != nil {
		return o, err
	}
	switch code {
	case codeNotStarted:
		return o, auction.ErrNotStarted
	case codeClosed:
		return o, auction.ErrClosed
	case codeTooLow:
		return o, &auction.TooLowError{Min: integer(r[1])}
	case codeBuyNowGone:
		return o, auction.ErrBuyNowGone
	}
	return o, nil
}

// outcome rebuilds the state and events a step script returned.
func outcome(r []rueidis.RedisMessage) (auction.Outcome, error) {
	f, _ := r[2].ToArray()
	str := func(i int) string { s, _ := f[i].ToString(); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	var o auction.Outcome
	js, _ := r[4].ToString()
	if err := json.Unmarshal([]byte(js), &o.State.Config); err != nil {
		return o, err
	}
	s := &o.State
	s.Price, s.Leader, s.LeaderMax, s.Bids = num(0), str(1), num(2), num(3)
	s.EndsAt = time.UnixMilli(num(4)).UTC()
	s.Closed, s.Sold, s.Winner, s.Final, s.Seq = str(5) == "1", str(6) == "1", str(7), num(8), num(9)
	evs, _ := r[3].ToArray()
	for _, e := range evs {
		fields, _ := e.AsStrSlice()
		o.Events = append(o.Events, event(fields))
	}
	return o, nil
}

// event rebuilds an event from {seq, kind, at, bidder, price, proxy, ends_at}.
func event(f []string) auction.Event {
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return auction.Event{Seq: n(0), Kind: f[1], At: time.UnixMilli(n(2)).UTC(), Bidder: f[3], Price: n(4),
		Proxy: f[5] == "1", EndsAt: time.UnixMilli(n(6)).UTC()}
}

// Get implements [auction.Store].
func (a *Auctions) Get(ctx context.Context, id string) (auction.State, error) {
	o, err := a.step(ctx, id, "get", "", 0, false)
	return o.State, err
}

// Bid implements [auction.Store].
func (a *Auctions) Bid(ctx context.Context, id string, b auction.Bid) (auction.Outcome, error) {
	if b.Max < 1 || b.Max > auction.MaxAmount || b.Bidder == "" {
		return auction.Outcome{}, auction.ErrInvalidAmount
	}
	return a.step(ctx, id, "bid", b.Bidder, b.Max, b.Exact)
}

// BuyNow implements [auction.Store].
func (a *Auctions) BuyNow(ctx context.Context, id, bidder string) (auction.Outcome, error) {
	return a.step(ctx, id, "buynow", bidder, 0, false)
}

// Close implements [auction.Store].
func (a *Auctions) Close(ctx context.Context, id string) (auction.Outcome, error) {
	return a.step(ctx, id, "close", "", 0, false)
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
	if _, err := a.do(ctx, a.rdb.B().Hget().Key(k[0]).Field("seq").Build()); errors.Is(err, errNil) {
		return nil, auction.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	m, err := a.do(ctx, a.rdb.B().Xrange().Key(k[1]).Start(itoa(after+1)+"-0").End("+").Count(int64(limit)).Build())
	if err != nil {
		return nil, err
	}
	entries, _ := m.AsXRange()
	out := make([]auction.Event, 0, len(entries))
	for _, e := range entries {
		seq, _, _ := strings.Cut(e.ID, "-")
		fv := e.FieldValues
		out = append(out, event([]string{seq, fv["kind"], fv["at"], fv["bidder"], fv["price"], fv["proxy"], fv["ends_at"]}))
	}
	return out, nil
}
