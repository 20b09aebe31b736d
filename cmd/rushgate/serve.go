package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"filippo.io/age"
	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/captcha"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/console"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/protect"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/visitor"
)

type serveFlags struct {
	// Parsed from their flags by check, which refuses what does not parse.
	trustedProxies []netip.Prefix
	sealTo         []age.Recipient
	openList       []string // --open-paths

	addr          string
	data          string
	adminKey      string
	logLevel      string
	logFormat     string
	newVisitors   int
	secureCookies bool
	templates     string
	enqueueSecret string
	captchaURL    string
	captchaSecret string
	protect       string
	protectRoom   string
	pathPrefix    string
	openPaths     string
	drainTimeout  time.Duration
	debugAddr     string
	metricsAddr   string
	trusted       string
	streamsPerIP  int
	redisURL      string
	redisCluster  bool
	redisPrefix   string
	redisFlush    time.Duration
	redisReplicas int
	// redisReplicaWait is how long a claim or bid waits for its replicas.
	redisReplicaWait time.Duration
	postgres         string
	fsync            string
	rotateKeys       time.Duration
	keyRetention     time.Duration
	webhookURL       string
	webhookSecret    string
	webhookOld       string
	backupDir        string
	backupEvery      time.Duration
	backupKeep       int
	backupTo         string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&f.data, "data", "./rushgate-data", "directory for signing keys and local data")
	fs.StringVar(&f.adminKey, "admin-key", "", "admin credential; generated and stored under --data when empty")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	fs.IntVar(&f.newVisitors, "new-visitors-per-minute", 0, "most new anonymous visitors per client address per minute (0: no limit)")
	fs.BoolVar(&f.secureCookies, "secure-cookies", false, "mark cookies Secure (set when TLS ends at a proxy)")
	fs.StringVar(&f.templates, "templates", "", "directory whose room.html, drop.html, auction.html or notice.html replace the built-in pages")
	fs.StringVar(&f.enqueueSecret, "enqueue-secret", "", "HS256 secret of the enqueue tokens sites sign for invite-only rooms")
	fs.StringVar(&f.captchaURL, "captcha-verify-url", "", "siteverify URL of a CAPTCHA service (Turnstile, hCaptcha) for rooms with captcha")
	fs.StringVar(&f.captchaSecret, "captcha-secret", "", "the secret key of that CAPTCHA service")
	fs.StringVar(&f.protect, "protect", "", "origin URL to protect as a reverse proxy: admitted visitors of --room reach it")
	fs.StringVar(&f.protectRoom, "room", "", "with --protect, the room whose admissions let visitors through")
	fs.StringVar(&f.pathPrefix, "path-prefix", "", "the path rushgate lives under on the public site (/rushgate): its pages, scripts and redirects name it; with --protect the site keeps every other path (empty: the root)")
	fs.StringVar(&f.openPaths, "open-paths", "", "with --protect, comma-separated paths that need no admission, each with what is below it (/static/,/favicon.ico)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 15*time.Second, "how long SIGTERM waits for in-flight requests")
	fs.StringVar(&f.debugAddr, "debug-addr", "", "serve net/http/pprof on this separate address (empty: off)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics without the admin key on this separate, private address (empty: off; /metrics on --addr always needs the admin key)")
	fs.StringVar(&f.trusted, "trusted-proxies", "", "comma-separated CIDRs or addresses of load balancers whose Forwarded / X-Forwarded-For headers name the client (empty: trust none)")
	fs.IntVar(&f.streamsPerIP, "streams-per-address", httpapi.DefaultStreamsPerAddress, "most event streams and live feeds open at once from one client address")
	fs.StringVar(&f.redisURL, "redis", "", "share state through Redis: redis://host:port/0, rediss:// for TLS, a comma-separated list of Cluster seeds, or Sentinels: redis://sentinel:26379?master_set=NAME&addr=sentinel2:26379 (empty: embedded backend)")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "treat --redis as a Redis Cluster even with one seed")
	fs.StringVar(&f.redisPrefix, "redis-prefix", "rg", "prefix of every Redis key, to share one Redis between deployments")
	fs.DurationVar(&f.redisFlush, "redis-flush-delay", 100*time.Microsecond, "how long a write to Redis may wait for others to share it: fewer system calls on both sides for at most this much latency (0: write at once)")
	fs.IntVar(&f.redisReplicas, "redis-replicas", 0, "answer a claim, bid or buy-now only once this many Redis replicas hold it (WAIT), so that a failover loses none answered; one they do not confirm within --redis-replica-wait is a 503 (0: once the master has it)")
	fs.DurationVar(&f.redisReplicaWait, "redis-replica-wait", 100*time.Millisecond, "with --redis-replicas, how long a claim or bid waits for its replicas (1ms to 10s)")
	fs.DurationVar(&f.rotateKeys, "rotate-keys-every", 0, "rotate the admission-token signing key on this schedule, e.g. 720h (0: only on POST /v1/keys/rotate)")
	fs.DurationVar(&f.keyRetention, "key-retention", keyring.DefaultRetain, "how long a signing key stays published after a newer key took over")
	fs.StringVar(&f.fsync, "fsync", "always", "embedded backend: always (claims and bids on disk before the answer, line changes within a second), everysec (all within a second) or no (when the OS writes)")
	fs.StringVar(&f.webhookURL, "webhook-url", "", "POST how each auction ended to this URL of the site, signed with --webhook-secret, until it answers 2xx (empty: off)")
	fs.StringVar(&f.webhookSecret, "webhook-secret", "", "the secret, shared with the site, that signs each webhook (at least 16 characters; better set as RUSHGATE_WEBHOOK_SECRET)")
	fs.StringVar(&f.webhookOld, "webhook-previous-secret", "", "while the webhook secret is changed, the one before, which signs too until the site checks with the new one")
	fs.StringVar(&f.backupDir, "backup-dir", "", "keep a backup (as GET /v1/backup answers) in this directory every --backup-every, each checked as a restore would read it (empty: off)")
	fs.DurationVar(&f.backupEvery, "backup-every", 24*time.Hour, "with --backup-dir, how often (at least 1m)")
	fs.IntVar(&f.backupKeep, "backup-keep", 7, "with --backup-dir, how many of the newest backups stay there")
	fs.StringVar(&f.backupTo, "backup-recipient", "", "seal every backup, downloaded or kept, to these age public keys (age1..., comma-separated; rushgate backup-key makes one): only their identities restore it (empty: plain archives)")
	fs.StringVar(&f.postgres, "postgres", "", "keep the durable record (claims, auction events, configs, the audit log) in PostgreSQL (postgres:// URL); default SQLite under --data")
}

