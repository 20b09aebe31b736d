// Package redisstore is the Redis backend of [room.Store], for many rushgate instances sharing one
// line. Every room operation is one Lua script (embedded from lua/), run with EVALSHA and re-sent with
// EVAL when Redis has lost it (SCRIPT FLUSH, restart, failover). Scripts take time from the server's
// TIME, so instances with skewed clocks still agree; all keys of a room share one hash tag, so the same
// code serves standalone Redis and Redis Cluster. Joins and status reads, the requests a crowd sends,
// are batched: concurrent ones share one call of the visit script (see visits.go).
//
// The client is rueidis, chosen on measurement over go-redis v9: its automatic pipelining merges the
// script calls of concurrent HTTP handlers into shared writes, and a join is mostly its round trips to
// Redis (write syscalls were a third of a join's CPU with go-redis). BenchmarkClients measures the
// two on the join script; docs/benchmarks.md has the figures.
package redisstore

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

var (
	_ room.Store   = (*Store)(nil)
	_ room.Pinger  = (*Store)(nil)
	_ room.Watcher = (*Store)(nil)
)

//go:embed lua/*.lua
var luaFS embed.FS

// source returns a room script's text: the shared helpers of lib.lua, then the script itself.
func source(name string) string { return mustSource("lib") + "\n" + mustSource(name) }

// mustSource returns an embedded script; they are compiled in, so a missing one is a build error.
func mustSource(name string) string {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(src)
}

func script(name string) *rueidis.Lua { return rueidis.NewLuaScript(source(name)) }

var (
	putScript     = script("put")
	deleteScript  = script("delete")
	visitScript   = script("visit")
	touchScript   = script("touch")
	leaveScript   = script("leave")
	releaseScript = script("release")
	activeScript  = script("active")
	statsScript   = script("stats")
	admitScript   = script("admit")
	lineScript    = script("line")
	settleScript  = rueidis.NewLuaScript(mustSource("line_settle"))
	// swapScript stands alone: it is not a room script and needs none of lib.lua's helpers.
	swapScript = rueidis.NewLuaScript(mustSource("secret_swap"))
)

// preQueueSpan must equal SPAN in lua/lib.lua.
const preQueueSpan = int64(1) << 50

// lineTTL bounds how long a visitor's line pointer outlives its last join; lineTTLArg is it as the
// scripts take it, in seconds.
const lineTTL = 24 * time.Hour

// A visitor's join lock on Cluster (see Store.Join) lives joinLockTimeouts times the store's timeout,
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

// Options tune a Store.
type Options struct {
	// Prefix starts every key; tests give each store its own so they can share one Redis.
	Prefix string
	// Timeout bounds each operation, so that a slow or absent Redis fails requests fast with
	// ErrUnavailable instead of piling up goroutines; 0 means 500ms.
	Timeout time.Duration
	// Clock, for tests only, fixes the instant scripts use instead of the server's TIME, so that the
	// conformance suite can drive expiry without sleeping. Production leaves it nil.
	Clock func() time.Time
	// Cluster says the keys live in different slots, so no script may touch a room and a visitor's
	// line pointer at once; on standalone Redis the join script moves the pointer itself.
	Cluster bool
	// Batched, when set, is told how many joins and status reads went to Redis in each call of the
	// visit script, for metrics: batches near 1 mean Redis keeps up with the crowd, batches near the
	// limit (64) that it is the bottleneck.
	Batched func(visits int)
}

// Store is the Redis implementation of [room.Store].
type Store struct {
	rdb     rueidis.Client
	keys    keys
	timeout time.Duration
	clock   func() time.Time
	cluster bool
	batched func(visits int)

	// A visitor's join lock lives lockLife (joinLockTimeouts), lockMS as line.lua takes it; rooms
	// and the visitor's own key remember a fence fenceKeepMS, as the scripts take it (fenceKeepLocks).
	lockLife            time.Duration
	lockMS, fenceKeepMS string

	visits *batcher[string, visit, visited] // by room id (see visits.go)
}

