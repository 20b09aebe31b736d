package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/redistest"
)

// instance is one rushgate serve process.
type instance struct {
	base string
	cmd  *exec.Cmd
	dead atomic.Bool
	log  *syncBuffer // what it wrote to stderr, shown when the test fails
}

// testAdminKey is the admin key every instance of the multi-instance tests shares.
const testAdminKey = "multi-admin-key-0123"

// binary is the rushgate binary the package's tests run, built once for all of them (TestMain removes
// it): building it for each test cost the package over a dozen builds.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

func buildBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "rushgate-test-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "rushgate")
		if out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// startInstances starts n instances on the Redis at redisAddr, on the Cluster whose seeds it lists
// (comma-separated), or at a --redis URL (one with master_set: Sentinels).
func startInstances(t *testing.T, bin, redisAddr string, n int, extra ...string) []*instance {
	t.Helper()
	url := redisAddr
	if !strings.Contains(url, "://") {
		url = "redis://" + strings.ReplaceAll(redisAddr, ",", ",redis://")
	}
	var out []*instance
	for range n {
		addr := freeAddr(t)
		// The whole crowd comes from 127.0.0.1, so one address may hold all of its streams.
		// Tests share a Redis server (redistest.Shared): each keeps to a key prefix of its own.
		args := append([]string{"serve", "--addr", addr, "--data", t.TempDir(), "--redis", url, "--redis-prefix", prefixOf(t),
			"--admin-key", testAdminKey, "--log-level", "warn", "--streams-per-address", "100000"}, extra...)
		in := &instance{base: "http://" + addr, log: &syncBuffer{}}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = io.Discard, in.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		in.cmd = cmd
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() && in.log.String() != "" {
				t.Logf("%s wrote:\n%s", in.base, in.log)
			}
		})
		waitHealthy(t, in.base)
		out = append(out, in)
	}
	return out
}

// redisPrefixes holds the Redis key prefix of each running test (see prefixOf).
var redisPrefixes sync.Map // *testing.T -> string

// prefixOf returns t's key prefix on the shared Redis: the same for every instance t starts, and new for
// each run of t, so that the runs of go test -count=N never see each other's keys.
func prefixOf(t *testing.T) string {
	p, loaded := redisPrefixes.LoadOrStore(t, redistest.Prefix(t.Name()))
	if !loaded {
		t.Cleanup(func() { redisPrefixes.Delete(t) })
	}
	return p.(string)
}

// crowd drives visitors through a room spread over instances and records what they saw.
type crowd struct {
	t         *testing.T
	instances []*instance
	client    *http.Client

	mu        sync.Mutex
	joinOrder []string
	admission map[string]string // visitor token -> admission id (jti)
	sseFrom   map[int]int       // instance index -> admission events delivered by SSE
	maxActive int64
}

func (c *crowd) pick() (int, *instance) {
	for {
		i := rand.IntN(len(c.instances))
		if !c.instances[i].dead.Load() {
			return i, c.instances[i]
		}
	}
}

