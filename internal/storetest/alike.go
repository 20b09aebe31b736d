package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/room"
)

// The conformance suite says what a backend must do in the cases its authors thought of. The
// comparisons look for the cases nobody thought of: the same random sequence of steps on rooms,
// auctions or drops, with the clock moved between them, goes to two backends, and every answer must
// agree, and after every step what each holds: admissions, expiries, idle waiters, rate windows,
// closes, claims, deadlines and all. Time is each store's own fake clock (both start at the same
// instant), which an HTTP-level comparison cannot move. A second backend with a Restart is also
// crashed and opened again on what it kept between steps: what it answered before must still hold.
// ALIKE_SEED=N draws another sequence.

// Seeds returns n seeds for the comparisons from 1, or the one ALIKE_SEED names.
func Seeds(t *testing.T, n int) []uint64 {
	if s := os.Getenv("ALIKE_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ALIKE_SEED=%q: %v", s, err)
		}
		return []uint64{seed}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// side is one backend of a comparison, with what its answers name in its own words: admission ids,
// which each backend makes up, are told by the order they were first seen in.
type side struct {
	h          Harness
	admissions map[string]string // backend's admission id -> "A<n>"
	byName     map[string]string // "A<n>" -> backend's admission id
	current    map[string]string // visitor -> "A<n>" of the admission it was last told of
	// more and next are the hints of the last tick, or next and due those of the last look for auctions
	// due, compared apart (see lazier).
	more bool
	next time.Time
	due  []string
	// revs holds the revision of each drop's or auction's config as this side last looked, each
	// backend's own: claims and bids that name it are refused as stale once the config changed.
	revs map[string]string
}

func newSide(h Harness) *side {
	return &side{h: h, admissions: map[string]string{}, byName: map[string]string{}, current: map[string]string{}, revs: map[string]string{}}
}

// name gives a backend's admission id the name of its order of appearance.
func (s *side) name(visitor, id string) string {
	if id == "" {
		return ""
	}
	n, ok := s.admissions[id]
	if !ok {
		n = "A" + strconv.Itoa(len(s.admissions)+1)
		s.admissions[id], s.byName[n] = n, id
	}
	if visitor != "" {
		s.current[visitor] = n
	}
	return n
}

// status and tick write an answer with its admission ids named and its times to the millisecond, the
// precision Redis keeps.
func (s *side) status(visitor string, st room.Status, err error) string {
	if err != nil {
		return outcome(err)
	}
	if st.State != room.StateAdmitted {
		return fmt.Sprintf("%s pos=%d", st.State, st.Position)
	}
	a := st.Admission
	return fmt.Sprintf("admitted %s until=%s collected=%t", s.name(visitor, a.ID), ms(a.ExpiresAt), a.Collected)
}

func (s *side) tick(tk room.Tick, err error) string {
	if err != nil {
		return outcome(err)
	}
	var b strings.Builder
	b.WriteString("admitted=[")
	for _, a := range tk.Admitted {
		fmt.Fprintf(&b, "%s:%s until=%s collected=%t ", a.Visitor, s.name(a.Visitor, a.Admission.ID), ms(a.Admission.ExpiresAt), a.Admission.Collected)
	}
	slices.Sort(tk.Expired)
	slices.Sort(tk.Idle)
	fmt.Fprintf(&b, "] expired=%v idle=%v total=%d free=%d waiting=%d closed=%t opens=%s", tk.Expired, tk.Idle, tk.AdmittedTotal, tk.Free, tk.Waiting, tk.DropClosed, ms(tk.DropOpens))
	s.more, s.next = tk.More, tk.Next.Truncate(time.Millisecond)
	return b.String()
}

func ms(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return t.UTC().Truncate(time.Millisecond).Format("15:04:05.000")
}

// outcome names an error by the domain outcome it is, so that two backends' wordings compare.
func outcome(err error) string {
	var elsewhere *room.ElsewhereError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &elsewhere):
		return "elsewhere:" + elsewhere.Room
	}
	return named(err, []sentinel{{room.ErrNotFound, "not_found"},
		{room.ErrNotAdmitted, "not_admitted"}, {room.ErrClosed, "closed"},
		{room.ErrInviteRequired, "invite_required"}, {room.ErrInviteInvalid, "invite_invalid"},
		{rushgate.ErrSoldOut, "sold_out"}})
}

