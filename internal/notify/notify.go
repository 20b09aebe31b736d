// Package notify sends the webhooks that the record queues (package webhook says what a site
// receives). Each instance runs one Sender, which asks the record for what is due, POSTs each
// webhook to the site's URL, signed at the attempt, and records how it went: delivered on a 2xx,
// else due again after a wait that doubles up to an hour, until it is older than GiveUpAfter. Instances
// that share a record share its queue: a webhook leased to one is not sent by another meanwhile.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/rushgate/rushgate/webhook"
)

// Webhook is one queued event and how its delivery goes.
type Webhook struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"` // the body every delivery sends
	CreatedAt time.Time       `json:"created_at"`
	State     string          `json:"state"`
	Attempts  int             `json:"attempts"`
	// Due is when the next attempt may be made (pending only).
	Due       *time.Time `json:"due_at,omitempty"`
	LastError string     `json:"last_error,omitempty"`
	SentAt    *time.Time `json:"sent_at,omitempty"`
}

// The states of a queued webhook.
const (
	Pending   = "pending"   // to be sent when due, again after each failure
	Delivered = "delivered" // the site answered 2xx
	Failed    = "failed"    // given up: the site refused it until it was GiveUpAfter old
)

// Filter says which webhooks a list holds: those in State, about Auction or Drop; "" for any.
type Filter struct {
	State   string
	Auction string
	Drop    string
}

// ErrNotFound is the answer for a webhook the queue does not hold.
var ErrNotFound = errors.New("notify: no such webhook")

// Queue is the record's queue of webhooks; *record.DB is one.
type Queue interface {
	DueWebhooks(ctx context.Context, now time.Time, n int, lease time.Duration) ([]Webhook, error)
	WebhookDelivered(ctx context.Context, id string, at time.Time) error
	WebhookRetry(ctx context.Context, id, cause string, next time.Time) error
	WebhookFailed(ctx context.Context, id, cause string) error
}

// Observer hears how each attempt went: "delivered", "retry" (it failed and will be tried again) or
// "failed" (it failed for the last time).
type Observer interface {
	WebhookAttempt(outcome string)
}

// Config is a Sender's.
type Config struct {
	// URL is where every webhook is POSTed (rushgate serve --webhook-url).
	URL string
	// Secret signs each delivery (see webhook.Sign), and so does Previous, if set, while the site
	// moves from it to Secret.
	Secret   []byte
	Previous []byte
	Queue    Queue
	// Client sends the deliveries; nil means one that waits Timeout for an answer and follows no
	// redirect (a webhook is for the URL the operator gave, nowhere else).
	Client *http.Client
	// Timeout bounds one delivery; 0 means 10 s.
	Timeout time.Duration
	// Interval is how often the queue is read while it holds nothing due; 0 means a second.
	Interval time.Duration
	// GiveUpAfter is how long after its event a webhook is still tried; 0 means three days.
	GiveUpAfter time.Duration
	Logger      *slog.Logger
	Observer    Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Sender sends the queue's webhooks until its Run ends.
type Sender struct {
	cfg Config
}

// batch is how many webhooks one read of the queue leases.
const batch = 10

// maxWait is the longest wait between two attempts at one webhook.
const maxWait = time.Hour

// firstWait is the wait after a first failure; each later one doubles it.
const firstWait = 10 * time.Second

// CheckURL reports whether u is a URL webhooks can be sent to: absolute, http or https.
func CheckURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("notify: webhook URL %q: want an absolute http(s) URL", u)
	}
	return nil
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Sender, error) {
	if err := CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("notify: the webhook secret must be at least 16 bytes")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = 72 * time.Hour
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sender{cfg: cfg}, nil
}

// Run sends what is due until ctx ends. A delivery cut short by the end is not recorded: its lease
// ends, and an instance sends it again.
func (s *Sender) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := s.cfg.Interval
		n, err := s.sendDue(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil && !failing: // said once per outage of the record, which /healthz reports too
			failing = true
			s.cfg.Logger.Warn("webhooks: reading the queue failed; retrying every interval", "err", err)
		case err == nil && failing:
			failing = false
			s.cfg.Logger.Info("webhooks: the queue reads again")
		}
		if n == batch {
			next = 0 // more may be due
		}
		t.Reset(next)
	}
}

// sendDue sends one batch of due webhooks and returns how many it leased.
func (s *Sender) sendDue(ctx context.Context) (int, error) {
	// The lease outlasts the batch's deliveries, each bounded by Timeout, so that no other instance
	// sends one while this one may still.
	lease := batch*s.cfg.Timeout + 30*time.Second
	due, err := s.cfg.Queue.DueWebhooks(ctx, s.cfg.Now(), batch, lease)
	if err != nil {
		return 0, err
	}
	for _, w := range due {
		cause := s.deliver(ctx, w)
		if ctx.Err() != nil {
			break
		}
		s.settle(ctx, w, cause)
	}
	return len(due), nil
}

// settle records how the delivery of w went: cause is "" for delivered.
func (s *Sender) settle(ctx context.Context, w Webhook, cause string) {
	now := s.cfg.Now()
	var err error
	outcome := "delivered"
	switch {
	case cause == "":
		err = s.cfg.Queue.WebhookDelivered(ctx, w.ID, now)
	case now.Sub(w.CreatedAt) >= s.cfg.GiveUpAfter:
		outcome = "failed"
		err = s.cfg.Queue.WebhookFailed(ctx, w.ID, cause)
		s.cfg.Logger.Error("webhooks: giving up on a webhook the site did not take", "id", w.ID, "type", w.Type,
			"attempts", w.Attempts+1, "cause", cause)
	default:
		outcome = "retry"
		wait := Wait(w.Attempts + 1)
		err = s.cfg.Queue.WebhookRetry(ctx, w.ID, cause, now.Add(wait))
		s.cfg.Logger.Warn("webhooks: the site did not take a webhook; it is sent again later", "id", w.ID, "type", w.Type,
			"attempt", w.Attempts+1, "cause", cause, "retry_in", wait)
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.WebhookAttempt(outcome)
	}
	if err != nil {
		s.cfg.Logger.Warn("webhooks: recording a delivery's outcome failed; it is sent again when its lease ends", "id", w.ID, "err", err)
	}
}

// Wait is how long a webhook waits after its nth failed attempt: 10 s, doubling, at most an hour.
func Wait(failures int) time.Duration {
	d := firstWait
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// deliver POSTs w once and returns why the site did not take it, "" if it did.
func (s *Sender) deliver(ctx context.Context, w Webhook) string {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(w.Payload))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rushgate-webhook")
	req.Header.Set(webhook.EventHeader, w.Type)
	req.Header.Set(webhook.IDHeader, w.ID)
	var older [][]byte
	if len(s.cfg.Previous) > 0 {
		older = append(older, s.cfg.Previous)
	}
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(s.cfg.Secret, s.cfg.Now(), w.Payload, older...))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so that the connection is kept
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return ""
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.Status + " to " + resp.Header.Get("Location") + ": webhooks follow no redirect; give the final URL"
	default:
		return resp.Status
	}
}