// check refuses flag values that would make no sense at run time, and keeps what it parsed.
func (f *serveFlags) check() error {
	if f.rotateKeys != 0 && f.rotateKeys < 2*keyring.PublishAhead {
		return fmt.Errorf("--rotate-keys-every must be 0 or at least %v, since a new key is published %v before it signs", 2*keyring.PublishAhead, keyring.PublishAhead)
	}
	if f.keyRetention <= 0 {
		return errors.New("--key-retention must be positive")
	}
	if f.streamsPerIP < 1 {
		return errors.New("--streams-per-address must be at least 1")
	}
	if f.redisReplicas < 0 || f.redisReplicaWait < time.Millisecond || f.redisReplicaWait > 10*time.Second {
		return errors.New("--redis-replicas must be 0 or more, and --redis-replica-wait from 1ms to 10s")
	}
	if f.redisReplicas > 0 && f.redisURL == "" {
		return errors.New("--redis-replicas is for the Redis backend: the embedded one writes claims and bids to disk before it answers")
	}
	var err error
	if f.trustedProxies, err = httpapi.ParseTrustedProxies(f.trusted); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	if f.protect != "" {
		u, err := url.Parse(f.protect)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--protect %q: want the origin's http(s) URL", f.protect)
		}
		if !rushgate.ValidID(f.protectRoom) {
			return errors.New("--protect needs --room, the id of the room whose admissions let visitors through")
		}
		// Parsed once, here: a person may have written spaces after its commas.
		f.openList = nil
		for _, p := range strings.Split(f.openPaths, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "/") {
				return fmt.Errorf("--open-paths: %q is not a path: each starts with /", p)
			} else if p != "" {
				f.openList = append(f.openList, p)
			}
		}
	}
	if f.webhookURL != "" {
		if notify.CheckURL(f.webhookURL) != nil {
			return fmt.Errorf("--webhook-url %q: want the site's http(s) URL", f.webhookURL)
		}
		if len(strings.TrimSpace(f.webhookSecret)) < minAdminKey {
			return fmt.Errorf("--webhook-url needs --webhook-secret (or RUSHGATE_WEBHOOK_SECRET) of at least %d characters: the site checks each webhook with it", minAdminKey)
		}
	}
	if f.backupTo != "" {
		if f.sealTo, err = backup.ParseRecipients(f.backupTo); err != nil {
			return fmt.Errorf("--backup-recipient: %w", err)
		}
	}
	if f.backupDir != "" {
		if f.backupEvery < time.Minute || f.backupKeep < 1 {
			return errors.New("--backup-dir wants --backup-every of at least 1m and --backup-keep of at least 1")
		}
		if err := backup.CheckDir(f.backupDir, f.data); err != nil {
			return fmt.Errorf("--backup-dir: %w", err)
		}
		if f.redisURL != "" && f.postgres != "" {
			return errors.New("--backup-dir: on Redis with --postgres nothing under --data is this instance's own to back up: back Redis and PostgreSQL up with their own tools")
		}
	}
	if err := httpapi.CheckBase(f.pathPrefix); err != nil {
		return fmt.Errorf("--path-prefix: %w", err)
	}
	if f.adminKey != "" {
		// A blank key would lock the admin API out; a short one can be guessed.
		key := strings.TrimSpace(f.adminKey)
		if key == "" {
			return errors.New("--admin-key (or RUSHGATE_ADMIN_KEY) is blank: give a key of at least 16 characters, or none to have one generated")
		}
		if len(key) < minAdminKey {
			return fmt.Errorf("--admin-key (or RUSHGATE_ADMIN_KEY) must be at least %d characters, or none to have one generated", minAdminKey)
		}
		f.adminKey = key
	}
	return nil
}

