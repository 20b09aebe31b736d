// Package redistest starts real redis-server processes for tests: a standalone server or a three-master
// Cluster on free loopback ports, stopped when the test ends, or shared by a package's tests (Shared,
// SharedCluster) and stopped by its TestMain; and the setups that fail over, a master and replica
// under two Sentinels (StartSentinel) and a Cluster whose masters have replicas
// (StartReplicatedCluster), each with a way to kill its master. Without redis-server installed the
// tests skip with a hint locally, and fail when CI is set, so that CI can never go green without Redis.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

func need(t testing.TB, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI: apt-get install -y redis-server redis-tools", b)
			}
			t.Skipf("%s not installed (apt-get install -y redis-server redis-tools); skipping", b)
		}
	}
}

func free(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// freePort finds a port whose cluster-bus twin (port+10000) is free too.
func freePort(t testing.TB) int {
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p+10000 < 65536 && free(p+10000) {
			return p
		}
	}
	t.Fatal("no free port pair")
	return 0
}

// Server is one running redis-server.
type Server struct {
	Addr string
	Dir  string
	cmd  *exec.Cmd
	args []string
}

// Start runs a redis-server with extra config arguments (such as "--appendonly", "yes").
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	need(t, "redis-server")
	dir := t.TempDir()
	s := &Server{Dir: dir}
	port := freePort(t)
	s.Addr = "127.0.0.1:" + strconv.Itoa(port)
	// A master serves a new replica at once, not after diskless replication's default 5 s of waiting
	// for others to join it.
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
		"--repl-diskless-sync-delay", "0"}, extra...)
	s.start(t)
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command("redis-server", s.args...)
	// The output goes to a file, not a buffer, so that no goroutine copies it: a server that outlives
	// its test (Shared) leaves none behind for goleak to find.
	logPath := filepath.Join(s.Dir, "redis.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child keeps its own descriptor
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if ping(s.Addr, "PING") == "PONG" {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	log, _ := os.ReadFile(logPath)
	t.Fatalf("redis-server on %s did not start: %s", s.Addr, log)
}

// Freeze stops the server's process (SIGSTOP) until Thaw: it answers nothing, and as a replica
// confirms nothing, while its connections stay open.
func (s *Server) Freeze() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw lets a frozen server go on (SIGCONT).
func (s *Server) Thaw() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Kill stops the server at once (SIGKILL).
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart kills the server and starts it again on the same port and data directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	s.start(t)
}

// Cluster starts three masters on free ports, joins them into a Cluster with every slot assigned, and
// returns their addresses once the cluster reports ok.
func Cluster(t testing.TB) []string {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	var addrs []string
	for _, s := range startCluster(t, 0) {
		addrs = append(addrs, s.Addr)
	}
	return addrs
}