// call sends a request to a random live instance, retrying on another when one fails (as a load
// balancer would after an instance dies).
func (c *crowd) call(method, path, tok string) (map[string]any, error) {
	var last error
	for range 20 {
		_, in := c.pick()
		req, _ := http.NewRequest(method, in.base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := c.client.Do(req)
		if err != nil {
			last = err
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var m map[string]any
		err = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if res.StatusCode >= 500 {
			last = fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, m)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		return m, err
	}
	return nil, last
}

func jti(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		ID string `json:"jti"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.ID
}

// poll waits for admission by polling status, slowly far back and quickly near the front.
func (c *crowd) poll(tok string) (string, error) {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		st, err := c.call("GET", "/v1/rooms/multi/status", tok)
		if err != nil {
			return "", err
		}
		if st["state"] == "admitted" {
			return jti(st["admission_token"].(string)), nil
		}
		if st["state"] != "waiting" {
			return "", fmt.Errorf("visitor fell out of line: %v", st)
		}
		wait := time.Second
		if pos, _ := st["position"].(float64); pos <= 100 {
			wait = 100 * time.Millisecond
		}
		time.Sleep(wait/2 + rand.N(wait/2))
	}
	return "", fmt.Errorf("not admitted within 2 minutes")
}

// stream waits for admission on an event stream, reconnecting to another instance if one dies.
func (c *crowd) stream(tok string) (string, error) {
	for attempt := 0; attempt < 20; attempt++ {
		i, in := c.pick()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", in.base+"/v1/rooms/multi/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := c.client.Do(req)
		if err != nil {
			cancel()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var st map[string]any
			_ = json.Unmarshal([]byte(data), &st)
			if st["state"] == "admitted" {
				res.Body.Close()
				cancel()
				c.mu.Lock()
				c.sseFrom[i]++
				c.mu.Unlock()
				return jti(st["admission_token"].(string)), nil
			}
		}
		res.Body.Close()
		cancel()
	}
	return "", fmt.Errorf("stream never delivered the admission")
}

func (c *crowd) sample(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		_, in := c.pick()
		req, _ := http.NewRequest("GET", in.base+"/v1/rooms/multi", nil)
		req.Header.Set("Authorization", "Bearer "+testAdminKey)
		res, err := c.client.Do(req)
		if err != nil {
			continue
		}
		var body struct {
			Stats struct {
				Active int64 `json:"active"`
			} `json:"stats"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		c.mu.Lock()
		c.maxActive = max(c.maxActive, body.Stats.Active)
		c.mu.Unlock()
	}
}

// runCrowd sends visitors to random instances: they join one at a time (which defines the join order),
// one in five joins again at once (a reload, which must keep its place), then they wait by polling or,
// one in ten, by an event stream, and release 100-200ms after admission. The room opens paused and
// resumes once four times its capacity wait, so that capacity binds however slowly a busy machine
// lets them join.
// onHalf runs once half of them are admitted.
func runCrowd(t *testing.T, instances []*instance, visitors, capacity int, onHalf func()) *crowd {
	c := &crowd{t: t, instances: instances, client: &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 200}},
		admission: map[string]string{}, sseFrom: map[int]int{}}
	put, _ := http.NewRequest("PUT", instances[0].base+"/v1/rooms/multi", strings.NewReader(fmt.Sprintf(
		`{"capacity": %d, "session_ttl": "5s", "grace": "30s", "idle_timeout": "2m", "paused": true}`, capacity)))
	put.Header.Set("Authorization", "Bearer "+testAdminKey)
	if res, err := c.client.Do(put); err != nil || res.StatusCode != 200 {
		t.Fatalf("PUT room: %v %v", res, err)
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { c.sample(stop); close(sampled) }()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	var once sync.Once
	resume := func() {
		req, _ := http.NewRequest("PATCH", instances[0].base+"/v1/rooms/multi", strings.NewReader(`{"paused": false}`))
		req.Header.Set("Authorization", "Bearer "+testAdminKey)
		if res, err := c.client.Do(req); err != nil || res.StatusCode != 200 {
			t.Fatalf("resume the room: %v %v", res, err)
		}
	}
	for i := range visitors {
		if i == min(visitors, 4*capacity) {
			resume()
		}
		st, err := c.call("POST", "/v1/rooms/multi/join", "")
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		tok := st["visitor_token"].(string)
		c.joinOrder = append(c.joinOrder, tok)
		useSSE, reload := i%10 == 0, i%5 == 1
		wg.Go(func() {
			var id string
			var err error
			if reload {
				st, err = c.reload(tok, st)
			}
			switch {
			case err != nil:
			case st["state"] == "admitted":
				id = jti(st["admission_token"].(string))
			case useSSE:
				id, err = c.stream(tok)
			default:
				id, err = c.poll(tok)
			}
			if err != nil {
				t.Error(err)
				return
			}
			c.mu.Lock()
			if prev, ok := c.admission[tok]; ok {
				t.Errorf("visitor admitted twice: %s and %s", prev, id)
			}
			c.admission[tok] = id
			c.mu.Unlock()
			time.Sleep(100*time.Millisecond + rand.N(100*time.Millisecond)) // the purchase
			if _, err := c.call("POST", "/v1/rooms/multi/release", tok); err != nil {
				t.Error(err)
			}
			if admitted.Add(1) >= int64(visitors/2) && onHalf != nil {
				once.Do(onHalf)
			}
		})
	}
	if visitors <= 4*capacity {
		resume()
	}
	wg.Wait()
	close(stop)
	<-sampled
	return c
}

