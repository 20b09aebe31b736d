package redisstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
	"github.com/rushgate/rushgate/internal/room"
)

// TestReplicasHoldWhatIsAnswered: replication is asynchronous, so a claim a master answered may not be
// on its replica when the master dies. The replica here reaches its master through a link the test
// can hold, as a slow network would. With Replicas 0 a claim made while the link is held is answered
// and lost in the failover; with Replicas 1 it is answered ErrUnconfirmed instead (as is a bid), its
// retry with the same key answers it once the replica has it, and every claim answered as made is on
// the promoted replica.
func TestReplicasHoldWhatIsAnswered(t *testing.T) {
	master := redistest.Start(t)
	link := newLink(t, master.Addr)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", link.port())
	redistest.WaitInSync(t, master, replica)

	ctx := context.Background()
	open := func(addr, prefix string, replicas int) *redisstore.Backend {
		return redisstore.New(redistest.Client(t, addr), redisstore.Options{Prefix: prefix, Replicas: replicas,
			ReplicaWait: time.Second})
	}
	safe, plain := open(master.Addr, "safe", 1), open(master.Addr, "plain", 0)
	cfg := drop.Config{Stock: 100, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}
	for _, b := range []*redisstore.Backend{safe, plain} {
		if err := b.Drops().Put(ctx, "d", cfg); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now()
	if err := safe.Auctions().Put(ctx, "a", auction.Config{Title: "t", Currency: "EUR", StartPrice: 100, Increment: auction.Fixed(10),
		StartsAt: at.Add(-time.Minute), EndsAt: at.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	claim := func(b *redisstore.Backend, visitor string) (drop.Claim, bool, error) {
		return b.Drops().Claim(ctx, "d", "", visitor, visitor+"-key")
	}
	bid := func(bidder string, amount int64) error {
		_, err := safe.Auctions().Bid(ctx, "a", "", auction.Bid{Bidder: bidder, Max: amount, Exact: true})
		return err
	}

	// A healthy replica confirms at once.
	answered := map[string]drop.Claim{}
	c, _, err := claim(safe, "v1")
	if err != nil {
		t.Fatalf("claim with a healthy replica: %v", err)
	}
	answered["v1"] = c
	if err := bid("b1", 100); err != nil {
		t.Fatalf("bid with a healthy replica: %v", err)
	}

	// The link held: nothing the master writes reaches the replica.
	link.hold()
	if _, _, err := claim(plain, "p1"); err != nil {
		t.Fatalf("claim without replicas to wait for: %v", err)
	}
	began := time.Now()
	if _, _, err := claim(safe, "v2"); !errors.Is(err, rushgate.ErrUnconfirmed) || !errors.Is(err, rushgate.ErrUnavailable) {
		t.Fatalf("claim while the replica lags: %v, want ErrUnconfirmed", err)
	}
	if waited := time.Since(began); waited < time.Second || waited > 4*time.Second {
		t.Fatalf("the unconfirmed claim was answered after %v, want about the 1s ReplicaWait", waited)
	}
	if err := bid("b2", 200); !errors.Is(err, rushgate.ErrUnconfirmed) {
		t.Fatalf("bid while the replica lags: %v, want ErrUnconfirmed", err)
	}
	// Lines do not wait for the replicas: a waiting room that refused its crowd while a replica lags
	// would fail at what it is for, where a failover costs a few places taken in its last moments.
	if err := safe.Rooms().PutRoom(ctx, "r", room.Config{Capacity: 1, SessionTTL: rushgate.Duration(time.Hour),
		Grace: rushgate.Duration(time.Hour), IdleTimeout: rushgate.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if st, err := safe.Rooms().Join(ctx, "r", room.Entrant{Visitor: "w1", Origin: "r", New: true}); err != nil || st.State == room.StateNone {
		t.Fatalf("join while the replica lags: %+v %v, want a place", st, err)
	}
	if waited := time.Since(began); waited >= time.Second {
		t.Fatalf("a join waited %v for the replicas, want none", waited)
	}

	// The link back: the replica catches up, and the claim's retry answers the claim that was made.
	link.release()
	redistest.WaitInSync(t, master, replica)
	c, created, err := claim(safe, "v2")
	if err != nil || created || c.Seq != 2 {
		t.Fatalf("retry of the unconfirmed claim: %+v created %v, %v; want claim 2, made before", c, created, err)
	}
	answered["v2"] = c

	// Held again, then the master dies with what it had not sent, and the replica takes over.
	link.hold()
	if _, _, err := claim(plain, "p2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := claim(safe, "v3"); !errors.Is(err, rushgate.ErrUnconfirmed) {
		t.Fatalf("claim while the replica lags: %v", err)
	}
	master.Kill()
	link.cut()
	if got := replica.Do("REPLICAOF", "NO", "ONE"); got != "OK" {
		t.Fatalf("promoting the replica: %q", got)
	}
	safe, plain = open(replica.Addr, "safe", 0), open(replica.Addr, "plain", 0)
	kept, err := safe.Drops().Claims(ctx, "d", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range answered {
		if !slices.ContainsFunc(kept, func(k drop.Claim) bool { return k.Seq == want.Seq && k.Code == want.Code && k.Visitor == want.Visitor }) {
			t.Fatalf("claim of %s, answered as made, is not on the promoted replica: %+v", v, kept)
		}
	}
	lost, err := plain.Drops().Claims(ctx, "d", 0, 10)
	if err != nil || len(lost) != 1 || lost[0].Visitor != "p1" {
		t.Fatalf("without replicas to wait for, the promoted replica holds %+v (%v); want p1's only: p2's, answered, was lost", lost, err)
	}
}

// link is a TCP proxy between a replica and its master whose master-to-replica direction the test can
// hold (bytes wait in the proxy) and cut (they are dropped with the connections).
type link struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	held  bool
	wake  *sync.Cond
	conns []net.Conn
	done  bool
	wg    sync.WaitGroup
}

func newLink(t *testing.T, target string) *link {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{ln: ln, target: target}
	l.wake = sync.NewCond(&l.mu)
	l.wg.Go(l.accept)
	t.Cleanup(l.cut)
	return l
}

func (l *link) port() string { _, p, _ := net.SplitHostPort(l.ln.Addr().String()); return p }

func (l *link) accept() {
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", l.target)
		if err != nil {
			in.Close()
			continue
		}
		l.mu.Lock()
		if l.done {
			l.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		l.conns = append(l.conns, in, out)
		l.mu.Unlock()
		l.wg.Go(func() { _, _ = io.Copy(out, in) }) // the replica's acks go through
		l.wg.Go(func() { l.forward(in, out) })
	}
}

// forward copies what the master sends to the replica, writing nothing while the link is held.
func (l *link) forward(replica, master net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := master.Read(buf)
		l.mu.Lock()
		for l.held && !l.done {
			l.wake.Wait()
		}
		done := l.done
		l.mu.Unlock()
		if done || n > 0 && writeAll(replica, buf[:n]) != nil || err != nil {
			return
		}
	}
}

func writeAll(c net.Conn, b []byte) error { _, err := c.Write(b); return err }

func (l *link) hold() { l.mu.Lock(); l.held = true; l.mu.Unlock() }

func (l *link) release() { l.mu.Lock(); l.held = false; l.wake.Broadcast(); l.mu.Unlock() }

// cut closes the link, dropping whatever it held.
func (l *link) cut() {
	l.mu.Lock()
	if !l.done {
		l.done = true
		l.ln.Close()
		for _, c := range l.conns {
			c.Close()
		}
		l.wake.Broadcast()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// TestReplicatedCluster runs on a Cluster of three masters with a replica each.
func TestReplicatedCluster(t *testing.T) {
	c := redistest.StartReplicatedCluster(t)
	seeds := strings.Split(c.Seeds, ",")
	t.Run("claims", func(t *testing.T) { replicasOnCluster(t, c, seeds) })
	t.Run("health", func(t *testing.T) { healthOfEachMaster(t, c, seeds) }) // last: it kills a master
}

// replicasOnCluster: on a Cluster the WAIT goes to the master of the claim's slot, on the connection
// of its script. Its replica frozen, a claim is not confirmed; thawed, it is.
func replicasOnCluster(t *testing.T, c *redistest.ReplicatedCluster, seeds []string) {
	b := redisstore.New(redistest.Client(t, seeds...), redisstore.Options{Prefix: redistest.Prefix("cr"),
		Cluster: true, Replicas: 1, ReplicaWait: time.Second})
	ctx := context.Background()
	if err := b.Drops().Put(ctx, "d", drop.Config{Stock: 10, PerVisitor: 1, OpensAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Drops().Claim(ctx, "d", "", "v1", ""); err != nil {
		t.Fatalf("claim with a healthy replica: %v", err)
	}
	_, replica := c.Owner(t, "{drop:d}")
	replica.Freeze()
	_, _, err := b.Drops().Claim(ctx, "d", "", "v2", "")
	replica.Thaw()
	if !errors.Is(err, rushgate.ErrUnconfirmed) {
		t.Fatalf("claim while the slot's replica is frozen: %v, want ErrUnconfirmed", err)
	}
	if _, _, err := b.Drops().Claim(ctx, "d", "", "v3", ""); err != nil {
		t.Fatalf("claim once the replica is back: %v", err)
	}
}

// healthOfEachMaster: a health check writes to every master, so it hears each. One master's replica
// frozen, a check that waits for replicas names that master as unconfirmed. That master killed, rooms
// on it fail while rooms on the others go on, and the check says ErrPartlyUnavailable naming it
// (before, it wrote one key, so two masters in three said nothing); once its replica serves its slots,
// the check passes again, and the one waiting for replicas names the promoted master, which has none.
func healthOfEachMaster(t *testing.T, c *redistest.ReplicatedCluster, seeds []string) {
	ctx := context.Background()
	open := func(replicas int) *redisstore.Backend {
		return redisstore.New(redistest.Client(t, seeds...), redisstore.Options{Prefix: redistest.Prefix("ch"),
			Cluster: true, Replicas: replicas, ReplicaWait: 300 * time.Millisecond})
	}
	plain, confirmed := open(0), open(1)
	for _, b := range []*redisstore.Backend{plain, confirmed} {
		if err := b.Rooms().Ping(ctx); err != nil {
			t.Fatalf("health of a healthy Cluster: %v", err)
		}
	}
	master, replica := c.Owner(t, "{room:here}")
	// A room and a visitor whose slots other masters serve: a join touches both.
	elsewhere := func(kind, id string) string {
		for i := 0; ; i++ {
			if m, _ := c.Owner(t, "{"+kind+":"+id+strconv.Itoa(i)+"}"); m != master {
				return id + strconv.Itoa(i)
			}
		}
	}
	other, visitor := elsewhere("room", "r"), elsewhere("visitor", "v")
	for _, id := range []string{"here", other} {
		if err := plain.Rooms().PutRoom(ctx, id, room.Config{Capacity: 10}); err != nil {
			t.Fatal(err)
		}
	}

	replica.Freeze()
	err := confirmed.Rooms().Ping(ctx)
	plainErr := plain.Rooms().Ping(ctx)
	replica.Thaw()
	if !errors.Is(err, rushgate.ErrUnconfirmed) || !strings.Contains(err.Error(), master.Addr) {
		t.Errorf("health while %s's replica is frozen: %v, want ErrUnconfirmed naming it", master.Addr, err)
	}
	if plainErr != nil {
		t.Errorf("health without replicas to wait for, one frozen: %v", plainErr)
	}

	c.KillMasterOf(t, "{room:here}")
	err = plain.Rooms().Ping(ctx)
	if !errors.Is(err, rushgate.ErrPartlyUnavailable) || !strings.Contains(err.Error(), master.Addr) ||
		!strings.Contains(err.Error(), "1 of 3 masters") {
		t.Fatalf("health with master %s killed: %v, want ErrPartlyUnavailable naming it", master.Addr, err)
	}
	if _, err := plain.Rooms().Join(ctx, other, room.Entrant{Visitor: visitor, Switch: true}); err != nil {
		t.Errorf("join a room on another master while one is down: %v", err)
	}
	if _, err := plain.Rooms().Join(ctx, "here", room.Entrant{Visitor: visitor, Switch: true}); !errors.Is(err, rushgate.ErrUnavailable) {
		t.Errorf("join a room on the killed master: %v, want ErrUnavailable", err)
	}

	c.AwaitPromotion(t, "{room:here}", replica)
	deadline := time.Now().Add(10 * time.Second)
	for err = plain.Rooms().Ping(ctx); err != nil; err = plain.Rooms().Ping(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("health 10 s after the replica took over: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// This client last wrote before the master died: its first write there learns of the promotion.
	for err = confirmed.Rooms().Ping(ctx); errors.Is(err, rushgate.ErrPartlyUnavailable) && time.Now().Before(deadline); err = confirmed.Rooms().Ping(ctx) {
		time.Sleep(100 * time.Millisecond)
	}
	if !errors.Is(err, rushgate.ErrUnconfirmed) || !strings.Contains(err.Error(), replica.Addr) {
		t.Errorf("health waiting for a replica of each master, the promoted one having none: %v, want ErrUnconfirmed naming %s",
			err, replica.Addr)
	}
}
