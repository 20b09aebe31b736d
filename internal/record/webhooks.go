package record

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/webhook"
)

// The queue of webhooks: each event a site is told of is a row whose id is the event's, so that an
// event queued again (a replay of the record, a drop's end found by every instance) is queued once. An
// auction's end is queued in the transaction that records it, so that a crash between the two loses
// neither; a drop's end is queued by the drop service's sampler, which finds it again after a crash.
// notify.Sender sends the rows that are due and marks how each went.

const insertWebhook = `INSERT INTO webhooks (id, type, payload, created_at, due_ms, attempts, state, last_error, sent_at)
	VALUES (?, ?, ?, ?, ?, 0, 'pending', '', '') ON CONFLICT (id) DO NOTHING`

// QueueWebhooks says whether the record queues the events a site's webhook is told of: serve turns it
// on with --webhook-url. Events recorded while it is off are never sent.
func (r *DB) QueueWebhooks(on bool) {
	if on {
		r.enabled.CompareAndSwap(0, time.Now().UnixMilli())
	}
	r.webhooks.Store(on)
}

// queueAuctionEnded queues the webhook of an auction's end, recorded in tx as ev with its status.
func (r *DB) queueAuctionEnded(ctx context.Context, tx *sql.Tx, id, status string, cfg auction.Config, ev auction.Event) error {
	data, err := json.Marshal(webhook.AuctionEnded{Auction: id, Title: cfg.Title, Status: status, Winner: ev.Bidder,
		FinalPrice: ev.Price, Currency: cfg.Currency, EndedAt: ev.At.UTC(), Seq: ev.Seq})
	if err != nil {
		return err
	}
	// The id is the same whenever this end is recorded again; the time tells apart the ends of two
	// auctions of one id (one without bids is deleted, and its id used again from seq 1).
	_, args, err := newWebhook(webhook.Event{ID: "auction." + id + "." + strconv.FormatInt(ev.Seq, 10) + "." +
		strconv.FormatInt(ev.At.UnixMilli(), 10), Type: webhook.TypeAuctionEnded, CreatedAt: time.Now(), Data: data})
	if err != nil {
		return err
	}
	return r.exec(ctx, tx, insertWebhook, args...)
}

// QueueDropEnded queues the webhook of a drop's end: sold out (drop.StatusSoldOut) or closed
// (drop.StatusClosed) at at, with claimed of its stock taken. The drop service reports an end when it
// finds one, on every instance and again after a restart; each end is queued once all the same, its
// id being the end's (a sold-out drop is never deleted, and a closed one is closed at its own time). An
// end is not queued while webhooks are off, nor one from before the record first queued webhooks: a
// drop that ended before the site was to be told is no news to it. (A drop that ended while every
// instance had webhooks off, after they were on once, is queued when they are on again.)
func (r *DB) QueueDropEnded(ctx context.Context, id string, cfg drop.Config, status drop.Status, claimed int, at time.Time) (err error) {
	if !r.webhooks.Load() {
		return nil
	}
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	since, err := r.webhooksSince(ctx)
	if err != nil {
		return fmt.Errorf("%w: webhook: %w", rushgate.ErrRecordUnavailable, err)
	}
	if at.Before(since) {
		return nil
	}
	key := "drop." + id + "." + string(status)
	if status == drop.StatusClosed {
		key += "." + strconv.FormatInt(at.UnixMilli(), 10)
	}
	data, err := json.Marshal(webhook.DropEnded{Drop: id, Title: cfg.Title, Status: string(status), Stock: cfg.Stock,
		Claimed: claimed, EndedAt: at.UTC()})
	if err != nil {
		return err
	}
	_, err = r.queue(ctx, webhook.Event{ID: key, Type: webhook.TypeDropEnded, CreatedAt: time.Now(), Data: data})
	return err
}