// minAdminKey is the shortest admin key accepted: anything shorter can be guessed.
const minAdminKey = 16

// applyEnv sets every flag not given on the command line from RUSHGATE_<NAME>, so that containers can
// be configured through the environment alone.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "RUSHGATE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && !given[f.Name] && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fset := flag.NewFlagSet("serve", flag.ContinueOnError)
	fset.SetOutput(stderr)
	f.register(fset)
	if err := fset.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fset); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if err := checkDataDir(f.data); err != nil {
		return err
	}
	a, err := openApp(ctx, f, log, stdout)
	if err != nil {
		return err
	}
	defer a.close()
	return listenAndServe(ctx, log, f, a.backend, a.api, a.handler)
}

// app is rushgate with everything serve opens, in the order it opens it: the record, the backend and
// its secrets, the domain services and their loops, the HTTP API. close stops them in reverse order,
// so that producers of work stop before what they feed: the gates after the HTTP server has drained,
// the recorders before the record closes, the lines saved once nothing changes them.
type app struct {
	backend string
	api     *httpapi.Server
	handler http.Handler // the API, or the protecting proxy with the API inside
	closers []func()
}

// onClose adds a step to close, which runs the steps last first.
func (a *app) onClose(step func()) { a.closers = append(a.closers, step) }

