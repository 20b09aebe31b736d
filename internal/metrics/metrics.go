// Package metrics exposes rushgate's Prometheus metrics. It owns its registry (no global default) and
// implements [room.Observer], so the domain reports events without knowing about Prometheus.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

var _ room.Observer = (*Metrics)(nil)

// Rooms is what the metrics read to report per-room gauges at scrape time.
type Rooms interface {
	Rooms(ctx context.Context) ([]string, error)
	Stats(ctx context.Context, id string) (room.Stats, error)
}

// Metrics holds the registry and the counters rushgate updates.
type Metrics struct {
	reg         *prometheus.Registry
	joins       *prometheus.CounterVec
	admitted    *prometheus.CounterVec
	releases    *prometheus.CounterVec
	expiries    *prometheus.CounterVec
	requests    *prometheus.HistogramVec
	batches     prometheus.Histogram
	unconfirmed prometheus.Counter
	guards      *prometheus.CounterVec
	redemptions *prometheus.CounterVec
	webhooks    *prometheus.CounterVec
	backups     *prometheus.CounterVec
	backupAt    prometheus.Gauge
	refusals    *prometheus.CounterVec
	records     prometheus.Gauge
	recordsOnce sync.Once // registers records on first use: only the Redis backend has a value for it
	evicting    prometheus.Gauge
	unlogged    prometheus.Gauge
	redisOnce   sync.Once // registers evicting and unlogged, as recordsOnce

	// The protecting proxy's, registered by WatchProxy: only a server with --protect has them.
	proxied        *prometheus.CounterVec
	proxiedBy      map[string]prometheus.Counter // its children, resolved once; read-only after New
	originFailures *prometheus.CounterVec
	originAnswers  prometheus.Histogram

	// Children of the vectors on the hot path, looked up once: resolving label values hashes and
	// validates them on every call, which a join paid twice.
	joinsBy    sync.Map // room -> prometheus.Counter
	requestsBy sync.Map // routeCode -> prometheus.Observer
}

type routeCode struct {
	route string
	code  int
}

