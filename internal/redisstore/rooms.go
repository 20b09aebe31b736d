package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

var (
	_ room.Store   = (*Rooms)(nil)
	_ room.Pinger  = (*Rooms)(nil)
	_ room.Watcher = (*Rooms)(nil)
)

// preQueueSpan must equal SPAN in lua/lib.lua.
const preQueueSpan = int64(1) << 50

// lineTTL bounds how long a visitor's line pointer outlives its last join; lineTTLArg is it as the
// scripts take it, in seconds.
const lineTTL = 24 * time.Hour

// A visitor's join lock on Cluster (see Rooms.Join) lives joinLockTimeouts times the store's timeout,
// longer than the few steps of a join each bounded by it, so that only a rushgate that died holding it
// leaves it to expire; a join sends no step after that long. A join that finds it taken tries again
// after joinLockRetry, doubling the wait each time up to joinLockMaxRetry, so that a client sending many
// joins with one token at once costs Redis a few calls per join rather than hundreds. Rooms remember a
// join's fence (lua/line.lua) fenceKeepLocks times the lock's life, long after any step of the join
// could still arrive.
const (
	joinLockTimeouts = 10
	joinLockRetry    = time.Millisecond
	joinLockMaxRetry = 64 * time.Millisecond
	fenceKeepLocks   = 10
)

var lineTTLArg = itoa(int64(lineTTL / time.Second))

// Rooms is the Redis implementation of [room.Store].
type Rooms struct {
	*conn
	batched func(visits int)

	// A visitor's join lock lives lockLife (joinLockTimeouts), lockMS as line.lua takes it; rooms
	// and the visitor's own key remember a fence fenceKeepMS, as the scripts take it (fenceKeepLocks).
	lockLife            time.Duration
	lockMS, fenceKeepMS string

	visits *batcher[string, visit, visited] // by room id (see visits.go)

	healthKeys sync.Map // Cluster slot -> its health key (see Ping)
}

func newRooms(c *conn, batched func(visits int)) *Rooms {
	lockLife := joinLockTimeouts * c.timeout
	s := &Rooms{conn: c, batched: batched, lockLife: lockLife,
		lockMS: itoa(lockLife.Milliseconds()), fenceKeepMS: itoa((fenceKeepLocks * lockLife).Milliseconds())}
	s.visits = newBatcher(c.timeout, s.sendVisits)
	return s
}

// PutRoom implements [room.Store]. The room is written by one script in its own slot, then added to
// the room set, which lives in another; a crash between the two leaves a room that a later PutRoom
// lists, never a half-written room.
func (s *Rooms) PutRoom(ctx context.Context, id string, cfg room.Config) error {
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var ratePer, rateAdmits, opens int64
	if cfg.Rate != nil {
		rateAdmits, ratePer = int64(cfg.Rate.Admits), time.Duration(cfg.Rate.Per).Milliseconds()
	}
	if cfg.OpensAt != nil {
		opens = cfg.OpensAt.UnixMilli()
	}
	paused := "0"
	if cfg.Paused {
		paused = "1"
	}
	// The set of rooms (another slot) hears of the room first, as drops' lists do (see made): a failure
	// between the steps leaves at most an id without a room, which its readers skip, never a room that
	// no other instance admits to, samples or lists.
	if _, err := s.do(ctx, s.rdb.B().Sadd().Key(s.keys.rooms()).Member(id).Build()); err != nil {
		return err
	}
	_, err = s.run(ctx, putScript, s.keys.room(id)[:1], itoa(int64(cfg.Capacity)), itoa(rateAdmits), itoa(ratePer),
		itoa(time.Duration(cfg.SessionTTL).Milliseconds()), itoa(time.Duration(cfg.Grace).Milliseconds()),
		itoa(time.Duration(cfg.IdleTimeout).Milliseconds()), itoa(opens), paused, string(js), newEpoch(), string(cfg.Mode))
	return err
}

// Room implements [room.Store].
func (s *Rooms) Room(ctx context.Context, id string) (room.Config, error) {
	m, err := s.do(ctx, s.rdb.B().Hget().Key(s.keys.room(id)[0]).Field("cfg").Build())
	if errors.Is(err, errNil) {
		return room.Config{}, room.ErrNotFound
	}
	if err != nil {
		return room.Config{}, err
	}
	js, _ := m.ToString()
	var cfg room.Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return room.Config{}, fmt.Errorf("redisstore: room %s: %w", id, err)
	}
	return cfg, nil
}