// close stops everything openApp started, in reverse order.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// openApp opens what serve runs; on failure, what it had opened is closed again.
func openApp(ctx context.Context, f serveFlags, log *slog.Logger, stdout io.Writer) (_ *app, err error) {
	a := &app{}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	records, err := openRecords(ctx, f, log)
	if err != nil {
		return nil, err
	}
	records.LogTo(log)
	a.onClose(func() { records.Close() })
	// Before anything records: an auction that ended while every instance was down is closed at start.
	records.QueueWebhooks(f.webhookURL != "")
	m := metrics.New()
	be, err := openBackend(ctx, f, records, m, log)
	if err != nil {
		return nil, err
	}
	a.backend = be.name
	recordKind := "sqlite"
	if f.postgres != "" {
		recordKind = "postgres"
	}
	m.Build(buildVersion(), be.name, recordKind)
	a.onClose(be.close) // once the services have stopped (closed after this)
	adminKey, visitors, keys, err := loadSecrets(ctx, f, be.vault, stdout)
	if err != nil {
		return nil, err
	}

	svc := room.NewService(be.rooms, room.Options{Observer: m, Logger: log, History: be.history, Audit: be.audit,
		Stock: drop.StockOf(be.drops)})
	m.WatchRooms(svc)
	if err := svc.Start(ctx); err != nil {
		log.Warn("rooms not loaded at start; their gates start on first use", "err", err)
	}
	a.onClose(svc.Stop) // after the HTTP server has drained: producers of requests stop before the gates
	// Keys rotated by another instance, or on schedule, are taken up while serving.
	kctx, stopKeys := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); keys.Watch(kctx, f.rotateKeys, log) }()
	a.onClose(func() { stopKeys(); <-watched })
	auctions := auction.NewService(be.auctions, auction.ServiceOptions{Logger: log, Gate: svc, History: be.history, Audit: be.audit,
		Record: records})
	auctions.Start(ctx)
	a.onClose(auctions.Stop)
	drops := drop.NewService(be.drops, drop.Options{Gate: svc, Logger: log, History: be.history, Audit: be.audit,
		Record: records, Redemptions: records, Observer: m, Ended: records})
	drops.Start()
	a.onClose(drops.Stop) // after the HTTP server has drained: no claim starts a release after it
	m.WatchSales(drops, auctions)
	if f.webhookURL != "" {
		sender, err := notify.New(notify.Config{URL: f.webhookURL, Secret: []byte(strings.TrimSpace(f.webhookSecret)), Queue: records,
			Previous: []byte(strings.TrimSpace(f.webhookOld)), Logger: log, Observer: m})
		if err != nil {
			return nil, err
		}
		nctx, stopSending := context.WithCancel(context.Background())
		sent := make(chan struct{})
		go func() { defer close(sent); sender.Run(nctx) }()
		a.onClose(func() { stopSending(); <-sent }) // before the record store closes
	}
	if be.run != nil {
		rctx, stopRun := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); be.run(rctx, log) }()
		a.onClose(func() { stopRun(); <-ran }) // before the record store closes
	}
	if f.backupDir != "" {
		if err := os.MkdirAll(f.backupDir, 0o700); err != nil {
			return nil, fmt.Errorf("--backup-dir: %w", err)
		}
		bctx, stopBackups := context.WithCancel(context.Background())
		kept := make(chan struct{})
		go func() {
			defer close(kept)
			be.backups.Keep(bctx, backup.Schedule{Dir: f.backupDir, Every: f.backupEvery, Keep: f.backupKeep, Log: log})
		}()
		a.onClose(func() { stopBackups(); <-kept }) // before the backend and the record close
	}

	// Challenges are signed with a secret every instance shares, so one may issue and another verify.
	challengeSecret, _, err := be.vault.LoadOrCreate(ctx, "challenge.secret", randomSecret)
	if err != nil {
		return nil, fmt.Errorf("challenge secret: %w", err)
	}
	keys.Hold("challenge.secret", challengeSecret)
	trusted := f.trustedProxies
	// Operators' keys live in the vault beside the admin key: shared by every instance on Redis. Wrong
	// keys are counted per client across the API and the console's sign-in.
	operators := operator.New(be.vault, operator.Options{Audit: be.audit, Log: log})
	throttle := httpapi.NewKeyThrottle(trusted)
	cfg := httpapi.Config{
		Rooms: svc, Auctions: auctions, Drops: drops, Keys: keys, Visitors: visitors, Metrics: m, Logger: log,
		AdminKey: adminKey, Operators: operators, Throttle: throttle, NewVisitorsPerMinute: f.newVisitors, SecureCookies: f.secureCookies,
		TrustedProxies: trusted, StreamsPerAddress: f.streamsPerIP, Audit: be.audit,
		Console: console.New(console.Config{AdminKey: adminKey, Operators: operators, SecureCookies: f.secureCookies, Base: f.pathPrefix,
			Backups: be.backups != nil, Log: log, ClientAddr: func(r *http.Request) string { return httpapi.ClientAddr(trusted, r) },
			Refused: func() { m.AdminRefused("wrong_key") }, Throttle: throttle}),
		Templates: f.templates, Base: f.pathPrefix,
		Challenges: challenge.NewIssuer([]byte(strings.TrimSpace(string(challengeSecret))), nil), Spent: be.spent,
		EnqueueSecret: []byte(f.enqueueSecret), Releases: be.releases,
	}
	if be.backups != nil {
		cfg.Backups = be.backups
	}
	if f.captchaURL != "" {
		cfg.Captcha = captcha.New(f.captchaURL, f.captchaSecret, nil)
	}
	// The embedded backend answers claims and bids once they are recorded; Redis answers from its
	// outbox, which the recorder copies into the record.
	cfg.Record, cfg.Outbox, cfg.Backlog, cfg.Evicting, cfg.Unlogged = records, f.redisURL != "", be.backlog, be.evicting, be.unlogged
	cfg.Webhooks = records
	if u, err := url.Parse(f.webhookURL); err == nil && f.webhookURL != "" {
		cfg.WebhookURL = u.Redacted() // shown to operators: a password in it (basic auth to the site) is not
	}
	m.WatchRecord(records.Check)
	m.WatchStore(svc.Ready)
	if be.backlog != nil {
		m.WatchBacklog(be.backlog)
	}
	if a.api, err = httpapi.New(cfg); err != nil {
		return nil, err
	}
	a.handler = a.api.Handler()
	if f.protect != "" {
		origin, _ := url.Parse(f.protect) // checked by serveFlags.check
		room := f.protectRoom
		m.WatchProxy()
		a.handler = protect.New(protect.Config{
			Origin: origin, Room: room, OpenPaths: f.openList, Prefix: f.pathPrefix,
			API: a.api.Handler(), Serves: a.api.Serves, OriginDown: a.api.OriginDown,
			Verifier: admission.NewVerifierFunc(keys.PublicKeys), Logger: log, Observer: m,
			Release: func(ctx context.Context, token string) error { return a.api.ReleaseAdmission(ctx, room, token) },
			Revoked: a.api.Released, HTTPS: f.secureCookies, FromProxy: a.api.FromTrustedProxy, Hidden: console.Cookies,
		})
	}
	if f.metricsAddr != "" {
		msrv, err := sideServer("--metrics-addr", f.metricsAddr, map[string]http.Handler{"/metrics": m.Handler()}, log)
		if err != nil {
			return nil, err
		}
		a.onClose(func() { msrv.Close() })
	}
	return a, nil
}