// sentinel names a domain outcome, so that two backends' wordings of it compare.
type sentinel struct {
	err  error
	name string
}

// named names err by the first of the sentinels it is, or by its text.
func named(err error, sentinels []sentinel) string {
	for _, o := range sentinels {
		if errors.Is(err, o.err) {
			return o.name
		}
	}
	return "error: " + err.Error()
}

// lazier says how b's last tick hints at less work than a's, or "". A tick's More and Next are hints
// for the gate that runs the steps: one that says there is more to do, or something to do earlier,
// costs a step that finds nothing, but one that says less leaves visitors waiting. So b's hints may be
// more eager than a's, never lazier: Redis's are (its presence set keeps an entry per batch of
// arrivals, swept when due whether or not they still wait), and so may a backend's just opened again.
//
// So are the auctions due: Redis indexes an auction's deadline before the step that puts it, which
// may then refuse it, and a closer's Close of an auction not due is a no-op. So b may list more.
func lazier(a, b *side) string {
	for _, id := range a.due {
		if !slices.Contains(b.due, id) {
			return fmt.Sprintf("(due: %s %v, %s %v)", a.h.name("first"), a.due, b.h.name("second"), b.due)
		}
	}
	if len(b.due) > len(a.due) {
		return "" // a closer looks again after closing those, and then hears of the next deadline
	}
	switch {
	case a.more && !b.more:
		return fmt.Sprintf("(more: %s true, %s false)", a.h.name("first"), b.h.name("second"))
	case !a.next.IsZero() && (b.next.IsZero() || b.next.After(a.next)):
		return fmt.Sprintf("(next: %s %s, %s %s)", a.h.name("first"), ms(a.next), b.h.name("second"), ms(b.next))
	}
	return ""
}

// name is the harness's Name, or or.
func (h Harness) name(or string) string {
	if h.Name != "" {
		return h.Name
	}
	return or
}

// step is one random call, made alike on each side: it returns the side's answer as text.
type step struct {
	what string
	do   func(s *side) string
}

// CompareRooms runs a random sequence of room steps on a and b, whose clocks read the same.
func CompareRooms(t *testing.T, seed uint64, a, b Harness) {
	rooms := []string{"r1", "r2", "r3"}
	// Visitors a* arrive through a join of r1 (their tokens name it as their origin), b* are subjects'
	// (their tokens name none).
	visitors := []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "b5", "b6"}
	arrived := map[string]bool{}
	// A backend opened again counts a room's units afresh from its drop's claims, and these rooms
	// follow no drop: when b restarts, the steps of units are left out.
	units := b.Restart == nil
	compare(t, seed, newSide(a), newSide(b), func(rnd *rand.Rand) step {
		st := randomRoomStep(rnd, rooms, visitors, arrived, units)
		return step{st.what, func(s *side) string { return st.do(s) + " " + roomsNow(s, rooms) }}
	}, func(s *side) {
		// A restart counts every waiter present (the downtime was not the visitors' doing).
		for _, id := range rooms {
			_ = s.h.Rooms.Touch(ctx, id, visitors)
		}
	})
}

// roomsNow counts every room's visitors, to compare after every step.
func roomsNow(s *side, rooms []string) string {
	var b strings.Builder
	for _, id := range rooms {
		st, err := s.h.Rooms.Stats(ctx, id)
		if err != nil {
			fmt.Fprintf(&b, "[%s %s]", id, outcome(err))
			continue
		}
		fmt.Fprintf(&b, "[%s %d %d %d %d %d %d]", id, st.Waiting, st.Active, st.AdmittedTotal, st.JoinedTotal, st.IdleTotal, st.GraceTotal)
	}
	return b.String()
}

