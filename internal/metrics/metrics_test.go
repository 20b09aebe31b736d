package metrics_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/room"
)

// rooms, drops and auctions are one of each, as the services report them.
type rooms struct{}

func (rooms) Rooms(context.Context) ([]string, error)           { return []string{"sale"}, nil }
func (rooms) Stats(context.Context, string) (room.Stats, error) { return room.Stats{Waiting: 3}, nil }

type drops struct{}

func (drops) Latest(fn func(drop.Summary)) {
	fn(drop.Summary{ID: "gift", Claimed: 2, Remaining: 8, Status: drop.StatusOpen})
}

type auctions struct{}

func (auctions) Latest(fn func(auction.Summary)) {
	fn(auction.Summary{ID: "lot", Config: auction.Config{Currency: "EUR"}, Status: auction.StatusOpen, Price: 1500, Bids: 1})
}

// TestPrometheusRules: the alerting rules in docs/prometheus load in promtool and pass their unit
// test, and every metric they name is one rushgate exports, so a metric renamed here fails them here
// rather than in an operator's silent alert.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is missing; .ci/run installs prometheus")
		}
		t.Skip("promtool is missing (Debian: prometheus)")
	}
	const dir = "../../docs/prometheus"
	for _, args := range [][]string{{"check", "rules", "rushgate.rules.yml"}, {"test", "rules", "rushgate.rules_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	m := metrics.New()
	m.WatchRooms(rooms{})
	m.WatchSales(drops{}, auctions{})
	m.WatchRecord(func(context.Context) error { return nil })
	m.WatchStore(func(context.Context) error { return nil })
	m.WatchBacklog(func(context.Context) (int64, int64, error) { return 4, 0, nil })
	m.ObserveRequest("POST /v1/drops/{drop}/claims", 201, time.Millisecond)
	m.Redemption("gift", "refused")
	m.WebhookAttempt("retry")
	m.Unconfirmed()
	m.RedisSettings(nil, nil)
	m.Build("v1.2.3", "redis", "postgres")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var exported []string
	for line := range strings.Lines(rec.Body.String()) {
		if name, _, ok := strings.Cut(line, "{"); ok && !strings.HasPrefix(line, "#") {
			exported = append(exported, name)
		}
		if name, _, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			exported = append(exported, name)
		}
	}
	rules, err := os.ReadFile(dir + "/rushgate.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`rushgate_[a-z_]+`).FindAllString(string(rules), -1)
	if len(named) < 5 {
		t.Fatalf("the rules name %d metrics", len(named))
	}
	for _, name := range named {
		if !slices.Contains(exported, name) {
			t.Errorf("the rules name %s, which rushgate does not export", name)
		}
	}
}

// TestStoreUp: rushgate_store_up is 0 while any of the store fails (a Cluster master down is an outage
// of its slots' rooms, drops and auctions, though /healthz says degraded), and 1 while replicas only
// lag, which rushgate_redis_unconfirmed_total counts instead.
func TestStoreUp(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "1"}, {rushgate.ErrUnavailable, "0"}, {rushgate.ErrWritesRefused, "0"},
		{fmt.Errorf("%w: 1 of 3 masters", rushgate.ErrPartlyUnavailable), "0"},
		{fmt.Errorf("%w: 10.0.0.7:6379", rushgate.ErrUnconfirmed), "1"},
	} {
		m := metrics.New()
		m.WatchStore(func(context.Context) error { return c.err })
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), "\nrushgate_store_up "+c.want+"\n") {
			t.Errorf("with the store's check saying %v, rushgate_store_up is not %s", c.err, c.want)
		}
	}
}

// TestRoomsReadTogether: a scrape reads the rooms' counts several at once, so that on Redis they
// share round trips. The store's reads here answer only once eight are under way together: read one
// after another, the first waits out the scrape's time and no room is reported.
func TestRoomsReadTogether(t *testing.T) {
	store := &gatheredRooms{n: 200, together: make(chan struct{})}
	m := metrics.New()
	m.WatchRooms(store)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for i := range store.n {
		for _, want := range []string{
			fmt.Sprintf(`rushgate_room_waiting{room="r%d"} %d`, i, i),
			fmt.Sprintf(`rushgate_room_active{room="r%d"} 1`, i),
			fmt.Sprintf(`rushgate_room_admissions{room="r%d"} %d`, i, 2*i),
		} {
			if !strings.Contains(body, want+"\n") {
				t.Fatalf("the scrape lacks %s", want)
			}
		}
	}
}

// gatheredRooms holds each read of a room's counts until eight are under way at once.
type gatheredRooms struct {
	n        int
	mu       sync.Mutex
	reading  int
	together chan struct{}
}

func (g *gatheredRooms) Rooms(context.Context) ([]string, error) {
	ids := make([]string, g.n)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	return ids, nil
}

func (g *gatheredRooms) Stats(ctx context.Context, id string) (room.Stats, error) {
	g.mu.Lock()
	if g.reading++; g.reading == 8 {
		close(g.together)
	}
	g.mu.Unlock()
	select {
	case <-g.together:
	case <-ctx.Done():
		return room.Stats{}, ctx.Err()
	}
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "r"), 10, 64)
	return room.Stats{Waiting: n, Active: 1, AdmittedTotal: 2 * n}, nil
}