// startCluster starts and joins the three masters of a Cluster, each with replicas replicas: the
// masters are the first three servers.
func startCluster(t testing.TB, replicas int) []*Server {
	t.Helper()
	var servers []*Server
	var addrs []string
	for i := range 3 * (1 + replicas) {
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), fmt.Sprintf("nodes-%d.conf", i)),
			"--cluster-node-timeout", "2000")
		servers = append(servers, s)
		addrs = append(addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		ok := false
		for range 200 {
			if strings.Contains(ping(a, "CLUSTER", "INFO"), "cluster_state:ok") {
				ok = true
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !ok {
			t.Fatalf("cluster node %s never reported ok", a)
		}
	}
	return servers
}

// ReplicatedCluster is a Cluster of three masters, each with a replica that the Cluster promotes when
// its master dies: the Cluster a production setup fails over with.
type ReplicatedCluster struct {
	// Seeds are the masters' addresses as they started, comma-separated, as --redis lists them.
	Seeds string
	nodes []*Server
}

// StartReplicatedCluster starts a ReplicatedCluster and returns it once its replicas are in sync. Its
// servers stop when the test ends.
func StartReplicatedCluster(t testing.TB) *ReplicatedCluster {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	c := &ReplicatedCluster{nodes: startCluster(t, 1)}
	var seeds []string
	for _, n := range c.nodes[:3] {
		seeds = append(seeds, n.Addr)
	}
	c.Seeds = strings.Join(seeds, ",")
	waitFor(t, "every master to have a replica in sync", func() bool {
		ranges := c.slots(c.nodes[0].Addr)
		for _, r := range ranges {
			if len(r.replicas) == 0 || !inSync(r.master, r.replicas[0]) {
				return false
			}
		}
		return len(ranges) > 0
	})
	return c
}

// slotRange is an entry of CLUSTER SLOTS: the master serving slots lo to hi, and its replicas.
type slotRange struct {
	lo, hi   int64
	master   *Server
	replicas []*Server
}

// slots is CLUSTER SLOTS as the node at addr says, nil when it does not answer.
func (c *ReplicatedCluster) slots(addr string) []slotRange {
	ranges, _ := once(addr, "CLUSTER", "SLOTS").ToArray()
	var out []slotRange
	for _, r := range ranges {
		f, _ := r.ToArray()
		if len(f) < 3 {
			continue
		}
		sr := slotRange{master: c.node(f[2])}
		sr.lo, _ = f[0].AsInt64()
		sr.hi, _ = f[1].AsInt64()
		for _, rep := range f[3:] {
			sr.replicas = append(sr.replicas, c.node(rep))
		}
		out = append(out, sr)
	}
	return out
}

// KillMasterOf kills (SIGKILL) the master that serves the slot of key, a hash tag such as
// "{drop:sale}", once its replica has all it wrote, and returns at once with the two: the slot is
// served by nobody until the Cluster promotes the replica (see AwaitPromotion).
func (c *ReplicatedCluster) KillMasterOf(t testing.TB, key string) (master, replica *Server) {
	t.Helper()
	master, replica = c.Owner(t, key)
	waitFor(t, "the replica to catch up", func() bool { return inSync(master, replica) })
	master.Kill()
	return master, replica
}

// AwaitPromotion waits until replica serves the slot of key and the Cluster says ok again.
func (c *ReplicatedCluster) AwaitPromotion(t testing.TB, key string, replica *Server) {
	t.Helper()
	waitFor(t, "the Cluster to promote the replica", func() bool {
		m, _ := c.Owner(t, key)
		return m == replica && strings.Contains(ping(replica.Addr, "CLUSTER", "INFO"), "cluster_state:ok")
	})
}

// Owner returns the master serving key's slot (a hash tag such as "{drop:sale}"), as a live node says,
// and a replica of it.
func (c *ReplicatedCluster) Owner(t testing.TB, key string) (master, replica *Server) {
	t.Helper()
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue // killed
		}
		slot, err := once(n.Addr, "CLUSTER", "KEYSLOT", key).AsInt64()
		if err != nil {
			continue
		}
		for _, r := range c.slots(n.Addr) {
			if slot >= r.lo && slot <= r.hi {
				if len(r.replicas) > 0 {
					replica = r.replicas[0]
				}
				return r.master, replica
			}
		}
	}
	t.Fatalf("no live node says which master serves %s", key)
	return nil, nil
}

// node finds the server of a CLUSTER SLOTS entry [ip, port, id, ...].
func (c *ReplicatedCluster) node(entry rueidis.RedisMessage) *Server {
	f, _ := entry.ToArray()
	if len(f) < 2 {
		return nil
	}
	ip, _ := f[0].ToString()
	port, _ := f[1].AsInt64()
	for _, n := range c.nodes {
		if n.Addr == fmt.Sprintf("%s:%d", ip, port) {
			return n
		}
	}
	return nil
}

// ping sends one command on a fresh single-node connection and returns the reply as a string, or "" on
// any error.
func ping(addr string, cmd ...string) string {
	s, _ := once(addr, cmd...).ToString()
	return s
}

// once sends one command to the node at addr on a fresh connection, within a second, and returns its
// answer (an error when the node does not answer).
func once(addr string, cmd ...string) rueidis.RedisResult {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true,
		Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return rueidis.RedisResult{}
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(cmd...).Build())
}

// Client returns a rueidis client for the given addresses (a Cluster when there are several), closed
// when the test ends. Like rushgate serve's, it pipelines every command, so that deadlines behave alike.
func Client(t testing.TB, addrs ...string) rueidis.Client {
	t.Helper()
	return clientAs(t, "", "", addrs...)
}