// checkDataDir creates the data directory if needed and makes sure files can be written in it, so that a
// read-only or foreign directory is reported with its path and the cause, not as a database error.
func checkDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's own name says nothing to the operator
		}
		return fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	name := probe.Name()
	return errors.Join(probe.Close(), os.Remove(name))
}

// backend is what serve takes of the backend the flags choose: its stores and vault, and what it
// runs and closes.
type backend struct {
	name     string
	rooms    room.Store
	auctions auction.Store
	drops    drop.Store
	vault    keyring.Vault
	history  rushgate.History
	audit    rushgate.Audit
	spent    rushgate.Spent
	releases rushgate.Releases // admissions ended early, for the checks of every instance (and, embedded, of the next start)
	backups  *backup.Backups   // what GET /v1/backup copies of --data; nil when nothing there is the instance's own
	// run, when set, does the backend's background work until ctx ends: it copies the backend's outbox
	// into the SQL record, and looks at its Redis's settings (redisstore.Backend.Run).
	run func(ctx context.Context, log *slog.Logger)
	// evicting and unlogged, when set, name the nodes of the backend's Redis that may evict keys and
	// the masters that keep no append-only file, as last checked.
	evicting, unlogged func() []string
	// backlog, when set, counts what the outbox holds that the record does not yet.
	backlog func(ctx context.Context) (claims, events int64, err error)
	// close closes the backend; for the embedded one it saves the lines, so it runs once nothing
	// uses them.
	close func()
}