// New registers rushgate's metrics, plus Go runtime and process metrics, on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushgate_room_joins_total", Help: "Join requests answered, by room.",
		}, []string{"room"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushgate_room_admitted_total", Help: "Visitors admitted by this instance's gate, by room.",
		}, []string{"room"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushgate_room_releases_total", Help: "Admissions ended early by release, by room.",
		}, []string{"room"}),
		expiries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushgate_room_expiries_total", Help: "Admissions and waiting places that expired, by room and kind (session or idle).",
		}, []string{"room", "kind"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rushgate_http_request_duration_seconds", Help: "HTTP request latency by route and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "code"}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rushgate_redis_visit_batch_size", Help: "Joins and status reads sent to Redis in one call of the visit script.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		unconfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rushgate_redis_unconfirmed_total",
			Help: "Batches of claims or bids that the replicas --redis-replicas asks for did not confirm in time: answered 503 while made on the master.",
		}),
	}
	m.guards = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_join_guard_total",
		Help: "What the bot defences of joins did, by what (challenge, invite, captcha) and outcome (issued, solved, failed, replayed, used, refused).",
	}, []string{"what", "outcome"})
	m.redemptions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_drop_redemptions_total",
		Help: "Redemptions of drops' codes at checkouts through this instance, by drop and outcome: redeemed (the first time), refused (a code used already, presented again), returned (handed back by its cancelled order).",
	}, []string{"drop", "outcome"})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_webhook_attempts_total",
		Help: "Deliveries of webhooks to the site by this instance, by outcome: delivered (the site answered 2xx), retry (it did not; sent again later), failed (it did not, for the last time).",
	}, []string{"outcome"})
	m.backups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_backups_total",
		Help: "Backups taken by this instance, asked for (GET /v1/backup) or kept (--backup-dir), by outcome: taken (downloaded whole, or kept and read back), failed (none, cut short by rushgate, or not reading back), abandoned (a download its client stopped taking).",
	}, []string{"outcome"})
	m.backups.WithLabelValues("taken")
	m.backups.WithLabelValues("failed")
	m.backups.WithLabelValues("abandoned")
	m.backupAt = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushgate_backup_last_taken_timestamp_seconds",
		Help: "When this instance last had a backup downloaded whole, in Unix seconds; 0 since its start until one is.",
	})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_admin_refusals_total",
		Help: "Admin calls and console sign-ins this instance refused, by reason: wrong_key (a key that opens nothing: guessed, mistyped, or an operator's taken back or expired), forbidden (an operator's call beyond its role).",
	}, []string{"reason"})
	m.refusals.WithLabelValues("wrong_key")
	m.refusals.WithLabelValues("forbidden")
	m.records = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushgate_records_in_use",
		Help: "How many different SQL records the instances on this Redis record into (checked every 30 s); more than 1 splits the record of drops and auctions.",
	})
	m.evicting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushgate_redis_evicting",
		Help: "How many nodes of this instance's Redis may evict keys once full (a maxmemory with a maxmemory-policy other than noeviction; checked every 30 s): above 0, places in line, claims and bids can vanish.",
	})
	m.unlogged = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushgate_redis_unlogged",
		Help: "How many masters of this instance's Redis keep no append-only file (appendonly no; checked every 30 s): above 0, a restart of one loses the places in line since its last snapshot, and the claims and bids not yet in the SQL record.",
	})
	m.proxied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_protect_requests_total",
		Help: "Requests for the protected site, by outcome: admitted (let through), refused (sent to the room), open (an open path), preflight (a CORS preflight), invalid (a refused path).",
	}, []string{"outcome"})
	m.proxiedBy = map[string]prometheus.Counter{}
	for _, o := range []string{"admitted", "refused", "open", "preflight", "invalid"} {
		m.proxiedBy[o] = m.proxied.WithLabelValues(o)
	}
	m.originFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushgate_protect_origin_failures_total",
		Help: "Requests the protected site did not answer, by kind: unreachable, or upload_stalled (the visitor's body stopped arriving).",
	}, []string{"kind"})
	m.originAnswers = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "rushgate_protect_origin_duration_seconds", Help: "How long the protected site took to answer, up to its headers.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	m.reg.MustRegister(m.joins, m.admitted, m.releases, m.expiries, m.requests, m.batches, m.unconfirmed, m.guards, m.redemptions, m.webhooks,
		m.backups, m.backupAt, m.refusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchRooms adds per-room gauges of waiting and active visitors, read from rooms when scraped so that
// they are exact rather than sampled. It is separate from New because the rooms service is built with
// these metrics as its observer.
func (m *Metrics) WatchRooms(rooms Rooms) {
	m.reg.MustRegister(&roomCollector{rooms: rooms})
}

// Drops is what the metrics report per drop: the drops service, from what its sampler last read.
type Drops interface {
	Latest(fn func(drop.Summary))
}

// Auctions is what the metrics report per auction: the auctions service, from what its sampler last
// read.
type Auctions interface {
	Latest(fn func(auction.Summary))
}

// WatchSales adds per-drop and per-auction figures: an operator alerts on a drop's stock running out
// or an auction's end as on a line's length, and these are the counts every instance shares, not one
// instance's share of them. They come from what the services' samplers last read (a second old for a
// sale under way, a minute for one that is over), so that a scrape reads nothing from the store
// however many sales have ended; a sale over for an hour leaves the metrics.
func (m *Metrics) WatchSales(drops Drops, auctions Auctions) {
	m.reg.MustRegister(&salesCollector{drops: drops, auctions: auctions})
}

// WatchBacklog adds rushgate_record_backlog, read from backlog when scraped: on Redis, the claims and
// auction events answered but not in the SQL record yet. rushgate_record_up says the record fails;
// this says how much waits on it, and it also grows when the record is merely slow.
func (m *Metrics) WatchBacklog(backlog func(context.Context) (claims, events int64, err error)) {
	m.reg.MustRegister(&backlogCollector{backlog})
}