// ClientWithout is Client for the standalone server at addr, logged in as a user that may run every
// command but those named, for a test that takes rights away from one step to see what the others
// leave (or a managed service's user, which lacks some). The user is removed when the test ends.
func ClientWithout(t testing.TB, addr string, commands ...string) rueidis.Client {
	t.Helper()
	user := Prefix("without")
	rules := []string{"SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}
	for _, c := range commands {
		rules = append(rules, "-"+c)
	}
	if err := once(addr, append([]string{"ACL"}, rules...)...).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = once(addr, "ACL", "DELUSER", user).Error() })
	return clientAs(t, user, "pw", addr)
}

// clientAs is Client logged in as an ACL user ("" for the default one).
func clientAs(t testing.TB, user, password string, addrs ...string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, ForceSingleClient: len(addrs) == 1, DisableCache: true,
		AlwaysPipelining: true, Username: user, Password: password}) // as rushgate serve does
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The servers a test package shares (see Shared), started at first use and stopped by Stop.
var shared struct {
	sync.Mutex
	server  *Server
	cluster []*Server
	dirs    []string
}

// sharedT starts shared servers: a test's helpers, but its failures are the test's and its temporary
// directories and cleanups belong to the package, not to the test that happened to start them.
type sharedT struct {
	testing.TB
}

func (s sharedT) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-*")
	if err != nil {
		s.Fatal(err)
	}
	shared.dirs = append(shared.dirs, dir)
	return dir
}

func (sharedT) Cleanup(func()) {} // Stop kills the shared servers

// Prefix returns a key prefix for a test on shared servers: name and a number no other store of the
// process had, so that tests, and runs of one test (go test -count), never see each other's keys.
func Prefix(name string) string {
	return fmt.Sprintf("%s-%d", name, prefixes.Add(1))
}

var prefixes atomic.Int64

// Shared returns the address of a standalone redis-server that every test of the package shares,
// started at the first call; TestMain calls Stop after the tests. Tests sharing it keep to key
// prefixes of their own and must not stop or reconfigure it.
func Shared(t testing.TB) string {
	t.Helper()
	need(t, "redis-server")
	shared.Lock()
	defer shared.Unlock()
	if shared.server == nil {
		shared.server = Start(sharedT{t})
	}
	return shared.server.Addr
}

// SharedCluster returns the addresses of a three-master Cluster that every test of the package
// shares, as Shared does for a standalone server.
func SharedCluster(t testing.TB) []string {
	t.Helper()
	need(t, "redis-server", "redis-cli")
	shared.Lock()
	defer shared.Unlock()
	if shared.cluster == nil {
		shared.cluster = startCluster(sharedT{t}, 0)
	}
	addrs := make([]string, len(shared.cluster))
	for i, s := range shared.cluster {
		addrs[i] = s.Addr
	}
	return addrs
}

// SharedAt returns the addresses of the package's shared Cluster when cluster is set, else of its
// shared standalone server: for tests that run one body on either.
func SharedAt(t testing.TB, cluster bool) []string {
	t.Helper()
	if cluster {
		return SharedCluster(t)
	}
	return []string{Shared(t)}
}

// Topology is one of the two ways rushgate meets Redis. They differ in what a script may touch (one
// slot on a Cluster), in how pub/sub reaches a script's PUBLISH and in the locks a Cluster needs, so
// the Redis logic that depends on them is tested on both.
type Topology struct {
	Cluster bool
	Addrs   []string // the shared servers' addresses
}

// Client returns a client of the topology's servers, closed when t ends.
func (tp Topology) Client(t testing.TB) rueidis.Client { return Client(t, tp.Addrs...) }

// EachTopology runs test as a subtest "standalone" on the package's shared standalone server, then
// as "cluster" on its shared Cluster.
func EachTopology(t *testing.T, test func(t *testing.T, tp Topology)) {
	for _, cluster := range []bool{false, true} {
		name := "standalone"
		if cluster {
			name = "cluster"
		}
		t.Run(name, func(t *testing.T) { test(t, Topology{Cluster: cluster, Addrs: SharedAt(t, cluster)}) })
	}
}

