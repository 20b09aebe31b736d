// Package redisstore is the Redis backend of [room.Store], for many rushgate instances sharing one
// line. Every room operation is one Lua script (embedded from lua/), run with EVALSHA and re-sent with
// EVAL when Redis has lost it (SCRIPT FLUSH, restart, failover). Scripts take time from the server's
// TIME, so instances with skewed clocks still agree; all keys of a room share one hash tag, so the same
// code serves standalone Redis and Redis Cluster.
//
// The client is go-redis v9. rueidis was measured against it on the join script through HTTP handlers
// (BenchmarkClients): see docs/benchmarks.md for the figures and why go-redis was kept.
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

	"github.com/redis/go-redis/v9"

	"github.com/rushgate/rushgate/internal/room"
)

var (
	_ room.Store   = (*Store)(nil)
	_ room.Pinger  = (*Store)(nil)
	_ room.Watcher = (*Store)(nil)
)

//go:embed lua/*.lua
var luaFS embed.FS

func script(name string) *redis.Script {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(lib) + "\n" + string(src))
}

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
)

// preQueueSpan must equal SPAN in lua/lib.lua.
const preQueueSpan = int64(1) << 50

// lineTTL bounds how long a visitor's line pointer outlives its last join.
const lineTTL = 24 * time.Hour

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
}

// Store is the Redis implementation of [room.Store].
type Store struct {
	rdb     redis.UniversalClient
	keys    keys
	timeout time.Duration
	clock   func() time.Time
}

// New returns a store over rdb, which may be a standalone, failover or cluster client.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "rg"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	return &Store{rdb: rdb, keys: keys{prefix: opts.Prefix}, timeout: opts.Timeout, clock: opts.Clock}
}

// now is the ARGV time override: empty in production, where scripts read TIME.
func (s *Store) now() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.clock().UnixMilli(), 10)
}

func (s *Store) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := sc.Run(ctx, s.rdb, keys, args...).Result()
	return v, mapError(err)
}

// mapError turns Redis failures into the domain's: anything that means "Redis did not answer in time
// or cannot serve now" is ErrUnavailable; a script error is a bug and stays as it is.
func mapError(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, transient := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY"} {
			if strings.HasPrefix(msg, transient) {
				return fmt.Errorf("%w: %w", room.ErrUnavailable, err)
			}
		}
		return fmt.Errorf("redisstore: %w", err)
	}
	return fmt.Errorf("%w: %w", room.ErrUnavailable, err)
}

// Ping implements [room.Pinger].
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return mapError(s.rdb.Ping(ctx).Err())
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
	paused := 0
	if cfg.Paused {
		paused = 1
	}
	if _, err := s.run(ctx, putScript, s.keys.room(id)[:1], cfg.Capacity, rateAdmits, ratePer,
		time.Duration(cfg.SessionTTL).Milliseconds(), time.Duration(cfg.Grace).Milliseconds(),
		time.Duration(cfg.IdleTimeout).Milliseconds(), opens, paused, js, newEpoch()); err != nil {
		return err
	}
	return s.cmd(ctx, func(ctx context.Context) error { return s.rdb.SAdd(ctx, s.keys.rooms(), id).Err() })
}

func (s *Store) cmd(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return mapError(fn(ctx))
}