// compare makes 1,500 random steps that draw makes on both sides, stopping at the first answer on
// which they differ. When b can restart, about one step in fifty restarts it first, and a is told by
// restarted (when not nil), to do what a restart does on purpose.
func compare(t *testing.T, seed uint64, a, b *side, draw func(*rand.Rand) step, restarted func(*side)) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, seed*7919))
	var log []string
	for i := range 1500 {
		st := draw(rnd)
		if b.h.Restart != nil && rnd.IntN(50) == 0 {
			// b opens again before the step, which then compares what it kept.
			then := st
			st = step{"restart, then " + then.what, func(s *side) string {
				// The revisions a service cached go with its process, as a backend's own may.
				clear(s.revs)
				switch {
				case s == b:
					b.h = b.h.Restart()
				case restarted != nil:
					restarted(s)
				}
				return then.do(s)
			}}
		}
		for _, s := range []*side{a, b} {
			s.more, s.next, s.due = false, time.Time{}, nil
		}
		x, y := st.do(a), st.do(b)
		log = append(log, fmt.Sprintf("%3d %s -> %s", i, st.what, x))
		why := lazier(a, b)
		if x != y || why != "" {
			if len(log) > 40 {
				log = log[len(log)-40:]
			}
			t.Fatalf("seed %d, step %d: %s %s\n %-9s %s\n %-9s %s\nthe steps before:\n%s", seed, i, st.what, why,
				a.h.name("first")+":", x, b.h.name("second")+":", y, strings.Join(log, "\n"))
		}
	}
}