// webhooksSince returns since when the record queues webhooks: when the first instance that shares it
// turned them on (noted at its first drop's end), the same for every instance and across restarts.
func (r *DB) webhooksSince(ctx context.Context) (time.Time, error) {
	if at := r.since.Load(); at != nil {
		return *at, nil
	}
	v, err := r.meta(ctx, "webhooks_since", strconv.FormatInt(r.enabled.Load(), 10))
	if err != nil {
		return time.Time{}, err
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("record_meta webhooks_since %q: %w", v, err)
	}
	at := time.UnixMilli(ms)
	r.since.Store(&at)
	return at, nil
}

// newWebhook returns e as it is queued, due at once, and the arguments of insertWebhook that queue it.
func newWebhook(e webhook.Event) (notify.Webhook, []any, error) {
	e.CreatedAt = e.CreatedAt.UTC()
	body, err := json.Marshal(e)
	if err != nil {
		return notify.Webhook{}, nil, err
	}
	due := time.UnixMilli(e.CreatedAt.UnixMilli()).UTC()
	return notify.Webhook{ID: e.ID, Type: e.Type, Payload: body, CreatedAt: e.CreatedAt, State: notify.Pending, Due: &due},
		[]any{e.ID, e.Type, string(body), e.CreatedAt.Format(sortable), due.UnixMilli()}, nil
}

// QueuePing queues a test event, to be sent at once: an operator's check that the site's endpoint takes
// what rushgate sends and its signature.
func (r *DB) QueuePing(ctx context.Context, now time.Time) (_ notify.Webhook, err error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return r.queue(ctx, webhook.Event{ID: "ping." + strconv.FormatInt(now.UnixMilli(), 10) + "." + hex.EncodeToString(b[:]),
		Type: webhook.TypePing, CreatedAt: now, Data: json.RawMessage(`{}`)})
}

// queue queues e, due at once, in a statement of its own (an auction's end is queued in the
// transaction that records it instead), unless one of its id is queued already.
func (r *DB) queue(ctx context.Context, e webhook.Event) (notify.Webhook, error) {
	w, args, err := newWebhook(e)
	if err != nil {
		return notify.Webhook{}, err
	}
	if _, err := r.db.ExecContext(ctx, r.q(insertWebhook), args...); err != nil {
		return notify.Webhook{}, fmt.Errorf("%w: webhook: %w", rushgate.ErrRecordUnavailable, err)
	}
	return w, nil
}

// sortable is RFC 3339 with every digit of the nanoseconds, so that the text sorts as the time does
// (Webhooks lists by it); time.RFC3339Nano drops trailing zeros, and ".1Z" sorts after ".12Z".
const sortable = "2006-01-02T15:04:05.000000000Z07:00"