// Stop kills the servers the package's tests shared; TestMain calls it after m.Run.
func Stop() {
	shared.Lock()
	defer shared.Unlock()
	for _, s := range append(shared.cluster, shared.server) {
		if s != nil {
			s.Kill()
		}
	}
	for _, d := range shared.dirs {
		_ = os.RemoveAll(d)
	}
	shared.server, shared.cluster, shared.dirs = nil, nil, nil
}

// Sentinel is a master and its replica watched by two Sentinels under the name SentinelMaster: the
// Redis that a standalone production setup fails over with.
type Sentinel struct {
	// URL is what --redis takes: both Sentinels and the name of the master they watch.
	URL string
	// Master and Replica are the servers as they started; after Failover the replica is the master.
	Master, Replica *Server
	sentinels       []*Server
}

// SentinelMaster is the name the Sentinels watch the master under.
const SentinelMaster = "rushgate"

// StartSentinel starts a master, a replica of it, and two Sentinels that agree on a failover within
// about a second of the master's going down. They stop when the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	need(t, "redis-server")
	s := &Sentinel{Master: Start(t)}
	s.Replica = StartReplica(t, s.Master)
	var seeds []string
	for range 2 {
		dir := t.TempDir()
		port := freePort(t)
		conf := filepath.Join(dir, "sentinel.conf") // a Sentinel rewrites its file: each has its own
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 1\n"+
			"sentinel down-after-milliseconds %[3]s 500\nsentinel failover-timeout %[3]s 5000\n",
			port, dir, SentinelMaster, strings.TrimPrefix(s.Master.Addr, "127.0.0.1:"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		sen := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, args: []string{conf, "--sentinel"}}
		sen.start(t)
		t.Cleanup(sen.Kill)
		s.sentinels = append(s.sentinels, sen)
		seeds = append(seeds, "addr="+sen.Addr)
	}
	s.URL = "redis://" + s.sentinels[0].Addr + "?master_set=" + SentinelMaster + "&" + seeds[1]
	// A failover needs a replica that both Sentinels know of.
	for _, sen := range s.sentinels {
		waitFor(t, "the Sentinels to see each other and the replica", func() bool {
			m := sentinelMaster(sen.Addr)
			return m["num-slaves"] == "1" && m["num-other-sentinels"] == "1"
		})
	}
	return s
}

// KillMaster kills the master (SIGKILL) once the replica has all it wrote, and waits until the
// Sentinels have promoted the replica: Master and Replica swap, the new replica is dead.
func (s *Sentinel) KillMaster(t testing.TB) {
	t.Helper()
	waitFor(t, "the replica to catch up", func() bool { return inSync(s.Master, s.Replica) })
	s.Master.Kill()
	for _, sen := range s.sentinels {
		waitFor(t, "the Sentinels to promote the replica", func() bool {
			return sentinelMaster(sen.Addr)["port"] == strings.TrimPrefix(s.Replica.Addr, "127.0.0.1:")
		})
	}
	s.Master, s.Replica = s.Replica, s.Master
}

// Revive restarts the replica KillMaster left dead, with its old data, as a replica of the master the
// Sentinels promoted, and waits until it is one, in sync. The Sentinels would make it one too, but
// only at their next look at it, up to 10 s later (their INFO period, which no setting shortens).
func (s *Sentinel) Revive(t testing.TB) {
	t.Helper()
	s.Replica.Restart(t)
	s.Replica.follow(t, s.Master)
	waitFor(t, "the old master to become a replica in sync", func() bool { return inSync(s.Master, s.Replica) })
}

// follow makes s a replica of master, as a Sentinel reconfiguring it does.
func (s *Server) follow(t testing.TB, master *Server) {
	t.Helper()
	if got := ping(s.Addr, "REPLICAOF", "127.0.0.1", strings.TrimPrefix(master.Addr, "127.0.0.1:")); got != "OK" {
		t.Fatalf("REPLICAOF: %q", got)
	}
}