// Room implements [room.Store].
func (s *Store) Room(ctx context.Context, id string) (room.Config, error) {
	var js string
	err := s.cmd(ctx, func(ctx context.Context) error {
		var err error
		js, err = s.rdb.HGet(ctx, s.keys.room(id)[0], "cfg").Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return room.Config{}, room.ErrNotFound
	}
	if err != nil {
		return room.Config{}, err
	}
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
	if err := s.cmd(ctx, func(ctx context.Context) error { return s.rdb.SRem(ctx, s.keys.rooms(), id).Err() }); err != nil {
		return err
	}
	if v.(int64) == 0 {
		return room.ErrNotFound
	}
	return nil
}

// Rooms implements [room.Store].
func (s *Store) Rooms(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.cmd(ctx, func(ctx context.Context) error {
		var err error
		ids, err = s.rdb.SMembers(ctx, s.keys.rooms()).Result()
		return err
	})
	sort.Strings(ids)
	return ids, err
}

// Join implements [room.Store]. The place is taken in the room's slot; then the visitor's line pointer
// (its own slot) is swapped to this room, and the line of the room it pointed to before is left. The
// pointer swaps form one order over all of a visitor's joins, and each join leaves the line its
// predecessor joined only after that join took its place, so however joins race, a visitor ends up in
// at most one line: the one its last swap names.
func (s *Store) Join(ctx context.Context, id, visitor string) (room.Status, error) {
	st, err := s.visit(ctx, id, visitor, "join")
	if err != nil || st.State != room.StateWaiting {
		return st, err
	}
	var prev string
	err = s.cmd(ctx, func(ctx context.Context) error {
		var err error
		prev, err = s.rdb.SetArgs(ctx, s.keys.line(visitor), id, redis.SetArgs{Get: true, TTL: lineTTL}).Result()
		return err
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return st, err
	}
	if prev != "" && prev != id {
		_, err := s.leaveLine(ctx, prev, visitor)
		if err != nil && !errors.Is(err, room.ErrNotFound) {
			return st, err
		}
	}
	return st, nil
}

// leaveLine leaves only the line, keeping any admission the visitor holds there.
func (s *Store) leaveLine(ctx context.Context, id, visitor string) (bool, error) {
	return s.leave(ctx, id, visitor, "line")
}

// Status implements [room.Store].
func (s *Store) Status(ctx context.Context, id, visitor string) (room.Status, error) {
	return s.visit(ctx, id, visitor, "status")
}

func (s *Store) visit(ctx context.Context, id, visitor, mode string) (room.Status, error) {
	v, err := s.run(ctx, visitScript, s.keys.room(id), visitor, mode, s.now(), 1+mrand.Int64N(preQueueSpan-1))
	if err != nil {
		return room.Status{}, err
	}
	r := v.([]any)
	switch r[0].(int64) {
	case -1:
		return room.Status{}, room.ErrNotFound
	case 1:
		return room.Status{State: room.StateWaiting, Position: r[1].(int64)}, nil
	case 2:
		return room.Status{State: room.StateAdmitted, Admission: room.Admission{
			ID: r[1].(string), ExpiresAt: time.UnixMilli(r[2].(int64)).UTC(), Collected: true,
		}}, nil
	default:
		return room.Status{State: room.StateNone}, nil
	}
}

// Touch implements [room.Store].
func (s *Store) Touch(ctx context.Context, id string, visitors []string) error {
	args := make([]any, 0, len(visitors)+1)
	args = append(args, s.now())
	for _, v := range visitors {
		args = append(args, v)
	}
	v, err := s.run(ctx, touchScript, s.keys.room(id), args...)
	if err != nil {
		return err
	}
	if v.(int64) < 0 {
		return room.ErrNotFound
	}
	return nil
}

// Leave implements [room.Store]. A visitor's line pointer is left as it is: it expires, and a stale
// one only makes a later join leave a line the visitor is no longer in, which is a no-op.
func (s *Store) Leave(ctx context.Context, id, visitor string) (bool, error) {
	return s.leave(ctx, id, visitor, "all")
}

func (s *Store) leave(ctx context.Context, id, visitor, what string) (bool, error) {
	v, err := s.run(ctx, leaveScript, s.keys.room(id), visitor, s.keys.changes(id), what)
	if err != nil {
		return false, err
	}
	switch v.(int64) {
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
	switch v.(int64) {
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
	if v.(int64) < 0 {
		return false, room.ErrNotFound
	}
	return v.(int64) == 1, nil
}

// Stats implements [room.Store].
func (s *Store) Stats(ctx context.Context, id string) (room.Stats, error) {
	v, err := s.run(ctx, statsScript, s.keys.room(id), s.now())
	if err != nil {
		return room.Stats{}, err
	}
	r := v.([]any)
	if r[0].(int64) < 0 {
		return room.Stats{}, room.ErrNotFound
	}
	return room.Stats{Waiting: r[0].(int64), Active: r[1].(int64), AdmittedTotal: r[2].(int64)}, nil
}

// Admit implements [room.Store]. Every instance runs it; the script is the only writer of admissions,
// so gates racing on several instances admit nobody twice and never exceed capacity or rate.
func (s *Store) Admit(ctx context.Context, id string, max int) (room.Tick, error) {
	v, err := s.run(ctx, admitScript, s.keys.room(id), max, s.now(), s.keys.changes(id))
	if err != nil {
		return room.Tick{}, err
	}
	r := v.([]any)
	if n, ok := r[0].(int64); ok && n == -1 {
		return room.Tick{}, room.ErrNotFound
	}
	t := room.Tick{Expired: strs(r[1]), Idle: strs(r[2]), More: r[3].(int64) == 1, AdmittedTotal: r[5].(int64)}
	if next := r[4].(int64); next > 0 {
		t.Next = time.UnixMilli(next).UTC()
	}
	flat := r[0].([]any)
	for i := 0; i+2 < len(flat); i += 3 {
		t.Admitted = append(t.Admitted, room.Admitted{Visitor: flat[i].(string), Admission: room.Admission{
			ID: flat[i+1].(string), ExpiresAt: time.UnixMilli(flat[i+2].(int64)).UTC(),
		}})
	}
	return t, nil
}

func strs(v any) []string {
	in, _ := v.([]any)
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, x := range in {
		out[i], _ = x.(string)
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
		sub := s.rdb.Subscribe(ctx, s.keys.changes(id))
		defer sub.Close()
		ch := sub.Channel(redis.WithChannelSize(256))
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- strings.Fields(m.Payload):
				default: // the gate is behind; the paced refresh catches up
				}
			}
		}
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
	var data []byte
	err := s.cmd(ctx, func(ctx context.Context) error {
		var err error
		data, err = s.rdb.Get(ctx, key).Bytes()
		return err
	})
	if err == nil {
		return data, false, nil
	}
	if !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	fresh, err := create()
	if err != nil {
		return nil, false, err
	}
	var stored bool
	if err := s.cmd(ctx, func(ctx context.Context) error {
		var err error
		stored, err = s.rdb.SetNX(ctx, key, fresh, 0).Result()
		return err
	}); err != nil {
		return nil, false, err
	}
	if stored {
		return fresh, true, nil
	}
	data, _, err = s.LoadOrCreate(ctx, name, create)
	return data, false, err
}

// Save replaces the shared secret called name.
func (s *Store) Save(ctx context.Context, name string, data []byte) error {
	return s.cmd(ctx, func(ctx context.Context) error { return s.rdb.Set(ctx, s.keys.secret(name), data, 0).Err() })
}