// DueWebhooks hands out up to n pending webhooks whose time has come, oldest first, and leases each for
// lease: another instance that asks meanwhile does not get it, and if this one dies before it says how
// the delivery went, the webhook is due again when the lease ends.
func (r *DB) DueWebhooks(ctx context.Context, now time.Time, n int, lease time.Duration) (_ []notify.Webhook, err error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	// The outer due_ms condition is checked again on a row another instance leased meanwhile (PostgreSQL
	// re-reads a row it waited for), so that only one of two instances asking at once gets it.
	ws, err := queryAll(ctx, r, `UPDATE webhooks SET due_ms = ? WHERE state = 'pending' AND due_ms <= ? AND id IN
		(SELECT id FROM webhooks WHERE state = 'pending' AND due_ms <= ? ORDER BY due_ms LIMIT ?)
		RETURNING id, type, payload, created_at, attempts, state, due_ms, last_error, sent_at`, scanWebhook,
		now.Add(lease).UnixMilli(), now.UnixMilli(), now.UnixMilli(), n)
	if err != nil {
		return nil, fmt.Errorf("record: webhooks due: %w", err)
	}
	// In the order they were queued: RETURNING keeps none.
	slices.SortStableFunc(ws, func(a, b notify.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return ws, nil
}

// WebhookDelivered marks a webhook delivered at at.
func (r *DB) WebhookDelivered(ctx context.Context, id string, at time.Time) error {
	return r.webhookDone(ctx, `UPDATE webhooks SET state = 'delivered', attempts = attempts + 1, last_error = '', sent_at = ?
		WHERE id = ? AND state = 'pending'`, ts(at), id)
}

// WebhookRetry notes an attempt that failed with cause; the webhook is due again at next.
func (r *DB) WebhookRetry(ctx context.Context, id, cause string, next time.Time) error {
	return r.webhookDone(ctx, `UPDATE webhooks SET attempts = attempts + 1, last_error = ?, due_ms = ? WHERE id = ? AND state = 'pending'`,
		cause, next.UnixMilli(), id)
}

// WebhookFailed notes a last attempt that failed with cause: the webhook is not sent again.
func (r *DB) WebhookFailed(ctx context.Context, id, cause string) error {
	return r.webhookDone(ctx, `UPDATE webhooks SET state = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ? AND state = 'pending'`,
		cause, id)
}

func (r *DB) webhookDone(ctx context.Context, query string, args ...any) (err error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	if _, err := r.db.ExecContext(ctx, r.q(query), args...); err != nil {
		return fmt.Errorf("record: webhook: %w", err)
	}
	return nil
}

// SendWebhookNow makes a webhook due now, whatever became of it (an operator whose site was down for a
// while sends what waits, or sends again what it lost), and returns it; notify.ErrNotFound if the
// queue has none of that id.
func (r *DB) SendWebhookNow(ctx context.Context, id string, now time.Time) (_ notify.Webhook, err error) {
	ctx, cancel := bound(ctx, opTimeout)
	defer cancel()
	defer func() { err = r.wrote(ctx, err) }()
	ws, err := queryAll(ctx, r, `UPDATE webhooks SET state = 'pending', due_ms = ?, sent_at = '' WHERE id = ?
		RETURNING id, type, payload, created_at, attempts, state, due_ms, last_error, sent_at`, scanWebhook, now.UnixMilli(), id)
	switch {
	case err != nil:
		return notify.Webhook{}, fmt.Errorf("%w: webhook: %w", rushgate.ErrRecordUnavailable, err)
	case len(ws) == 0:
		return notify.Webhook{}, notify.ErrNotFound
	}
	return ws[0], nil
}

// Webhooks returns the last limit queued webhooks that f takes, newest first.
func (r *DB) Webhooks(ctx context.Context, f notify.Filter, limit int) ([]notify.Webhook, error) {
	// The prefix of the ids of an auction's or a drop's events (see queueAuctionEnded, QueueDropEnded);
	// compared whole, as LIKE would take _ as a wildcard.
	prefix := ""
	switch {
	case f.Auction != "":
		prefix = "auction." + f.Auction + "."
	case f.Drop != "":
		prefix = "drop." + f.Drop + "."
	}
	ws, err := queryAll(ctx, r, `SELECT id, type, payload, created_at, attempts, state, due_ms, last_error, sent_at FROM webhooks
		WHERE (? = '' OR state = ?) AND (? = '' OR substr(id, 1, length(?)) = ?) ORDER BY created_at DESC, id DESC LIMIT ?`,
		scanWebhook, f.State, f.State, prefix, prefix, prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: webhooks: %w", rushgate.ErrRecordUnavailable, err)
	}
	if ws == nil {
		ws = []notify.Webhook{}
	}
	return ws, nil
}

func scanWebhook(rows *sql.Rows) (notify.Webhook, error) {
	var w notify.Webhook
	var payload, created, sent string
	var due int64
	if err := rows.Scan(&w.ID, &w.Type, &payload, &created, &w.Attempts, &w.State, &due, &w.LastError, &sent); err != nil {
		return w, err
	}
	w.Payload = json.RawMessage(payload)
	var err error
	if w.CreatedAt, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return w, err
	}
	if w.State == notify.Pending {
		at := time.UnixMilli(due).UTC()
		w.Due = &at
	}
	if sent != "" {
		at, err := time.Parse(time.RFC3339Nano, sent)
		if err != nil {
			return w, err
		}
		w.SentAt = &at
	}
	return w, nil
}