// WatchRecord adds rushgate_record_up, read from check when scraped: 1 while the durable SQL record
// takes writes, 0 while it fails them. On Redis claims and bids wait in the outbox meanwhile, and
// nothing else in the metrics would show that the record has fallen behind.
func (m *Metrics) WatchRecord(check func(context.Context) error) {
	m.reg.MustRegister(up("rushgate_record_up", "1 while the durable SQL record takes writes, 0 while it fails them.", check))
}

// WatchStore adds rushgate_store_up, read from ready when scraped: 1 while the state store answers and
// takes writes (what /healthz asks of it), 0 while all or part of it does not (a Cluster master down
// fails the requests of its slots, though /healthz says degraded). It shows how long an outage or a
// failover of Redis lasted, as each instance saw it.
// Replicas that fall behind are not an outage: the store takes writes, and
// rushgate_redis_unconfirmed_total counts what they leave unconfirmed.
func (m *Metrics) WatchStore(ready func(context.Context) error) {
	m.reg.MustRegister(up("rushgate_store_up", "1 while the state store answers and takes writes, 0 while all or part of it does not.",
		func(ctx context.Context) error {
			if err := ready(ctx); !errors.Is(err, rushgate.ErrUnconfirmed) {
				return err
			}
			return nil
		}))
}

// up is a gauge that runs check at each scrape: 1 when it passes, 0 when it fails.
func up(name, help string, check func(context.Context) error) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		ctx, cancel := scrapeContext()
		defer cancel()
		if check(ctx) != nil {
			return 0
		}
		return 1
	})
}

// WatchProxy adds the protecting proxy's metrics, which Proxied, OriginFailed and OriginAnswered
// update: a server with --protect calls it.
func (m *Metrics) WatchProxy() {
	m.reg.MustRegister(m.proxied, m.originFailures, m.originAnswers)
}

// Proxied counts a request for the protected site by its outcome (protect.Observer).
func (m *Metrics) Proxied(outcome string) {
	if c, ok := m.proxiedBy[outcome]; ok {
		c.Inc()
		return
	}
	m.proxied.WithLabelValues(outcome).Inc()
}

// OriginFailed counts a request the protected site did not answer (protect.Observer).
func (m *Metrics) OriginFailed(kind string) { m.originFailures.WithLabelValues(kind).Inc() }