// DeleteRoom implements [room.Store].
func (s *Rooms) DeleteRoom(ctx context.Context, id string) error {
	v, err := s.run(ctx, deleteScript, s.keys.room(id))
	if err != nil {
		return err
	}
	if _, err := s.do(ctx, s.rdb.B().Srem().Key(s.keys.rooms()).Member(id).Build()); err != nil {
		return err
	}
	if _, err := s.do(ctx, s.rdb.B().Unlink().Key(s.keys.invites(id)).Build()); err != nil {
		return err
	}
	if integer(v) == 0 {
		return room.ErrNotFound
	}
	return nil
}

// Rooms implements [room.Store].
func (s *Rooms) Rooms(ctx context.Context) ([]string, error) {
	m, err := s.do(ctx, s.rdb.B().Smembers().Key(s.keys.rooms()).Build())
	if err != nil {
		return nil, err
	}
	ids, _ := m.AsStrSlice()
	sort.Strings(ids)
	return ids, nil
}

// Join implements [room.Store]. A visitor's line pointer (a key in the visitor's own slot) lists the
// lines it may be in, the one it joined last first. A join takes its place in the room's slot and swaps
// the pointer to this room; then it leaves the other lines the pointer listed, and settles the pointer on
// this room alone. The lines to leave stay listed until they have been left, so a rushgate that dies on
// the way, or a Redis error, leaves them listed, and the visitor's next join leaves them too.
//
// On standalone Redis the place and the swap are one script, so however a visitor's joins race they
// form one order, and each leaves only lines that the join before it joined. On Cluster, where a script
// cannot span the two slots, a join first takes the visitor's join lock and swaps the pointer in one
// step (line.lua), then takes its place, and releases the lock when it has settled: a visitor's joins
// run one at a time, so none leaves a line another has just joined. Should a join outlive its lock (a
// stalled rushgate, a step held up on its way), the lock's fence makes the rooms refuse its late steps.
//
// A visitor without a pointer is in its origin's line at most (see room.Entrant): its first join, the
// one that issued its token, came before any other, so a later join that finds no pointer treats the
// origin as what it pointed to. That first join writes no pointer, and neither does a join of the origin
// by a visitor without one, which is what most of a crowd sends: Redis holds no key for a visitor that
// never left its first line, and on Cluster its first join is a single round trip.
func (s *Rooms) Join(ctx context.Context, id string, e room.Entrant) (room.Status, error) {
	if !e.New && !e.Switch {
		other, err := s.waitingElsewhere(ctx, id, e)
		if err != nil {
			return room.Status{}, err
		}
		if other != "" {
			// Only a room that exists is one to switch to; the read is on this rare path alone.
			if _, err := s.Room(ctx, id); err != nil {
				return room.Status{}, err
			}
			return room.Status{}, &room.ElsewhereError{Room: other}
		}
	}
	switch {
	case e.New: // its origin is this room, and a new visitor's pointer is never written
		st, _, err := s.visit(ctx, id, e.Visitor, "new", "")
		return st, err
	case s.cluster:
		return s.joinLocked(ctx, id, e)
	}
	st, others, err := s.visit(ctx, id, e.Visitor, "join", e.Origin)
	if err != nil || others == "" {
		return st, err
	}
	return st, s.settle(ctx, id, e.Visitor, others, "")
}

// waitingElsewhere returns the room other than id whose line the visitor waits in, "" for none: the
// first room its line pointer names (its origin without one), if the visitor is still in that room's
// queue. A visitor joining the line it last joined (a reload) costs one GET. The pointer and the queue
// live in different slots, so this is a read before the join rather than part of it: a join of the same
// visitor racing it elsewhere may still be moved by it, which only the visitor's own concurrent
// requests can cause, never a page opened on its own.
func (s *Rooms) waitingElsewhere(ctx context.Context, id string, e room.Entrant) (string, error) {
	m, err := s.do(ctx, s.rdb.B().Get().Key(s.keys.line(e.Visitor)).Build())
	if err != nil && !errors.Is(err, errNil) {
		return "", err
	}
	pointer, _ := m.ToString()
	other := e.Origin
	if f := strings.Fields(pointer); len(f) > 0 {
		other = f[0]
	}
	if other == "" || other == id {
		return "", nil
	}
	_, err = s.do(ctx, s.rdb.B().Zscore().Key(s.keys.room(other)[1]).Member(e.Visitor).Build())
	if errors.Is(err, errNil) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return other, nil
}

