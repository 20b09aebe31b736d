package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/webhook"
)

// TestMain fails the package if a Sender's loop outlives its Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = []byte("the-site-and-rushgate-share-this")

// clock is a settable clock for the Sender, starting now (the record stamps events with the real time).
type clock struct{ ns atomic.Int64 }

func newClock() *clock                   { c := &clock{}; c.ns.Store(time.Now().UnixNano()); return c }
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// site is a webhook receiver that answers with the statuses it is given, in turn (200 when they run out).
type site struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []delivery
}

type delivery struct {
	header http.Header
	body   []byte
	status int
}

func newSite(t *testing.T, statuses ...int) *site {
	s := &site{statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		status := http.StatusOK
		if len(s.statuses) > 0 {
			status, s.statuses = s.statuses[0], s.statuses[1:]
		}
		if status == http.StatusFound {
			w.Header().Set("Location", "/elsewhere")
		}
		s.got = append(s.got, delivery{r.Header.Clone(), body, status})
		w.WriteHeader(status)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// queued opens a record that queues webhooks, with one auction's end in it.
func queued(t *testing.T) *record.DB {
	t.Helper()
	r, err := record.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), record.FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.QueueWebhooks(true)
	st := auction.State{Config: auction.Config{Title: "Guitar", Currency: "EUR"}}
	if err := r.Record(context.Background(), "lot", st, []auction.Event{{Seq: 4, Kind: auction.EventClosed, Bidder: "v_w", Price: 1250, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs a Sender until the test ends.
func run(t *testing.T, cfg notify.Config) {
	t.Helper()
	s, err := notify.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// state returns the one queued webhook.
func state(t *testing.T, r *record.DB) notify.Webhook {
	t.Helper()
	ws, err := r.Webhooks(context.Background(), notify.Filter{}, 10)
	if err != nil || len(ws) != 1 {
		t.Fatalf("webhooks %+v, %v", ws, err)
	}
	return ws[0]
}

// TestDeliversSignedUntilTaken: a site that fails the first delivery gets the event again after the
// first wait, the same event and ID, each signed at its attempt so that webhook.Verify takes it; once it
// answers 2xx the webhook is delivered and never sent again.
func TestDeliversSignedUntilTaken(t *testing.T) {
	r := queued(t)
	s := newSite(t, http.StatusInternalServerError)
	c := newClock()
	var outcomes sync.Map
	run(t, notify.Config{URL: s.URL + "/hooks", Secret: secret, Queue: r, Interval: 5 * time.Millisecond, Now: c.Now,
		Observer: observer(func(o string) { n, _ := outcomes.LoadOrStore(o, new(atomic.Int32)); n.(*atomic.Int32).Add(1) })})
	until(t, "the first attempt", func() bool { return state(t, r).Attempts == 1 })
	if w := state(t, r); w.State != notify.Pending || w.LastError != "500 Internal Server Error" || !w.Due.Equal(c.Now().Add(10*time.Second).Truncate(time.Millisecond)) {
		t.Fatalf("after a 500: %+v (due %v)", w, w.Due)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(s.deliveries()); n != 1 {
		t.Fatalf("sent %d times before its wait was over", n)
	}
	c.Advance(11 * time.Second)
	until(t, "the delivery", func() bool { return state(t, r).State == notify.Delivered })
	time.Sleep(50 * time.Millisecond)
	got := s.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2", len(got))
	}
	for i, d := range got {
		if err := webhook.Verify(secret, d.header.Get(webhook.SignatureHeader), d.body, c.Now()); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if d.header.Get("Content-Type") != "application/json" || d.header.Get(webhook.EventHeader) != webhook.TypeAuctionEnded {
			t.Fatalf("delivery %d headers %v", i, d.header)
		}
	}
	if got[0].header.Get(webhook.SignatureHeader) == got[1].header.Get(webhook.SignatureHeader) || string(got[0].body) != string(got[1].body) {
		t.Fatal("the second attempt was not signed at its own time, or sent another body")
	}
	var e webhook.Event
	var data webhook.AuctionEnded
	if err := json.Unmarshal(got[1].body, &e); err != nil || json.Unmarshal(e.Data, &data) != nil {
		t.Fatal(err)
	}
	if e.ID != got[1].header.Get(webhook.IDHeader) || data.Winner != "v_w" || data.FinalPrice != 1250 || data.Currency != "EUR" {
		t.Fatalf("event %+v, data %+v", e, data)
	}
	for o, want := range map[string]int32{"retry": 1, "delivered": 1} {
		if n, ok := outcomes.Load(o); !ok || n.(*atomic.Int32).Load() != want {
			t.Fatalf("outcome %s counted %v, want %d", o, n, want)
		}
	}
}

type observer func(string)

func (o observer) WebhookAttempt(outcome string) { o(outcome) }

// TestFollowsNoRedirect: a site that answers with a redirect has not taken the webhook, and rushgate
// does not send it on to the other URL: the operator is told to give the final one.
func TestFollowsNoRedirect(t *testing.T) {
	r := queued(t)
	s := newSite(t, http.StatusFound)
	run(t, notify.Config{URL: s.URL, Secret: secret, Queue: r, Interval: 5 * time.Millisecond})
	until(t, "the attempt", func() bool { return state(t, r).Attempts == 1 })
	if w := state(t, r); !strings.Contains(w.LastError, "follow no redirect") || len(s.deliveries()) != 1 {
		t.Fatalf("after a redirect: %+v, %d requests", w, len(s.deliveries()))
	}
}

// TestGivesUp: a webhook the site still refuses once it is older than GiveUpAfter is failed, and not
// sent again.
func TestGivesUp(t *testing.T) {
	r := queued(t)
	s := newSite(t, http.StatusNotFound, http.StatusNotFound, http.StatusNotFound)
	c := newClock()
	run(t, notify.Config{URL: s.URL, Secret: secret, Queue: r, Interval: 5 * time.Millisecond, Now: c.Now, GiveUpAfter: time.Minute})
	until(t, "the first attempt", func() bool { return state(t, r).Attempts == 1 })
	c.Advance(2 * time.Minute)
	until(t, "the end", func() bool { return state(t, r).State == notify.Failed })
	c.Advance(2 * time.Hour)
	time.Sleep(50 * time.Millisecond)
	if w := state(t, r); w.Attempts != 2 || w.LastError != "404 Not Found" || len(s.deliveries()) != 2 {
		t.Fatalf("given up: %+v after %d requests", w, len(s.deliveries()))
	}
}

// TestWait: 10 s after a first failure, doubling, at most an hour.
func TestWait(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 9: 2560 * time.Second, 10: time.Hour, 60: time.Hour} {
		if got := notify.Wait(n); got != want {
			t.Errorf("Wait(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestNewRefuses: a URL that is not absolute http(s), or a short secret.
func TestNewRefuses(t *testing.T) {
	for _, cfg := range []notify.Config{
		{URL: "shop.example/hooks", Secret: secret},
		{URL: "ftp://shop.example/hooks", Secret: secret},
		{URL: "https:///hooks", Secret: secret},
		{URL: "https://shop.example/hooks", Secret: []byte("short")},
	} {
		if _, err := notify.New(cfg); err == nil {
			t.Errorf("New accepted %q with a secret of %d bytes", cfg.URL, len(cfg.Secret))
		}
	}
}

// flaky is a queue whose reads fail while down is set.
type flaky struct {
	notify.Queue
	down atomic.Bool
}

func (f *flaky) DueWebhooks(ctx context.Context, now time.Time, n int, lease time.Duration) ([]notify.Webhook, error) {
	if f.down.Load() {
		return nil, errors.New("the record does not answer")
	}
	return f.Queue.DueWebhooks(ctx, now, n, lease)
}

// TestQueueOutageSaidOnce: while the record cannot be read the Sender tries every interval, says so
// once rather than every second, says when it reads again, and then delivers what waited.
func TestQueueOutageSaidOnce(t *testing.T) {
	q := &flaky{Queue: queued(t)}
	q.down.Store(true)
	var logs syncBuffer
	s := newSite(t)
	run(t, notify.Config{URL: s.URL, Secret: secret, Queue: q, Interval: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	time.Sleep(100 * time.Millisecond) // some twenty reads
	q.down.Store(false)
	// The recovery is said once the pass that read the queue again has sent what it read.
	until(t, "the delivery, and the recovery said", func() bool {
		return len(s.deliveries()) == 1 && strings.Contains(logs.String(), "the queue reads again")
	})
	if warns, infos := strings.Count(logs.String(), "level=WARN"), strings.Count(logs.String(), "the queue reads again"); warns != 1 || infos != 1 {
		t.Fatalf("%d warnings and %d recoveries for one outage:\n%s", warns, infos, logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestSignsWithThePreviousSecretToo: while the secret is changed, a site that still checks with the
// previous one takes the delivery, as one that checks with the new one does.
func TestSignsWithThePreviousSecretToo(t *testing.T) {
	r := queued(t)
	s := newSite(t)
	previous := []byte("the-secret-the-site-has-used-so-far")
	run(t, notify.Config{URL: s.URL, Secret: secret, Previous: previous, Queue: r, Interval: 5 * time.Millisecond})
	until(t, "the delivery", func() bool { return len(s.deliveries()) == 1 })
	d := s.deliveries()[0]
	for _, k := range [][]byte{secret, previous} {
		if err := webhook.Verify(k, d.header.Get(webhook.SignatureHeader), d.body, time.Now()); err != nil {
			t.Errorf("checked with %q: %v", k, err)
		}
	}
}