// openRecords opens the durable record: PostgreSQL when --postgres is set, else a SQLite
// file under --data. On Redis a PostgreSQL that does not answer yet does not stop the start.
func openRecords(ctx context.Context, f serveFlags, log *slog.Logger) (*record.DB, error) {
	fsync, err := record.ParseFsync(f.fsync)
	if err != nil {
		return nil, fmt.Errorf("--fsync: %w", err)
	}
	switch {
	case f.postgres != "" && f.redisURL != "":
		return record.OpenPostgresLater(ctx, f.postgres, log) // Redis keeps claims and bids until it opens
	case f.postgres != "":
		return record.OpenPostgres(ctx, f.postgres) // the embedded backend resumes from it
	}
	return record.OpenSQLite(ctx, filepath.Join(f.data, record.File), fsync)
}

// openBackend opens the backend the flags choose: Redis with --redis, else the embedded backend with
// what the record and the data directory kept of it.
func openBackend(ctx context.Context, f serveFlags, records *record.DB, m *metrics.Metrics, log *slog.Logger) (backend, error) {
	if f.redisURL == "" {
		fsync, _ := record.ParseFsync(f.fsync) // checked by openRecords
		b, err := memstore.Open(ctx, records, f.data, fsync, log)
		if err != nil {
			return backend{}, err
		}
		return backend{name: "memory", rooms: b.Rooms(), auctions: b.Auctions(), drops: b.Drops(), vault: b.Vault(),
			history: b.History(), audit: b.Audit(), spent: b.Spent(), releases: b.Releases(), close: b.Close,
			backups: backup.New(backup.Source{Dir: f.data, Record: records, Lines: b.Rooms().Save, Secrets: true}, m.Backup, f.sealTo...)}, nil
	}
	rdb, kind, err := redisClient(f.redisURL, f.redisCluster, f.redisFlush)
	if err != nil {
		return backend{}, err
	}
	cluster := kind == "redis-cluster"
	var settings atomic.Pointer[redisstore.Settings]
	b := redisstore.New(rdb, redisstore.Options{Prefix: f.redisPrefix, Cluster: cluster, Batched: m.VisitBatch, Records: m.RecordsInUse,
		Replicas: f.redisReplicas, ReplicaWait: f.redisReplicaWait, Unconfirmed: m.Unconfirmed,
		Settings: func(s redisstore.Settings) { settings.Store(&s); m.RedisSettings(s.Evicting, s.Unlogged) }})
	name := kind
	consumer := consumerName()
	be := backend{name: name, rooms: b.Rooms(), auctions: b.Auctions(), drops: b.Drops(), vault: b.Vault(),
		history: b.History(), audit: b.Audit(), spent: b.Spent(), releases: b.Releases(), backlog: b.Backlog, close: b.Close}
	be.run = func(ctx context.Context, log *slog.Logger) { b.Run(ctx, consumer, records, log) }
	last := func(nodes func(redisstore.Settings) []string) func() []string {
		return func() []string {
			if s := settings.Load(); s != nil {
				return nodes(*s)
			}
			return nil
		}
	}
	be.evicting = last(func(s redisstore.Settings) []string { return s.Evicting })
	be.unlogged = last(func(s redisstore.Settings) []string { return s.Unlogged })
	if f.postgres == "" {
		// Redis keeps the lines and the secrets; the SQLite record under --data is this instance's own.
		be.backups = backup.New(backup.Source{Dir: f.data, Record: records}, m.Backup, f.sealTo...)
	}
	return be, nil
}