// joinLocked is a join on Cluster: under the visitor's join lock, the pointer is swapped before the
// place is taken, and every step in a room carries the lock's fence. No step is sent once the lock may
// have expired.
func (s *Rooms) joinLocked(ctx context.Context, id string, e room.Entrant) (room.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lockLife)
	defer cancel()
	others, fence, err := s.lockLine(ctx, id, e)
	if err != nil {
		return room.Status{}, err
	}
	st, _, err := s.visit(ctx, id, e.Visitor, "fenced", fence)
	refused := errors.Is(err, room.ErrClosed) || errors.Is(err, room.ErrNotFound) || errors.Is(err, rushgate.ErrSoldOut)
	if others != "" && (refused || err == nil && st.State == room.StateAdmitted) {
		// No place taken here (the room takes no joins, is sold out or is not there, or the visitor is
		// admitted in it, which a join only collects): the visitor stays where it was, so the pointer
		// goes back to the lines it listed (unless a later join changed it), and the lock goes with it.
		// Left naming this room first, it hid the line the visitor waits in from the next join, which
		// then took the visitor out of it without a switch.
		_, serr := s.run(ctx, settleScript, s.keys.moving(e.Visitor)[:2], id+" "+others, others, fence)
		return st, errors.Join(err, serr)
	}
	if err != nil || st.State != room.StateWaiting {
		// The pointer may now list this room too: a line the visitor is not in, which a later join
		// leaves for nothing. Only the lock must go.
		others = ""
	}
	return st, errors.Join(err, s.settle(ctx, id, e.Visitor, others, fence))
}

