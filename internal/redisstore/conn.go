package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
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
	historyScript = script("history")
	holdScript    = script("hold")
	inviteScript  = rueidis.NewLuaScript(mustSource("invite"))
	stockScript   = script("stock")
	settleScript  = rueidis.NewLuaScript(mustSource("line_settle"))
	leaseScript   = rueidis.NewLuaScript(mustSource("record_lease"))
	seenScript    = rueidis.NewLuaScript(mustSource("record_seen"))
	// swapScript stands alone: it is not a room script and needs none of lib.lua's helpers.
	swapScript = rueidis.NewLuaScript(mustSource("secret_swap"))
	// releasedScript keeps and announces an admission ended early (see Releases).
	releasedScript = rueidis.NewLuaScript(mustSource("released"))
)

// conn is what the backend's stores share: the client, the key names, the operation timeout, and in
// tests the clock. It is not a store itself.
type conn struct {
	rdb     rueidis.Client
	keys    keys
	timeout time.Duration
	clock   func() time.Time
	cluster bool
	// replicas and replicaWait are Options.Replicas and Options.ReplicaWait; unconfirmed, when set, hears
	// of each batch they did not confirm.
	replicas    int
	replicaWait time.Duration
	unconfirmed func()
}

// replicated is a script that makes claims or bids: with Options.Replicas set, what it made is answered
// only once that many replicas hold it (see runConfirmed), which needs the script's text and digest.
type replicated struct {
	*rueidis.Lua
	src, sha string
}

func newReplicated(src string) replicated {
	sum := sha1.Sum([]byte(src))
	return replicated{Lua: rueidis.NewLuaScript(src), src: src, sha: hex.EncodeToString(sum[:])}
}

// runConfirmed runs a script that makes claims or bids. Without replicas to wait for it is run. With
// them, a WAIT follows the script on the same connection (a pipeline on a dedicated one, since WAIT
// blocks it), so Redis answers once the replicas hold the script's writes or ReplicaWait has passed.
// Short of them, it returns the script's answer with rushgate.ErrUnconfirmed: what the script made
// stands on the master, and a failover now could lose it.
func (c *conn) runConfirmed(ctx context.Context, sc replicated, keys []string, args ...string) (rueidis.RedisMessage, error) {
	if c.replicas == 0 {
		return c.run(ctx, sc.Lua, keys, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout+c.replicaWait)
	defer cancel()
	res := c.rdb.DoMulti(ctx, c.rdb.B().Evalsha().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), c.wait(keys[0]))
	if e, ok := rueidis.IsRedisErr(res[0].Error()); ok && e.IsNoScript() {
		res = c.rdb.DoMulti(ctx, c.rdb.B().Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), c.wait(keys[0]))
	}
	m, err := c.confirmed(res)
	if errors.Is(err, rushgate.ErrUnconfirmed) && c.unconfirmed != nil {
		c.unconfirmed()
	}
	return m, err
}

// confirm runs a write command followed by a WAIT for the replicas, as runConfirmed runs a script.
func (c *conn) confirm(ctx context.Context, cmd rueidis.Completed, key string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+c.replicaWait)
	defer cancel()
	_, err := c.confirmed(c.rdb.DoMulti(ctx, cmd, c.wait(key)))
	return err
}

// wait is the WAIT for the replicas that follows a write on key's slot, in the same pipeline: WAIT
// blocks its connection, so rueidis sends the pipeline on a dedicated one, and it counts the replicas
// that hold that connection's writes.
func (c *conn) wait(key string) rueidis.Completed {
	return c.rdb.B().Wait().Numreplicas(int64(c.replicas)).Timeout(c.replicaWait.Milliseconds()).Build().SetSlot(key)
}

// confirmed reads the answers of a write and its WAIT: the write's, with rushgate.ErrUnconfirmed when
// it succeeded but fewer replicas than asked hold it.
func (c *conn) confirmed(res []rueidis.RedisResult) (rueidis.RedisMessage, error) {
	m, err := res[0].ToMessage()
	if err != nil {
		return m, mapError(err)
	}
	if n, err := res[1].AsInt64(); err != nil || n < int64(c.replicas) {
		return m, fmt.Errorf("%w (%d of %d replicas, %v)", rushgate.ErrUnconfirmed, n, c.replicas, err)
	}
	return m, nil
}

// now is the ARGV time override: empty in production, where scripts read TIME.
func (c *conn) now() string {
	if c.clock == nil {
		return ""
	}
	return strconv.FormatInt(c.clock().UnixMilli(), 10)
}

// run executes a script within the operation timeout.
func (c *conn) run(ctx context.Context, sc *rueidis.Lua, keys []string, args ...string) (rueidis.RedisMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	m, err := sc.Exec(ctx, c.rdb, keys, args).ToMessage()
	return m, mapError(err)
}

// do executes one command within the operation timeout.
func (c *conn) do(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	m, err := c.rdb.Do(ctx, cmd).ToMessage()
	return m, mapError(err)
}

// entriesAfter reads up to limit entries of a drop's or an auction's stream after sequence number
// after: their ids are "seq-1", so that is one XRANGE. An ID's first part is unsigned 64 bits, so the
// number after the largest int64 is one too (after+1 would wrap to a negative ID, which Redis refuses).
func (c *conn) entriesAfter(ctx context.Context, stream string, after, limit int64) ([]rueidis.XRangeEntry, error) {
	m, err := c.do(ctx, c.rdb.B().Xrange().Key(stream).Start(strconv.FormatUint(uint64(after)+1, 10)+"-0").End("+").Count(limit).Build())
	if err != nil {
		return nil, err
	}
	entries, _ := m.AsXRange()
	return entries, nil
}

// seqOf is the sequence number in the id of a drop's or an auction's stream entry ("seq-1").
func seqOf(id string) string {
	seq, _, _ := strings.Cut(id, "-")
	return seq
}

// errNil marks a nil reply, which callers turn into their own outcome.
var errNil = errors.New("redisstore: nil reply")

// mapError turns Redis failures into the domain's: anything that means "Redis did not answer in time
// or cannot serve now" wraps ErrUnavailable; a script error is a bug and stays as it is. Refused
// writes count as "cannot serve now": OOM (maxmemory reached under noeviction), MISCONF (it cannot
// persist) and NOREPLICAS (min-replicas-to-write unmet) all pass when an operator acts, READONLY (a
// master demoted under the instance) when the instance follows the new one, and Redis refuses a
// script at its first write, so the refusal leaves nothing half-written.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	if rueidis.IsRedisNil(err) {
		return errNil
	}
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		msg := rerr.Error()
		for _, refusal := range []string{"OOM ", "MISCONF ", "NOREPLICAS ", "READONLY "} {
			if strings.HasPrefix(msg, refusal) {
				return fmt.Errorf("%w: %w", rushgate.ErrWritesRefused, err)
			}
		}
		for _, transient := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY "} {
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