// reload joins again with the visitor's token, as a reloaded page does: the visitor keeps its place,
// which can only have moved forward.
func (c *crowd) reload(tok string, joined map[string]any) (map[string]any, error) {
	st, err := c.call("POST", "/v1/rooms/multi/join", tok)
	if err != nil || st["state"] == "admitted" {
		return st, err
	}
	if st["state"] != "waiting" || joined["state"] == "waiting" && st["position"].(float64) > joined["position"].(float64) {
		return nil, fmt.Errorf("reload after %v answered %v", joined, st)
	}
	return st, nil
}

func (c *crowd) check(visitors, capacity int, streamedFrom []int) {
	t := c.t
	t.Logf("most active at one sample: %d (capacity %d); admission events by stream per instance: %v", c.maxActive, capacity, c.sseFrom)
	if c.maxActive > int64(capacity) {
		t.Errorf("%d active at one sample, capacity %d", c.maxActive, capacity)
	}
	if c.maxActive < int64(capacity)*8/10 {
		t.Errorf("at most %d active at any sample: capacity %d never bound, so the test proved nothing", c.maxActive, capacity)
	}
	if len(c.admission) != visitors {
		t.Fatalf("%d of %d visitors admitted", len(c.admission), visitors)
	}
	seq := func(id string) int {
		_, n, _ := strings.Cut(id, ".")
		v, _ := strconv.Atoi(n)
		return v
	}
	byAdmission := slices.Clone(c.joinOrder)
	slices.SortFunc(byAdmission, func(a, b string) int { return seq(c.admission[a]) - seq(c.admission[b]) })
	if !slices.Equal(byAdmission, c.joinOrder) {
		t.Error("admission order differs from join order")
	}
	ids := map[string]bool{}
	for _, id := range c.admission {
		if ids[id] {
			t.Errorf("admission %s given twice", id)
		}
		ids[id] = true
	}
	for _, i := range streamedFrom {
		if c.sseFrom[i] == 0 {
			t.Errorf("no admission event was delivered by instance %d's streams (%v)", i, c.sseFrom)
		}
	}
}

func TestMultiInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	addr := redistest.Shared(t)
	instances := startInstances(t, buildBinary(t), addr, 3)
	c := runCrowd(t, instances, 3000, 50, nil)
	c.check(3000, 50, []int{0, 1, 2})
}

func TestMultiInstanceKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	addr := redistest.Shared(t)
	instances := startInstances(t, buildBinary(t), addr, 3)
	c := runCrowd(t, instances, 3000, 50, func() {
		instances[2].dead.Store(true)
		_ = instances[2].cmd.Process.Kill() // kill -9, midway
	})
	c.check(3000, 50, []int{0, 1})
}

// TestMultiInstanceCluster runs the crowd through three instances on a 3-master Redis Cluster, where
// a visitor's line pointer and join lock live in other slots than the room.
func TestMultiInstanceCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-instance test skipped in -short mode")
	}
	instances := startInstances(t, buildBinary(t), strings.Join(redistest.Cluster(t), ","), 3)
	c := runCrowd(t, instances, 3000, 50, nil)
	c.check(3000, 50, []int{0, 1, 2})
}