// consumerName names this instance as a recorder, the holder of its leases: unique across hosts and restarts.
func consumerName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}

// redisClient connects to Redis and says which kind it is: "redis" (one seed is a standalone server
// unless cluster is set), "redis-cluster" (several seeds), or "redis-sentinel" (a URL that names the
// master_set its seeds, Sentinels, watch: the client follows the master they promote). Waits are
// bounded (dial 1s, a stalled connection 1s, each operation 500ms in the store), so that a slow or
// absent Redis turns into fast 503s rather than a pile of blocked requests. Every command is pipelined,
// even a lone one: on a connection that has not pipelined yet (a new one, or one just reconnected),
// rueidis sends a lone command synchronously and closes the connection when its deadline passes, and
// the reconnection that follows waits on the dial and handshake timeouts, not the request's (in a store
// test against a stalled Redis, the next joins waited a second instead of 300ms). Pipelined, a
// deadline only stops waiting for the answer.
func redisClient(spec string, cluster bool, flushDelay time.Duration) (rueidis.Client, string, error) {
	opt, kind, err := redisOptions(spec, cluster)
	if err != nil {
		return nil, "", err
	}
	opt.DisableCache = true
	opt.Dialer.Timeout = time.Second
	opt.Sentinel.Dialer.Timeout = time.Second
	opt.ConnWriteTimeout = time.Second
	opt.MaxFlushDelay = flushDelay
	opt.AlwaysPipelining = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, "", fmt.Errorf("--redis: %w", err)
	}
	return c, kind, nil
}

// sentinelRefresh is how often an instance on Sentinels asks them where the master is, besides hearing
// of each failover as it happens.
const sentinelRefresh = 5 * time.Second

// redisOptions reads --redis (and --redis-cluster) as redisClient describes. Sentinels listed as
// several seeds are no Cluster: taken for one, the instance would move a visitor's line pointer in a
// second step, which a standalone master does in the join's own script.
func redisOptions(spec string, cluster bool) (rueidis.ClientOption, string, error) {
	var opt rueidis.ClientOption
	var addrs []string
	for i, u := range strings.Split(spec, ",") {
		o, err := rueidis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return opt, "", fmt.Errorf("--redis: %w", err)
		}
		if i == 0 {
			opt = o
		}
		addrs = append(addrs, o.InitAddress...)
	}
	kind := "redis"
	switch {
	case opt.Sentinel.MasterSet != "" && cluster:
		return opt, "", errors.New("--redis: a URL with master_set names Sentinels, not a Cluster: leave out --redis-cluster")
	case opt.Sentinel.MasterSet != "":
		kind = "redis-sentinel"
		// The Sentinels' own credentials, when they have any; rediss:// speaks TLS to them too.
		u, _ := url.Parse(strings.TrimSpace(strings.Split(spec, ",")[0])) // parsed above
		q := u.Query()
		opt.Sentinel.Username, opt.Sentinel.Password = q.Get("sentinel_username"), q.Get("sentinel_password")
		opt.Sentinel.TLSConfig = opt.TLSConfig
		// A client that missed the Sentinels' word of a failover would write to the demoted master,
		// a replica that refuses writes, until restarted: it asks them again every few seconds.
		opt.Sentinel.TopologyRefreshInterval = sentinelRefresh
	case cluster || len(addrs) > 1:
		kind = "redis-cluster"
	}
	opt.InitAddress = addrs
	opt.ForceSingleClient = kind != "redis-cluster"
	return opt, kind, nil
}