// OriginAnswered records how long the protected site took to answer (protect.Observer).
func (m *Metrics) OriginAnswered(d time.Duration) { m.originAnswers.Observe(d.Seconds()) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Guarded counts one outcome of a join's bot defence: what is "challenge", "invite" or "captcha".
func (m *Metrics) Guarded(what, outcome string) { m.guards.WithLabelValues(what, outcome).Inc() }

// Redemption implements [drop.Observer].
func (m *Metrics) Redemption(id, outcome string) { m.redemptions.WithLabelValues(id, outcome).Inc() }

// WebhookAttempt implements [notify.Observer].
func (m *Metrics) WebhookAttempt(outcome string) { m.webhooks.WithLabelValues(outcome).Inc() }

// AdminRefused counts an admin call or a console sign-in refused: "wrong_key" or "forbidden".
func (m *Metrics) AdminRefused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// Backup counts a backup by its outcome, "taken" or "failed"; a taken one, finished at, is the latest.
func (m *Metrics) Backup(outcome string, at time.Time) {
	m.backups.WithLabelValues(outcome).Inc()
	if outcome == "taken" {
		m.backupAt.Set(float64(at.UnixMilli()) / 1000)
	}
}

// Joined implements [room.Observer].
func (m *Metrics) Joined(id string) {
	c, ok := m.joinsBy.Load(id)
	if !ok {
		c, _ = m.joinsBy.LoadOrStore(id, m.joins.WithLabelValues(id))
	}
	c.(prometheus.Counter).Inc()
}

// Admitted implements [room.Observer].
func (m *Metrics) Admitted(id string, n int) { m.admitted.WithLabelValues(id).Add(float64(n)) }

// Released implements [room.Observer].
func (m *Metrics) Released(id string) { m.releases.WithLabelValues(id).Inc() }

// Expired implements [room.Observer].
func (m *Metrics) Expired(id string, sessions, idle int) {
	if sessions > 0 {
		m.expiries.WithLabelValues(id, "session").Add(float64(sessions))
	}
	if idle > 0 {
		m.expiries.WithLabelValues(id, "idle").Add(float64(idle))
	}
}

// Gone implements [room.Observer]: a deleted room's series leave the metrics, so that they follow the
// rooms there are rather than every room this instance has served.
func (m *Metrics) Gone(id string) {
	m.joinsBy.Delete(id)
	m.joins.DeleteLabelValues(id)
	m.admitted.DeleteLabelValues(id)
	m.releases.DeleteLabelValues(id)
	m.expiries.DeleteLabelValues(id, "session")
	m.expiries.DeleteLabelValues(id, "idle")
}

// ObserveRequest records one HTTP request's latency under its route pattern (never its raw path, which
// would make one series per room and visitor).
func (m *Metrics) ObserveRequest(route string, code int, d time.Duration) {
	k := routeCode{route, code}
	o, ok := m.requestsBy.Load(k)
	if !ok {
		o, _ = m.requestsBy.LoadOrStore(k, m.requests.WithLabelValues(route, strconv.Itoa(code)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

// RecordsInUse sets how many different SQL records the instances on this Redis record into.
func (m *Metrics) RecordsInUse(n int) {
	m.recordsOnce.Do(func() { m.reg.MustRegister(m.records) })
	m.records.Set(float64(n))
}

// Build sets rushgate_build_info to 1, labelled with what this instance runs: the instances on each
// version, backend and record can then be counted, and a rolling deploy that stopped half-way shows
// as two versions at once. Call it once.
func (m *Metrics) Build(version, backend, record string) {
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rushgate_build_info",
		Help: "Always 1, labelled with this instance's version, its backend (memory, redis, redis-cluster, redis-sentinel) and its SQL record (sqlite, postgres).",
	}, []string{"version", "backend", "record"})
	info.WithLabelValues(version, backend, record).Set(1)
	m.reg.MustRegister(info)
}

// RedisSettings sets how many nodes of the Redis may evict keys, and how many of its masters keep no
// append-only file.
func (m *Metrics) RedisSettings(evicting, unlogged []string) {
	m.redisOnce.Do(func() { m.reg.MustRegister(m.evicting, m.unlogged) })
	m.evicting.Set(float64(len(evicting)))
	m.unlogged.Set(float64(len(unlogged)))
}

// VisitBatch records how many joins and status reads shared one call of Redis's visit script.
func (m *Metrics) VisitBatch(visits int) { m.batches.Observe(float64(visits)) }

// Unconfirmed counts a batch of claims or bids that Redis's replicas did not confirm in time.
func (m *Metrics) Unconfirmed() { m.unconfirmed.Inc() }

// scrapeContext bounds the reads of one scrape: a store that does not answer leaves its figures out
// rather than holding Prometheus past its own timeout.
func scrapeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Second)
}

type roomCollector struct{ rooms Rooms }

var (
	waitingDesc = prometheus.NewDesc("rushgate_room_waiting", "Visitors waiting in line.", []string{"room"}, nil)
	activeDesc  = prometheus.NewDesc("rushgate_room_active", "Visitors currently admitted.", []string{"room"}, nil)
	totalDesc   = prometheus.NewDesc("rushgate_room_admissions", "Admissions the room has made since it was created, across all instances.", []string{"room"}, nil)
)

func (c *roomCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitingDesc
	ch <- activeDesc
	ch <- totalDesc
}

// statsReaders is how many rooms' counts a scrape reads at once. On Redis each read is a round trip,
// and concurrent ones share round trips (rueidis pipelines them): a scrape of a thousand rooms read
// one after another took a thousand round trips, and past some thousands ran out of the scrape's
// time, leaving rooms out without a word.
const statsReaders = 16

func (c *roomCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := scrapeContext()
	defer cancel()
	ids, err := c.rooms.Rooms(ctx)
	if err != nil {
		return
	}
	stats, read := make([]room.Stats, len(ids)), make([]bool, len(ids))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(statsReaders, len(ids)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ids)); i = next.Add(1) - 1 {
				st, err := c.rooms.Stats(ctx, ids[i])
				stats[i], read[i] = st, err == nil
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if !read[i] {
			continue
		}
		st := stats[i]
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(st.Waiting), id)
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(st.Active), id)
		ch <- prometheus.MustNewConstMetric(totalDesc, prometheus.CounterValue, float64(st.AdmittedTotal), id)
	}
}