// randomRoomStep draws a step of a room; without units, none that counts the room's units (units,
// restock, hold, unhold, sold out).
func randomRoomStep(rnd *rand.Rand, rooms, visitors []string, arrived map[string]bool, units bool) step {
	id := rooms[rnd.IntN(len(rooms))]
	v := visitors[rnd.IntN(len(visitors))]
	origin := ""
	if v[0] == 'a' {
		origin = "r1"
		if !arrived[v] {
			// Its first join issues its token, in its origin.
			arrived[v] = true
			return step{"arrive " + v, func(s *side) string {
				st, err := s.h.Rooms.Join(ctx, "r1", room.Entrant{Visitor: v, Origin: "r1", New: true})
				return s.status(v, st, err)
			}}
		}
	}
	n := rnd.IntN(100)
	if !units && n >= 80 && n < 90 {
		n = 72 // stats
	}
	switch {
	case n < 8:
		c := randomRoomConfig(rnd)
		return step{fmt.Sprintf("put %s %+v rate=%v", id, c, c.Rate), func(s *side) string {
			return outcome(s.h.Rooms.PutRoom(ctx, id, c))
		}}
	case n < 10:
		return step{"delete " + id, func(s *side) string { return outcome(s.h.Rooms.DeleteRoom(ctx, id)) }}
	case n < 30:
		e := room.Entrant{Visitor: v, Origin: origin, Switch: rnd.IntN(3) > 0}
		return step{fmt.Sprintf("join %s %+v", id, e), func(s *side) string {
			st, err := s.h.Rooms.Join(ctx, id, e)
			return s.status(v, st, err)
		}}
	case n < 42:
		return step{"status " + id + " " + v, func(s *side) string {
			st, err := s.h.Rooms.Status(ctx, id, v)
			return s.status(v, st, err)
		}}
	case n < 47:
		vs := []string{v, visitors[rnd.IntN(len(visitors))]}
		return step{fmt.Sprintf("touch %s %v", id, vs), func(s *side) string { return outcome(s.h.Rooms.Touch(ctx, id, vs)) }}
	case n < 52:
		return step{"leave " + id + " " + v, func(s *side) string {
			ok, err := s.h.Rooms.Leave(ctx, id, v)
			return fmt.Sprint(ok, outcome(err))
		}}
	case n < 58:
		which := rnd.IntN(3) // the visitor's last admission, none named, or a made-up one
		return step{fmt.Sprintf("release %s %s (%d)", id, v, which), func(s *side) string {
			return outcome(s.h.Rooms.Release(ctx, id, v, s.admissionID(v, which)))
		}}
	case n < 72:
		// Steps that may do all there is to do: how a step's limits split the work between steps
		// is each backend's own (conformance, IdleNeverAdmitted, says what must hold whatever they are).
		max := 100
		return step{fmt.Sprintf("admit %s %d", id, max), func(s *side) string {
			tk, err := s.h.Rooms.Admit(ctx, id, max)
			return s.tick(tk, err)
		}}
	case n < 76:
		return step{"stats " + id, func(s *side) string {
			st, err := s.h.Rooms.Stats(ctx, id)
			if err != nil {
				return outcome(err)
			}
			return fmt.Sprintf("%+v", st)
		}}
	case n < 80:
		which := rnd.IntN(3)
		return step{fmt.Sprintf("active %s %s (%d)", id, v, which), func(s *side) string {
			ok, err := s.h.Rooms.Active(ctx, id, v, s.admissionID(v, which))
			return fmt.Sprint(ok, outcome(err))
		}}
	case n < 83:
		l := rushgate.Level{Left: rnd.IntN(4) - 1, Stock: 3, Written: int64(rnd.IntN(10)), Opens: randomInstant(rnd), Closes: randomInstant(rnd)}
		d := randomDrop(rnd)
		return step{fmt.Sprintf("units %s of %q %d (%d) opening %s closing %s", id, d, l.Left, l.Written, ms(l.Opens), ms(l.Closes)), func(s *side) string {
			return outcome(s.h.Rooms.SetUnits(ctx, id, d, l))
		}}
	case n < 85:
		l := rushgate.Level{Stock: rnd.IntN(6), Written: int64(rnd.IntN(10)), Opens: randomInstant(rnd), Closes: randomInstant(rnd)} // some of them told late
		d := randomDrop(rnd)
		return step{fmt.Sprintf("restock %s of %q %d (%d) opening %s closing %s", id, d, l.Stock, l.Written, ms(l.Opens), ms(l.Closes)), func(s *side) string {
			news, err := s.h.Rooms.Restock(ctx, id, d, l)
			return fmt.Sprint(news, outcome(err))
		}}
	case n < 88:
		which, d := rnd.IntN(2), randomDrop(rnd)
		return step{fmt.Sprintf("hold %s of %q %s (%d)", id, d, v, which), func(s *side) string {
			took, err := s.h.Rooms.Hold(ctx, id, d, v, s.admissionID(v, which))
			return fmt.Sprint(took, outcome(err))
		}}
	case n < 89:
		d := randomDrop(rnd)
		return step{fmt.Sprintf("unhold %s of %q", id, d), func(s *side) string { return outcome(s.h.Rooms.Unhold(ctx, id, d)) }}
	case n < 90:
		d := randomDrop(rnd)
		return step{fmt.Sprintf("sold out %s of %q", id, d), func(s *side) string { return outcome(s.h.Rooms.SoldOut(ctx, id, d)) }}
	case n < 93:
		codes := []string{"i1", "i2", "i3"}[:1+rnd.IntN(3)]
		return step{fmt.Sprintf("add invites %s %v", id, codes), func(s *side) string {
			n, err := s.h.Rooms.AddInvites(ctx, id, codes)
			return fmt.Sprint(n, outcome(err))
		}}
	case n < 95:
		code := []string{"i1", "i2", "i3", "i4"}[rnd.IntN(4)]
		back := rnd.IntN(3) == 0
		return step{fmt.Sprintf("take invite %s %s (back %t)", id, code, back), func(s *side) string {
			ok, err := s.h.Rooms.TakeInvite(ctx, id, code)
			if back && ok && err == nil {
				err = s.h.Rooms.ReturnInvite(ctx, id, code)
			}
			return fmt.Sprint(ok, outcome(err))
		}}
	case n < 96:
		return step{"rooms", func(s *side) string {
			ids, err := s.h.Rooms.Rooms(ctx)
			slices.Sort(ids)
			return fmt.Sprint(ids, outcome(err))
		}}
	default:
		return advance(rnd, time.Second, 5*time.Second, 20*time.Second, 45*time.Second, 61*time.Second, 3*time.Minute)
	}
}