// New returns a store over rdb, a standalone or cluster client. The caller closes rdb.
func New(rdb rueidis.Client, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "rg"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	lockLife := joinLockTimeouts * opts.Timeout
	s := &Store{rdb: rdb, keys: keys{prefix: opts.Prefix}, timeout: opts.Timeout, lockLife: lockLife,
		lockMS: itoa(lockLife.Milliseconds()), fenceKeepMS: itoa((fenceKeepLocks * lockLife).Milliseconds()),
		clock: opts.Clock, cluster: opts.Cluster, batched: opts.Batched}
	s.visits = newBatcher(opts.Timeout, s.sendVisits)
	return s
}

// now is the ARGV time override: empty in production, where scripts read TIME.
func (s *Store) now() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.clock().UnixMilli(), 10)
}

// run executes a script within the operation timeout.
func (s *Store) run(ctx context.Context, sc *rueidis.Lua, keys []string, args ...string) (rueidis.RedisMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := sc.Exec(ctx, s.rdb, keys, args).ToMessage()
	return m, mapError(err)
}

// do executes one command within the operation timeout.
func (s *Store) do(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.rdb.Do(ctx, cmd).ToMessage()
	return m, mapError(err)
}

// errNil marks a nil reply, which callers turn into their own outcome.
var errNil = errors.New("redisstore: nil reply")

// mapError turns Redis failures into the domain's: anything that means "Redis did not answer in time
// or cannot serve now" wraps ErrUnavailable; a script error is a bug and stays as it is.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	if rueidis.IsRedisNil(err) {
		return errNil
	}
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		msg := rerr.Error()
		for _, transient := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY"} {
			if strings.HasPrefix(msg, transient) {
				return fmt.Errorf("%w: %w", rushgate.ErrUnavailable, err)
			}
		}
		return fmt.Errorf("redisstore: %w", err)
	}
	if errors.Is(err, context.Canceled) {
		return err // the caller went away; nothing is wrong with Redis
	}
	return fmt.Errorf("%w: %w", rushgate.ErrUnavailable, err)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ints(m rueidis.RedisMessage) []int64 {
	arr, _ := m.ToArray()
	out := make([]int64, len(arr))
	for i := range arr {
		out[i], _ = arr[i].AsInt64()
	}
	return out
}

func integer(m rueidis.RedisMessage) int64 {
	n, _ := m.AsInt64()
	return n
}

// Ping implements [room.Pinger].
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.do(ctx, s.rdb.B().Ping().Build())
	return err
}

// PutRoom implements [room.Store]. The room is written by one script in its own slot, then added to
// the room set, which lives in another; a crash between the two leaves a room that a later PutRoom
// lists, never a half-written room.
func (s *Store) PutRoom(ctx context.Context, id string, cfg room.Config) error {
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
	if _, err := s.run(ctx, putScript, s.keys.room(id)[:1], itoa(int64(cfg.Capacity)), itoa(rateAdmits), itoa(ratePer),
		itoa(time.Duration(cfg.SessionTTL).Milliseconds()), itoa(time.Duration(cfg.Grace).Milliseconds()),
		itoa(time.Duration(cfg.IdleTimeout).Milliseconds()), itoa(opens), paused, string(js), newEpoch()); err != nil {
		return err
	}
	_, err = s.do(ctx, s.rdb.B().Sadd().Key(s.keys.rooms()).Member(id).Build())
	return err
}