// salesCollector reports drops and auctions as their services' samplers last read them.
type salesCollector struct {
	drops    Drops
	auctions Auctions
}

var (
	dropClaimedDesc   = prometheus.NewDesc("rushgate_drop_claimed", "Units the drop has handed out since it was created, across all instances.", []string{"drop"}, nil)
	dropRemainingDesc = prometheus.NewDesc("rushgate_drop_remaining", "Units of the drop left to claim.", []string{"drop"}, nil)
	dropOpenDesc      = prometheus.NewDesc("rushgate_drop_open", "1 while the drop takes claims, else 0 (scheduled, closed or sold out).", []string{"drop"}, nil)
	auctionBidsDesc   = prometheus.NewDesc("rushgate_auction_bids", "Bids the auction has accepted since it opened, across all instances.", []string{"auction"}, nil)
	auctionPriceDesc  = prometheus.NewDesc("rushgate_auction_price", "The auction's current price, in minor units of its currency.", []string{"auction", "currency"}, nil)
	auctionOpenDesc   = prometheus.NewDesc("rushgate_auction_open", "1 while the auction takes bids, else 0.", []string{"auction"}, nil)
	auctionEndsDesc   = prometheus.NewDesc("rushgate_auction_ends_at_seconds", "When the auction ends, in Unix seconds (soft close moves it).", []string{"auction"}, nil)
)

func (c *salesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dropClaimedDesc, dropRemainingDesc, dropOpenDesc, auctionBidsDesc, auctionPriceDesc, auctionOpenDesc, auctionEndsDesc} {
		ch <- d
	}
}

func (c *salesCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c.drops.Latest(func(d drop.Summary) {
		ch <- prometheus.MustNewConstMetric(dropClaimedDesc, prometheus.CounterValue, float64(d.Claimed), d.ID)
		gauge(dropRemainingDesc, float64(d.Remaining), d.ID)
		gauge(dropOpenDesc, one(d.Status == drop.StatusOpen), d.ID)
	})
	c.auctions.Latest(func(a auction.Summary) {
		ch <- prometheus.MustNewConstMetric(auctionBidsDesc, prometheus.CounterValue, float64(a.Bids), a.ID)
		gauge(auctionPriceDesc, float64(a.Price), a.ID, a.Config.Currency)
		gauge(auctionOpenDesc, one(a.Status == auction.StatusOpen), a.ID)
		gauge(auctionEndsDesc, float64(a.EndsAt.Unix()), a.ID)
	})
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

type backlogCollector struct {
	backlog func(context.Context) (claims, events int64, err error)
}

var backlogDesc = prometheus.NewDesc("rushgate_record_backlog",
	"Claims and auction events in Redis's outbox that the SQL record does not hold yet, across all instances.", []string{"kind"}, nil)

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- backlogDesc }

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := scrapeContext()
	defer cancel()
	claims, events, err := c.backlog(ctx)
	if err != nil {
		return // Redis does not answer: /healthz says so
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(claims), "claims")
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(events), "events")
}