// advance moves both sides' clocks by one of ds and a random part of a second.
// randomInstant is an opening or a closing of the drop a room follows, for the comparisons: mostly
// none, else long past or far ahead (a closing past and an opening ahead hold the line, the others
// change nothing yet). Both sides' clocks are near the present, so either is on the same side of both.
func randomInstant(rnd *rand.Rand) time.Time {
	switch rnd.IntN(4) {
	case 0:
		return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	case 1:
		return time.Date(2190, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

func advance(rnd *rand.Rand, ds ...time.Duration) step {
	d := ds[rnd.IntN(len(ds))] + time.Duration(rnd.IntN(1000))*time.Millisecond
	return step{"advance " + d.String(), func(s *side) string { s.h.Advance(d); return "" }}
}

// rev is the revision a claim or bid names: the one this side last looked at when looked, else none
// (the call then checks nothing).
func (s *side) rev(id string, looked bool) string {
	if !looked {
		return ""
	}
	return s.revs[id]
}

// admissionID is the id a call names: 0 the visitor's last admission on this side, 1 none, 2 one no
// backend made.
func (s *side) admissionID(v string, which int) string {
	switch which {
	case 0:
		return s.byName[s.current[v]]
	case 1:
		return ""
	}
	return "made-up.1"
}

// randomRoomConfig draws a small room whose limits a few visitors reach: capacity, rate or both,
// short windows, any mode, sometimes paused.
// randomDrop names the drop a room's config follows, or a step about a drop's units is about: mostly
// the same one, so that the units' steps mostly apply.
func randomDrop(rnd *rand.Rand) string { return []string{"", "d1", "d1", "d1", "d2"}[rnd.IntN(5)] }

func randomRoomConfig(rnd *rand.Rand) room.Config {
	c := room.Config{
		Capacity:    rnd.IntN(4),
		SessionTTL:  rushgate.Duration([]time.Duration{30 * time.Second, 2 * time.Minute}[rnd.IntN(2)]),
		Grace:       rushgate.Duration([]time.Duration{10 * time.Second, time.Minute}[rnd.IntN(2)]),
		IdleTimeout: rushgate.Duration([]time.Duration{40 * time.Second, 2 * time.Minute}[rnd.IntN(2)]),
		Paused:      rnd.IntN(8) == 0,
		Mode:        []room.Mode{"", "", "", room.ModePassthrough, room.ModeReject, room.ModeQueueAll}[rnd.IntN(6)],
		Drop:        randomDrop(rnd),
	}
	if c.Capacity == 0 || rnd.IntN(3) == 0 {
		c.Rate = &room.Rate{Admits: 1 + rnd.IntN(3), Per: rushgate.Duration([]time.Duration{10 * time.Second, time.Minute}[rnd.IntN(2)])}
	}
	return c
}

// CompareAuctions runs a random sequence of auction steps on a and b, whose clocks read the same: bids,
// proxies, buy-now, soft close and the close at the end as the clock moves, the operator's extend,
// end-now and amend.
func CompareAuctions(t *testing.T, seed uint64, a, b Harness) {
	compareAt(t, seed, a, b, randomAuctionStep, histories, func(r *record.DB, id string) string {
		// What happened, not the state: the embedded backend keeps an auction's config there too.
		evs, err := r.Events(ctx, id)
		return eventsOf(evs) + auctionError(err)
	})
}

// CompareDrops runs a random sequence of drop steps on a and b, whose clocks read the same: claims
// within and outside their window as the clock moves, per-visitor limits, idempotent repeats, restocks
// and corrections, listed and generated codes.
func CompareDrops(t *testing.T, seed uint64, a, b Harness) {
	compareAt(t, seed, a, b, randomDropStep, dropsNow, func(r *record.DB, id string) string {
		cs, err := r.Claims(ctx, id)
		return claimsOf(cs, err)
	})
}

// compareAt compares a and b under random steps that draw makes at a's time; after each step, now
// sums up what each holds, and when both keep a record, after every recordEvery steps, recorded what it
// holds of each entity (a difference there stays until it is seen).
func compareAt(t *testing.T, seed uint64, a, b Harness, draw func(*rand.Rand, time.Time) step, now func(*side) string,
	recorded func(r *record.DB, id string) string) {
	t.Helper()
	records, n := a.Record != nil && b.Record != nil, 0
	compare(t, seed, newSide(a), newSide(b), func(rnd *rand.Rand) step {
		st := draw(rnd, a.Now())
		n++
		read := records && n%recordEvery == 0
		return step{st.what, func(s *side) string {
			out := st.do(s) + " " + now(s)
			if records && s.h.Settle != nil {
				// After every step: Redis's recorder reads the auctions it records, and a read
				// closes one past its end, so a later pass would close it at another time.
				s.h.Settle()
			}
			if read {
				out += recordOf(s, recorded)
			}
			return out
		}}
	}, nil)
}

// recordEvery is how many steps the comparisons make between two reads of the records, which under
// the race detector cost more than the steps.
const recordEvery = 10

// recordOf sums up what a side's record holds of every entity the steps name.
func recordOf(s *side, recorded func(r *record.DB, id string) string) string {
	var b strings.Builder
	for _, id := range []string{"x1", "x2", "d1", "d2"} {
		fmt.Fprintf(&b, " record %s: %s", id, recorded(s.h.Record, id))
	}
	return b.String()
}

// outcomeOf writes an auction step's answer: its state but for the revision (each backend's own) and
// its events, times to the millisecond.
func outcomeOf(o auction.Outcome, err error) string {
	if err != nil {
		return auctionError(err)
	}
	return stateOf(o.State) + " events=" + eventsOf(o.Events)
}

func stateOf(st auction.State) string {
	st.Rev = ""
	st.EndsAt = st.EndsAt.Truncate(time.Millisecond)
	b, err := json.Marshal(st)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func eventsOf(evs []auction.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "[%d %s %s %s %d %t %s]", e.Seq, e.Kind, ms(e.At), e.Bidder, e.Price, e.Proxy, ms(e.EndsAt))
	}
	return b.String()
}

// histories sums up both auctions' whole feeds, what their live pages show, to compare after every
// step.
func histories(s *side) string {
	h := fnv.New64a()
	for _, id := range []string{"x1", "x2"} {
		evs, err := s.h.Auctions.Events(ctx, id, 0, 1000)
		fmt.Fprint(h, id, eventsOf(evs), auctionError(err))
	}
	return fmt.Sprintf("history=%x", h.Sum64())
}

func auctionError(err error) string {
	if err == nil {
		return ""
	}
	if tl, ok := errors.AsType[*auction.TooLowError](err); ok {
		return fmt.Sprint("too_low:", tl.Min)
	}
	return named(err, []sentinel{{auction.ErrNotFound, "not_found"},
		{auction.ErrNotStarted, "not_started"}, {auction.ErrClosed, "closed"},
		{auction.ErrBuyNowGone, "buy_now_gone"}, {auction.ErrInvalidAmount, "invalid_amount"},
		{auction.ErrStarted, "started"}, {rushgate.ErrStale, "stale"}})
}

func randomAuctionStep(rnd *rand.Rand, now time.Time) step {
	id := []string{"x1", "x2"}[rnd.IntN(2)]
	bidder := []string{"alice", "bob", "carol", "dan"}[rnd.IntN(4)]
	switch n := rnd.IntN(100); {
	case n < 8:
		c := randomAuctionConfig(rnd, now)
		return step{fmt.Sprintf("put %s %s", id, stateOf(auction.State{Config: c})), func(s *side) string {
			return auctionError(s.h.Auctions.Put(ctx, id, c))
		}}
	case n < 10:
		return step{"delete " + id, func(s *side) string { return auctionError(s.h.Auctions.Delete(ctx, id)) }}
	case n < 45:
		b := auction.Bid{Bidder: bidder, Exact: rnd.IntN(3) == 0, Max: 900 + int64(rnd.IntN(40))*50}
		looked := rnd.IntN(3) == 0 // names the revision it last looked at, as a service does
		return step{fmt.Sprintf("bid %s %+v (looked %t)", id, b, looked), func(s *side) string {
			return outcomeOf(s.h.Auctions.Bid(ctx, id, s.rev(id, looked), b))
		}}
	case n < 50:
		looked := rnd.IntN(3) == 0
		return step{fmt.Sprintf("buy now %s %s (looked %t)", id, bidder, looked), func(s *side) string {
			return outcomeOf(s.h.Auctions.BuyNow(ctx, id, s.rev(id, looked), bidder))
		}}
	case n < 60:
		return step{"get " + id, func(s *side) string {
			st, err := s.h.Auctions.Get(ctx, id)
			if err != nil {
				return auctionError(err)
			}
			s.revs[id] = st.Rev
			return stateOf(st)
		}}
	case n < 63:
		return step{"bidders " + id + " " + bidder, func(s *side) string {
			n, err := s.h.Auctions.Bidders(ctx, id)
			has, err2 := s.h.Auctions.HasBidder(ctx, id, bidder)
			return fmt.Sprint(n, has, auctionError(errors.Join(err, err2)))
		}}
	case n < 66:
		end := now.Add(time.Duration(rnd.IntN(240)-60) * time.Second).Truncate(time.Millisecond)
		return step{"reschedule " + id + " " + ms(end), func(s *side) string { return outcomeOf(s.h.Auctions.Reschedule(ctx, id, end)) }}
	case n < 69:
		title := fmt.Sprint("title ", rnd.IntN(100))
		return step{"amend " + id + " " + title, func(s *side) string {
			st, err := s.h.Auctions.Get(ctx, id)
			if err != nil {
				return auctionError(err)
			}
			c := st.Config
			c.Title = title
			return outcomeOf(s.h.Auctions.Amend(ctx, id, st.Rev, c))
		}}
	case n < 73:
		return step{"close " + id, func(s *side) string { return outcomeOf(s.h.Auctions.Close(ctx, id)) }}
	case n < 76:
		return step{"due", func(s *side) string {
			ids, next, err := s.h.Auctions.Due(ctx, 10)
			slices.Sort(ids)
			s.due, s.next = ids, next.Truncate(time.Millisecond)
			return auctionError(err)
		}}
	default:
		return advance(rnd, time.Second, 10*time.Second, 30*time.Second, 61*time.Second)
	}
}

// randomAuctionConfig draws an auction that opens soon or has opened, ends within minutes, and that a
// few bids of about 1,000 to 3,000 reach its reserve, its buy-now and its increments' tiers.
func randomAuctionConfig(rnd *rand.Rand, now time.Time) auction.Config {
	now = now.Truncate(time.Millisecond)
	c := auction.Config{
		Title: "lot", Currency: "EUR", StartPrice: 1000,
		Increment: auction.Increment{Tiers: []auction.Tier{{From: 0, Step: 50}, {From: 2000, Step: 100}}},
		StartsAt:  now.Add(time.Duration(rnd.IntN(40)-20) * time.Second),
		EndsAt:    now.Add(time.Duration(60+rnd.IntN(180)) * time.Second),
	}
	if rnd.IntN(3) == 0 {
		c.ReservePrice = ptr(int64(1500 + rnd.IntN(10)*100))
	}
	if rnd.IntN(2) == 0 {
		c.BuyNowPrice = ptr(int64(2500 + rnd.IntN(10)*100))
	}
	if rnd.IntN(2) == 0 {
		c.SoftClose = &auction.SoftClose{Window: rushgate.Duration(30 * time.Second), Extend: rushgate.Duration(time.Duration(10+rnd.IntN(40)) * time.Second)}
	}
	return c
}

// listedCodes are the codes a drop that lists codes hands out, in order.
var listedCodes = []string{"C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"}

// claimOf writes a claim; a generated code, random on each side, by whether it carries its claim's
// number as generated codes do.
func claimOf(c drop.Claim) string {
	code := c.Code
	if !slices.Contains(listedCodes, code) {
		code = fmt.Sprint("generated:", strings.HasSuffix(code, fmt.Sprint("-", c.Seq)) && len(code) == len(drop.NewCode())+len(fmt.Sprint("-", c.Seq)))
	}
	return fmt.Sprintf("[%s %d %s %s %s]", c.ID, c.Seq, code, c.Visitor, ms(c.ClaimedAt)) // Key is the record's
}

func claimsOf(cs []drop.Claim, err error) string {
	if err != nil {
		return dropError(err)
	}
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(claimOf(c))
	}
	return b.String()
}

func dropError(err error) string {
	if err == nil {
		return ""
	}
	if ac, ok := errors.AsType[*drop.AlreadyClaimedError](err); ok {
		return "already_claimed:" + claimsOf(ac.Claims, nil)
	}
	return named(err, []sentinel{{drop.ErrNotFound, "not_found"}, {drop.ErrSoldOut, "sold_out"},
		{drop.ErrNotOpen, "not_open"}, {drop.ErrStarted, "started"},
		{drop.ErrBelowClaimed, "below_claimed"}, {rushgate.ErrStale, "stale"}})
}

// dropsNow sums up both drops as anyone sees them, and their claims, to compare after every step.
func dropsNow(s *side) string {
	h := fnv.New64a()
	for _, id := range []string{"d1", "d2"} {
		in, err := s.h.Drops.Get(ctx, id)
		in.Rev, in.Written = "", 0 // each store's own (Written: by its own clock)
		fmt.Fprintf(h, "%s %+v %s", id, in, dropError(err))
		fmt.Fprint(h, claimsOf(s.h.Drops.Claims(ctx, id, 0, 100)))
	}
	ids, err := s.h.Drops.List(ctx, "", 10)
	fmt.Fprint(h, ids, dropError(err))
	return fmt.Sprintf("drops=%x", h.Sum64())
}

func randomDropStep(rnd *rand.Rand, now time.Time) step {
	id := []string{"d1", "d2"}[rnd.IntN(2)]
	v := []string{"v1", "v2", "v3", "v4"}[rnd.IntN(4)]
	switch n := rnd.IntN(100); {
	case n < 8:
		c := randomDropConfig(rnd, now)
		return step{fmt.Sprintf("put %s %+v closes=%v", id, c, c.ClosesAt), func(s *side) string { return dropError(s.h.Drops.Put(ctx, id, c)) }}
	case n < 10:
		return step{"delete " + id, func(s *side) string { return dropError(s.h.Drops.Delete(ctx, id)) }}
	case n < 50:
		key := []string{"", "", "k1", "k2"}[rnd.IntN(4)]
		looked := rnd.IntN(3) == 0 // names the revision it last looked at, as a service does
		return step{fmt.Sprintf("claim %s %s %q (looked %t)", id, v, key, looked), func(s *side) string {
			c, created, err := s.h.Drops.Claim(ctx, id, s.rev(id, looked), v, key)
			if err != nil {
				return dropError(err)
			}
			return fmt.Sprint(claimOf(c), created)
		}}
	case n < 53:
		return step{"mine " + id + " " + v, func(s *side) string { return claimsOf(s.h.Drops.Mine(ctx, id, v)) }}
	case n < 55:
		return step{"look " + id, func(s *side) string {
			in, err := s.h.Drops.Get(ctx, id)
			s.revs[id] = in.Rev
			return dropError(err)
		}}
	case n < 58:
		return step{"codes " + id, func(s *side) string {
			codes, err := s.h.Drops.Codes(ctx, id)
			return fmt.Sprint(codes, dropError(err))
		}}
	case n < 68:
		stock, per := 1+rnd.IntN(8), 1+rnd.IntN(3)
		open := rnd.IntN(3)
		return step{fmt.Sprintf("amend %s stock=%d per=%d open=%d", id, stock, per, open), func(s *side) string {
			in, err := s.h.Drops.Get(ctx, id)
			if err != nil {
				return dropError(err)
			}
			c := in.Config
			c.Title, c.Stock, c.PerVisitor = "amended", stock, max(per, c.PerVisitor)
			at := s.h.Now().Truncate(time.Millisecond)
			switch open {
			case 1: // close now
				c.ClosesAt = &at
				if !at.After(c.OpensAt) {
					c.OpensAt = at.Add(-time.Second)
				}
			case 2: // open now, until later
				later := at.Add(time.Minute)
				c.OpensAt, c.ClosesAt = at, &later
			}
			return dropError(s.h.Drops.Amend(ctx, id, in.Rev, c))
		}}
	default:
		return advance(rnd, time.Second, 10*time.Second, 30*time.Second, 61*time.Second)
	}
}

// randomDropConfig draws a small drop, open now or soon, sometimes closing within minutes, sometimes
// listing its codes.
func randomDropConfig(rnd *rand.Rand, now time.Time) drop.Config {
	now = now.Truncate(time.Millisecond)
	c := drop.Config{Title: "drop", Stock: 1 + rnd.IntN(5), OpensAt: now.Add(time.Duration(rnd.IntN(40)-20) * time.Second)}
	c.PerVisitor = 1 + rnd.IntN(min(c.Stock, 2))
	if rnd.IntN(2) == 0 {
		closes := c.OpensAt.Add(time.Duration(30+rnd.IntN(120)) * time.Second)
		c.ClosesAt = &closes
	}
	if rnd.IntN(3) == 0 {
		c.Codes = listedCodes
	}
	return c
}