// loadSecrets returns the admin key, the visitor-token issuer and the signing keys, creating each on
// first start. With Redis they live there, so every instance agrees; a generated admin key is printed
// once, by the instance that created it.
func loadSecrets(ctx context.Context, f serveFlags, v keyring.Vault, stdout io.Writer) (string, *visitor.Issuer, *keyring.Keyring, error) {
	adminKey := f.adminKey
	var stored []byte // the admin key as the vault keeps it, when it keeps it
	if adminKey == "" {
		key, created, err := v.LoadOrCreate(ctx, "admin.key", randomSecret)
		if err != nil {
			return "", nil, nil, fmt.Errorf("admin key: %w", err)
		}
		adminKey, stored = strings.TrimSpace(string(key)), key
		if created {
			where := filepath.Join(f.data, "admin.key")
			if f.redisURL != "" {
				where = "Redis"
			}
			fmt.Fprintf(stdout, "Generated admin key (stored in %s):\n%s\n", where, adminKey)
		}
	}
	secret, _, err := v.LoadOrCreate(ctx, "visitor.secret", randomSecret)
	if err != nil {
		return "", nil, nil, fmt.Errorf("visitor secret: %w", err)
	}
	visitors, err := visitor.NewIssuer([]byte(strings.TrimSpace(string(secret))))
	if err != nil {
		return "", nil, nil, err
	}
	keys, err := keyring.Open(ctx, v, keyring.Options{Retain: f.keyRetention})
	if err != nil {
		return "", nil, nil, err
	}
	// The keyring's watch puts these back if the vault loses them, as it does the keys.
	keys.Hold("visitor.secret", secret)
	if stored != nil {
		keys.Hold("admin.key", stored)
	}
	return adminKey, visitors, keys, nil
}

func randomSecret() ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	return []byte("rg_" + hex.EncodeToString(raw) + "\n"), nil
}

func listenAndServe(ctx context.Context, log *slog.Logger, f serveFlags, store string, api *httpapi.Server, handler http.Handler) error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(api.Drain)
	if f.debugAddr != "" {
		dbg, err := sideServer("--debug-addr", f.debugAddr, map[string]http.Handler{
			"/debug/pprof/": http.HandlerFunc(pprof.Index), "/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/trace": http.HandlerFunc(pprof.Trace),
		}, log)
		if err != nil {
			return err
		}
		defer dbg.Close()
	}
	log.Info("rushgate listening", "addr", ln.Addr().String(), "data", f.data, "store", store, "version", buildVersion())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("draining", "timeout", f.drainTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	api.Wait() // streams on taken-over connections, ended by Drain

	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	// A line logged for an operator's request says by whom (rushgate.WithActor).
	switch format {
	case "json":
		return slog.New(rushgate.LogActors(slog.NewJSONHandler(w, opts))), nil
	case "text":
		return slog.New(rushgate.LogActors(slog.NewTextHandler(w, opts))), nil
	default:
		return nil, fmt.Errorf("--log-format must be json or text, not %q", format)
	}
}

// sideServer serves a few private endpoints (the profiler, metrics) on a listener of their own, so that
// they are never exposed with the API. It stops with Close; an error that ends it otherwise is logged.
func sideServer(flagName, addr string, routes map[string]http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	mux := http.NewServeMux()
	for path, h := range routes {
		mux.Handle(path, h)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("side listener stopped", "flag", flagName, "err", err)
		}
	}()
	log.Info("side listener", "flag", flagName, "addr", ln.Addr().String())
	return srv, nil
}