// TestCrossInstancePush admits visitors through instance A while they stream from instance B: each
// admission event must reach B's stream within a second.
func TestCrossInstancePush(t *testing.T) {
	addr := redistest.Shared(t)
	in := startInstances(t, buildBinary(t), addr, 2)
	a, b := in[0], in[1]
	for round := range 5 {
		roomURL := fmt.Sprintf("/v1/rooms/push%d", round)
		if code, _, _ := do(t, "PUT", a.base+roomURL, testAdminKey, `{"capacity": 1, "paused": true}`); code != 200 {
			t.Fatal(code)
		}
		_, st, _ := do(t, "POST", b.base+roomURL+"/join", "", "")
		req, _ := http.NewRequest("GET", b.base+roomURL+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+st["visitor_token"].(string))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"admitted"`) {
					got <- time.Now()
					return
				}
			}
		}()
		time.Sleep(100 * time.Millisecond) // the stream is open and has sent its first event
		start := time.Now()
		if code, _, _ := do(t, "PUT", a.base+roomURL, testAdminKey, `{"capacity": 1}`); code != 200 {
			t.Fatal(code)
		}
		select {
		case at := <-got:
			if d := at.Sub(start); d > time.Second {
				t.Fatalf("round %d: admission reached the other instance's stream after %v", round, d)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("round %d: no admission event on the other instance", round)
		}
	}
}

// TestKeyRotationReachesEveryInstance rotates the signing keys through one instance: the others publish
// the new key within keyring.ReloadEvery, long before it signs, and a token signed before the rotation
// still verifies everywhere.
func TestKeyRotationReachesEveryInstance(t *testing.T) {
	addr := redistest.Shared(t)
	in := startInstances(t, buildBinary(t), addr, 2)
	a, b := in[0], in[1]
	if code, _, _ := do(t, "PUT", a.base+"/v1/rooms/keys", testAdminKey, `{"capacity": 1}`); code != 200 {
		t.Fatal(code)
	}
	_, st, _ := do(t, "POST", a.base+"/v1/rooms/keys/join", "", "")
	tok, _ := st["visitor_token"].(string)
	adm := waitAdmitted(t, a.base, "keys", tok)
	code, rot, _ := do(t, "POST", a.base+"/v1/keys/rotate", testAdminKey, "")
	kid, _ := rot["kid"].(string)
	if code != 200 || kid == "" {
		t.Fatalf("rotate: %d %v", code, rot)
	}
	hasKid := func(base string) bool {
		_, set, _ := do(t, "GET", base+"/v1/keys", "", "")
		keys, _ := set["keys"].([]any)
		for _, k := range keys {
			if m, _ := k.(map[string]any); m["kid"] == kid {
				return true
			}
		}
		return false
	}
	if !hasKid(a.base) {
		t.Fatal("the rotating instance does not publish its new key")
	}
	deadline := time.Now().Add(keyring.ReloadEvery + 5*time.Second)
	for !hasKid(b.base) {
		if time.Now().After(deadline) {
			t.Fatalf("the other instance did not publish the new key within %v", keyring.ReloadEvery)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, inst := range in {
		_, v, _ := do(t, "POST", inst.base+"/v1/verify", "", `{"token": "`+adm+`", "room": "keys"}`)
		if v["valid"] != true {
			t.Fatalf("%s: token signed before the rotation: %v", inst.base, v)
		}
	}
}

// waitAdmitted polls a visitor's status in room until the gate admits it, and returns its admission
// token; the room must have room for it.
func waitAdmitted(t *testing.T, base, room, tok string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, st, _ := do(t, "GET", base+"/v1/rooms/"+room+"/status", tok, "")
		if adm, _ := st["admission_token"].(string); adm != "" {
			return adm
		}
		if time.Now().After(deadline) {
			t.Fatalf("not admitted to %s within 5s: %v", room, st)
		}
	}
}