// Room implements [room.Store].
func (s *Store) Room(ctx context.Context, id string) (room.Config, error) {
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
func (s *Store) DeleteRoom(ctx context.Context, id string) error {
	v, err := s.run(ctx, deleteScript, s.keys.room(id))
	if err != nil {
		return err
	}
	if _, err := s.do(ctx, s.rdb.B().Srem().Key(s.keys.rooms()).Member(id).Build()); err != nil {
		return err
	}
	if integer(v) == 0 {
		return room.ErrNotFound
	}
	return nil
}

// Rooms implements [room.Store].
func (s *Store) Rooms(ctx context.Context) ([]string, error) {
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
func (s *Store) Join(ctx context.Context, id string, e room.Entrant) (room.Status, error) {
	if !e.New && !e.Switch {
		other, err := s.waitingElsewhere(ctx, id, e)
		if err != nil {
			return room.Status{}, err
		}
		if other != "" {
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
func (s *Store) waitingElsewhere(ctx context.Context, id string, e room.Entrant) (string, error) {
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
func (s *Store) joinLocked(ctx context.Context, id string, e room.Entrant) (room.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lockLife)
	defer cancel()
	others, fence, err := s.lockLine(ctx, id, e)
	if err != nil {
		return room.Status{}, err
	}
	st, _, err := s.visit(ctx, id, e.Visitor, "fenced", fence)
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
func (s *Store) lockLine(ctx context.Context, id string, e room.Entrant) (string, string, error) {
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
func (s *Store) settle(ctx context.Context, id, visitor, others, fence string) error {
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

// Status implements [room.Store].
func (s *Store) Status(ctx context.Context, id, visitor string) (room.Status, error) {
	st, _, err := s.visit(ctx, id, visitor, "status", "")
	return st, err
}

// Touch implements [room.Store].
func (s *Store) Touch(ctx context.Context, id string, visitors []string) error {
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
func (s *Store) Leave(ctx context.Context, id, visitor string) (bool, error) {
	return s.leave(ctx, id, visitor, "all", "")
}

// leave takes the visitor out of the room's line ("line") or out of the room ("all"); fence is the
// Cluster join's doing it ("line" only, see lua/line.lua), or empty.
func (s *Store) leave(ctx context.Context, id, visitor, what, fence string) (bool, error) {
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
func (s *Store) Release(ctx context.Context, id, visitor, admissionID string) error {
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
func (s *Store) Active(ctx context.Context, id, visitor, admissionID string) (bool, error) {
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
func (s *Store) Stats(ctx context.Context, id string) (room.Stats, error) {
	v, err := s.run(ctx, statsScript, s.keys.room(id), s.now())
	if err != nil {
		return room.Stats{}, err
	}
	r := ints(v)
	if r[0] < 0 {
		return room.Stats{}, room.ErrNotFound
	}
	return room.Stats{Waiting: r[0], Active: r[1], AdmittedTotal: r[2]}, nil
}

// Admit implements [room.Store]. Every instance runs it; the script is the only writer of admissions,
// so gates racing on several instances admit nobody twice and never exceed capacity or rate.
func (s *Store) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	v, err := s.run(ctx, admitScript, s.keys.room(id), itoa(int64(max)), s.now(), s.keys.changes(id), s.fenceKeepMS)
	if err != nil {
		return room.Tick{}, err
	}
	r, _ := v.ToArray()
	if len(r) == 1 {
		return room.Tick{}, room.ErrNotFound
	}
	t := room.Tick{Expired: strs(r[1]), Idle: strs(r[2]), More: integer(r[3]) == 1, AdmittedTotal: integer(r[5])}
	if next := integer(r[4]); next > 0 {
		t.Next = time.UnixMilli(next).UTC()
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
func (s *Store) Watch(ctx context.Context, id string) <-chan []string {
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

// LoadOrCreate returns the shared secret called name, storing create's result first if there is none.
// Instances starting at once race with SET NX: all of them end up with the one value stored first. It
// reports whether this call stored it.
func (s *Store) LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	key := s.keys.secret(name)
	m, err := s.do(ctx, s.rdb.B().Get().Key(key).Build())
	if err == nil {
		data, err := m.AsBytes()
		return data, false, err
	}
	if !errors.Is(err, errNil) {
		return nil, false, err
	}
	fresh, err := create()
	if err != nil {
		return nil, false, err
	}
	_, err = s.do(ctx, s.rdb.B().Set().Key(key).Value(string(fresh)).Nx().Build())
	switch {
	case err == nil:
		return fresh, true, nil
	case errors.Is(err, errNil): // another instance stored one first
		data, _, err := s.LoadOrCreate(ctx, name, create)
		return data, false, err
	default:
		return nil, false, err
	}
}

// Swap replaces the shared secret called name with data only if it still holds old, and reports
// whether it did.
func (s *Store) Swap(ctx context.Context, name string, old, data []byte) (bool, error) {
	v, err := s.run(ctx, swapScript, []string{s.keys.secret(name)}, string(old), string(data))
	if err != nil {
		return false, err
	}
	return integer(v) == 1, nil
}