// Switchover has the Sentinels hand the master's role to the replica while both run (SENTINEL
// FAILOVER, a planned switchover), and waits until they name the replica and the old master has become
// its replica: Master and Replica swap.
func (s *Sentinel) Switchover(t testing.TB) {
	t.Helper()
	port := strings.TrimPrefix(s.Replica.Addr, "127.0.0.1:")
	// A Sentinel promotes only a replica whose link it last saw up (it asks every 10 s): one revived
	// a moment ago may still be down in its eyes.
	waitFor(t, "the Sentinel to see the replica's link up", func() bool {
		replicas, _ := once(s.sentinels[0].Addr, "SENTINEL", "REPLICAS", SentinelMaster).ToArray()
		for _, r := range replicas {
			if m, _ := r.AsStrMap(); m["port"] == port {
				return m["flags"] == "slave" && m["master-link-status"] == "ok" && m["master-link-down-time"] == "0"
			}
		}
		return false
	})
	// On a loaded machine a Sentinel may have seen the master miss its pings for down-after-milliseconds
	// and begun a failover of its own: it answers -INPROG until that one ends. The only replica is the
	// one either failover promotes, so whichever hands it the role will do.
	waitFor(t, "a Sentinel to take the switchover", func() bool {
		if sentinelMaster(s.sentinels[0].Addr)["port"] == port {
			return true
		}
		got, err := once(s.sentinels[0].Addr, "SENTINEL", "FAILOVER", SentinelMaster).ToString()
		if err != nil && strings.HasPrefix(err.Error(), "INPROG") {
			return false
		}
		if err != nil || got != "OK" {
			t.Fatalf("SENTINEL FAILOVER: %q %v", got, err)
		}
		return true
	})
	for _, sen := range s.sentinels {
		waitFor(t, "the Sentinels to name the replica", func() bool { return sentinelMaster(sen.Addr)["port"] == port })
	}
	// The Sentinels demote the old master at their next look at it, up to 10 s later: do it for them.
	s.Master.follow(t, s.Replica)
	waitFor(t, "the old master to become a replica", func() bool { return strings.Contains(info(s.Master.Addr), "role:slave") })
	s.Master, s.Replica = s.Replica, s.Master
}

// StartReplica starts a replica of master and returns it once it is in sync; it stops when the test
// ends.
func StartReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	r := Start(t, "--replicaof", "127.0.0.1", strings.TrimPrefix(master.Addr, "127.0.0.1:"))
	WaitInSync(t, master, r)
	return r
}

// WaitInSync waits until replica, a replica of master (directly or through a proxy), holds everything
// master wrote.
func WaitInSync(t testing.TB, master, replica *Server) {
	t.Helper()
	waitFor(t, "the replica in sync", func() bool { return inSync(master, replica) })
}

// Do sends one command to the server on a fresh connection and returns its reply as a string, or "" on
// any error.
func (s *Server) Do(cmd ...string) string { return ping(s.Addr, cmd...) }

// Swap promotes replica, a replica of master, and makes master its replica, with nothing to tell their
// clients: a switchover without Sentinel, under which a client of master finds a replica that refuses
// writes. It waits until master is in sync with replica.
func Swap(t testing.TB, master, replica *Server) {
	t.Helper()
	waitFor(t, "the replica to catch up", func() bool { return inSync(master, replica) })
	if got := ping(replica.Addr, "REPLICAOF", "NO", "ONE"); got != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %q", got)
	}
	master.follow(t, replica)
	waitFor(t, "the old master a replica in sync", func() bool { return inSync(replica, master) })
}

// inSync reports whether replica is a replica of master, linked, and has all master wrote, and whether
// master counts it online: a replica still loading its first copy is not one that WAIT counts.
func inSync(master, replica *Server) bool {
	r, m := info(replica.Addr), info(master.Addr)
	return strings.Contains(r, "role:slave") && strings.Contains(r, "master_link_status:up") &&
		offset(r, "slave_repl_offset") == offset(m, "master_repl_offset") && strings.Contains(m, ",state=online,")
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for range 600 {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waited 30s for %s", what)
}

func info(addr string) string { return ping(addr, "INFO", "replication") }

// offset reads one replication offset field of INFO replication; -1 when it is missing.
func offset(info, field string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// sentinelMaster is what a Sentinel says of the master it watches (SENTINEL MASTER), as field -> value.
func sentinelMaster(addr string) map[string]string {
	m, _ := once(addr, "SENTINEL", "MASTER", SentinelMaster).AsStrMap() // RESP3: a map
	return m
}