// lockLine takes the visitor's join lock and swaps its pointer to the room, returning the other lines it
// may still be in and the join's fence. While another join of the visitor holds the lock it retries, for
// at most the store's timeout.
func (s *Rooms) lockLine(ctx context.Context, id string, e room.Entrant) (string, string, error) {
	keys := s.keys.moving(e.Visitor)
	deadline := time.Now().Add(s.timeout)
	for wait := joinLockRetry; ; wait = min(2*wait, joinLockMaxRetry) {
		m, err := s.run(ctx, lineScript, keys, id, lineTTLArg, e.Origin, s.now(), s.lockMS, s.fenceKeepMS)
		if err != nil {
			return "", "", err
		}
		if r, _ := m.ToArray(); len(r) == 3 && integer(r[0]) == 1 {
			others, _ := r[1].ToString()
			fence, _ := r[2].ToString()
			return others, fence, nil
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("%w: another join of this visitor is in progress", rushgate.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return "", "", mapError(ctx.Err())
		case <-time.After(wait/2 + mrand.N(wait/2)):
		}
	}
}

// settle leaves the other lines a join's swap found (space-separated; none when empty), then settles the
// pointer on the room and, on Cluster, releases the join lock that fence names (empty on standalone). A
// line that cannot be left stays listed, so the visitor's next join leaves it.
func (s *Rooms) settle(ctx context.Context, id, visitor, others, fence string) error {
	var err error
	for _, other := range strings.Fields(others) {
		if _, err = s.leave(ctx, other, visitor, "line", fence); err != nil && !errors.Is(err, room.ErrNotFound) {
			break
		}
		err = nil
	}
	listed := ""
	if others != "" && err == nil {
		listed = id + " " + others
	}
	if listed == "" && fence == "" {
		return err
	}
	_, serr := s.run(ctx, settleScript, s.keys.moving(visitor)[:2], listed, id, fence)
	return errors.Join(err, serr)
}

// SetUnits implements [room.Store].
func (s *Rooms) SetUnits(ctx context.Context, id, drop string, l rushgate.Level) error {
	_, err := s.stock(ctx, id, drop, "set", strconv.Itoa(max(l.Left, -1)), l)
	return err
}

// Unhold implements [room.Store].
func (s *Rooms) Unhold(ctx context.Context, id, drop string) error {
	_, err := s.stock(ctx, id, drop, "unhold", "", rushgate.Level{})
	return err
}

// Restock implements [room.Store].
func (s *Rooms) Restock(ctx context.Context, id, drop string, l rushgate.Level) (bool, error) {
	return s.stock(ctx, id, drop, "restock", strconv.Itoa(l.Stock), l)
}

// msOr0 is t in Unix milliseconds, "0" for the zero time (none).
func msOr0(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return itoa(t.UnixMilli())
}

// SoldOut implements [room.Store]: every instance's streams of the room hear of it at once.
func (s *Rooms) SoldOut(ctx context.Context, id, drop string) error {
	_, err := s.stock(ctx, id, drop, "soldout", "", rushgate.Level{})
	return err
}

// stock runs lua/stock.lua's op about drop with n and the drop's level l, and reports whether it was
// news (a restock that changed the stock).
func (s *Rooms) stock(ctx context.Context, id, drop, op, n string, l rushgate.Level) (bool, error) {
	m, err := s.run(ctx, stockScript, s.keys.room(id)[:1], op, n, s.keys.changes(id), strconv.Itoa(l.Stock),
		itoa(l.Written), msOr0(l.Closes), msOr0(l.Opens), drop)
	if err != nil {
		return false, err
	}
	if integer(m) == -1 {
		return false, room.ErrNotFound
	}
	return integer(m) == 1, nil
}

// AddInvites implements [room.Store].
func (s *Rooms) AddInvites(ctx context.Context, id string, codes []string) (int, error) {
	n, err := s.invite(ctx, id, append([]string{"add"}, codes...)...)
	return int(n), err
}

// TakeInvite implements [room.Store].
func (s *Rooms) TakeInvite(ctx context.Context, id, code string) (bool, error) {
	n, err := s.invite(ctx, id, "take", code)
	return n == 1, err
}

// ReturnInvite implements [room.Store].
func (s *Rooms) ReturnInvite(ctx context.Context, id, code string) error {
	_, err := s.invite(ctx, id, "return", code)
	return err
}

func (s *Rooms) invite(ctx context.Context, id string, args ...string) (int64, error) {
	m, err := s.run(ctx, inviteScript, []string{s.keys.room(id)[0], s.keys.invites(id)}, args...)
	if err != nil {
		return 0, err
	}
	if n := integer(m); n >= 0 {
		return n, nil
	}
	return 0, room.ErrNotFound
}

// Hold implements [room.Store].
func (s *Rooms) Hold(ctx context.Context, id, drop, visitor, admissionID string) (bool, error) {
	m, err := s.run(ctx, holdScript, s.keys.room(id), s.now(), visitor, admissionID, drop)
	if err != nil {
		return false, err
	}
	switch integer(m) {
	case -1:
		return false, room.ErrNotFound
	case -2:
		return false, room.ErrNotAdmitted
	case -3:
		return false, rushgate.ErrSoldOut
	case 1:
		return true, nil
	}
	return false, nil
}

// Status implements [room.Store].
func (s *Rooms) Status(ctx context.Context, id, visitor string) (room.Status, error) {
	st, _, err := s.visit(ctx, id, visitor, "status", "")
	return st, err
}

// Touch implements [room.Store].
func (s *Rooms) Touch(ctx context.Context, id string, visitors []string) error {
	v, err := s.run(ctx, touchScript, s.keys.room(id), append([]string{s.now()}, visitors...)...)
	if err != nil {
		return err
	}
	if integer(v) < 0 {
		return room.ErrNotFound
	}
	return nil
}

// Leave implements [room.Store]. A visitor's line pointer is left as it is: it expires, and a stale
// one only makes a later join leave a line the visitor is no longer in, which is a no-op.
func (s *Rooms) Leave(ctx context.Context, id, visitor string) (bool, error) {
	return s.leave(ctx, id, visitor, "all", "")
}

// leave takes the visitor out of the room's line ("line") or out of the room ("all"); fence is the
// Cluster join's doing it ("line" only, see lua/line.lua), or empty.
func (s *Rooms) leave(ctx context.Context, id, visitor, what, fence string) (bool, error) {
	keys, args := s.keys.room(id), []string{visitor, s.keys.changes(id), what, fence}
	if what == "line" && !s.cluster {
		keys, args = append(keys, s.keys.line(visitor)), append(args, id)
	}
	v, err := s.run(ctx, leaveScript, keys, args...)
	if err != nil {
		return false, err
	}
	switch integer(v) {
	case -1:
		return false, room.ErrNotFound
	case 1:
		return true, nil
	default:
		return false, nil
	}
}

// Release implements [room.Store].
func (s *Rooms) Release(ctx context.Context, id, visitor, admissionID string) error {
	v, err := s.run(ctx, releaseScript, s.keys.room(id), visitor, admissionID, s.now(), s.keys.changes(id))
	if err != nil {
		return err
	}
	switch integer(v) {
	case -1:
		return room.ErrNotFound
	case 0:
		return room.ErrNotAdmitted
	default:
		return nil
	}
}

// Active implements [room.Store].
func (s *Rooms) Active(ctx context.Context, id, visitor, admissionID string) (bool, error) {
	v, err := s.run(ctx, activeScript, s.keys.room(id), visitor, admissionID, s.now())
	if err != nil {
		return false, err
	}
	if integer(v) < 0 {
		return false, room.ErrNotFound
	}
	return integer(v) == 1, nil
}

// Stats implements [room.Store].
func (s *Rooms) Stats(ctx context.Context, id string) (room.Stats, error) {
	v, err := s.run(ctx, statsScript, s.keys.room(id), s.now())
	if err != nil {
		return room.Stats{}, err
	}
	r := ints(v)
	if r[0] < 0 {
		return room.Stats{}, room.ErrNotFound
	}
	return room.Stats{Waiting: r[0], Active: r[1], AdmittedTotal: r[2], JoinedTotal: r[3], IdleTotal: r[4], GraceTotal: r[5]}, nil
}

// Admit implements [room.Store]. Every instance runs it; the script is the only writer of admissions,
// so gates racing on several instances admit nobody twice and never exceed capacity or rate.
func (s *Rooms) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	v, err := s.run(ctx, admitScript, s.keys.room(id), itoa(int64(max)), s.now(), s.keys.changes(id), s.fenceKeepMS)
	if err != nil {
		return room.Tick{}, err
	}
	r, _ := v.ToArray()
	if len(r) == 1 {
		return room.Tick{}, room.ErrNotFound
	}
	t := room.Tick{Expired: strs(r[1]), Idle: strs(r[2]), More: integer(r[3]) == 1, AdmittedTotal: integer(r[5]),
		Waiting: integer(r[6]), DropClosed: len(r) > 7 && integer(r[7]) == 1}
	if next := integer(r[4]); next > 0 {
		t.Next = time.UnixMilli(next).UTC()
	}
	if len(r) > 9 {
		if opens := integer(r[8]); opens > 0 {
			t.DropOpens = time.UnixMilli(opens).UTC()
		}
		t.Free = integer(r[9])
	}
	flat, _ := r[0].ToArray()
	for i := 0; i+2 < len(flat); i += 3 {
		v, _ := flat[i].ToString()
		aid, _ := flat[i+1].ToString()
		t.Admitted = append(t.Admitted, room.Admitted{Visitor: v, Admission: room.Admission{
			ID: aid, ExpiresAt: time.UnixMilli(integer(flat[i+2])).UTC(),
		}})
	}
	return t, nil
}

func strs(m rueidis.RedisMessage) []string {
	out, _ := m.AsStrSlice()
	if len(out) == 0 {
		return nil
	}
	return out
}

// Watch implements [room.Watcher]: one subscription per room per instance, on which every script that
// changes a visitor's state publishes the visitor's id. Pub/sub may drop messages while disconnected;
// that only delays a push until the next paced refresh, since streams re-read their status then.
func (s *Rooms) Watch(ctx context.Context, id string) <-chan []string {
	out := make(chan []string, 64)
	go func() {
		defer close(out)
		_ = s.rdb.Receive(ctx, s.rdb.B().Subscribe().Channel(s.keys.changes(id)).Build(), func(m rueidis.PubSubMessage) {
			select {
			case out <- strings.Fields(m.Message):
			default: // the gate is behind; the paced refresh catches up
			}
		})
	}()
	return out
}

func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
