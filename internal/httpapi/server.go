// Package httpapi is rushgate's HTTP transport: the JSON API, Server-Sent Events and the health and
// metrics endpoints. It translates requests into calls on the domain services and domain outcomes into
// stable JSON errors; it holds no state of its own beyond the open streams.
package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/backup"
	"github.com/rushgate/rushgate/internal/captcha"
	"github.com/rushgate/rushgate/internal/challenge"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/notify"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/visitor"
)

// VisitorCookie carries the visitor token in browsers.
const VisitorCookie = "rg_visitor"

// Bounds of request bodies: every request of this API fits in a few hundred bytes, but a drop's config
// may list a coupon partner's codes, up to drop.MaxCodes of them.
const (
	maxBody     = 64 << 10
	maxDropBody = 4 << 20
)

// Config wires a Server to the rest of rushgate.
type Config struct {
	Rooms *room.Service
	// Auctions, when set, serves the auction API.
	Auctions *auction.Service
	// Drops, when set, serves the drop API.
	Drops    *drop.Service
	Keys     *keyring.Keyring
	Visitors *visitor.Issuer
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// AdminKey authorises every admin call: its holder is the owner.
	AdminKey string
	// Operators, when set, are the named keys the owner hands out: editors may make every admin call
	// but those of the owner (operators, backups, key rotation), viewers only read.
	Operators *operator.Roster
	// Throttle, when set, refuses (429) the admin calls of a client address that presented too many wrong
	// keys; the console's sign-in shares it.
	Throttle *KeyThrottle
	// NewVisitorsPerMinute limits, per client address, how many anonymous identities a client may be
	// issued; 0 means no limit. It stops one script from joining the line a million times.
	NewVisitorsPerMinute int
	// SecureCookies marks cookies Secure even on plain HTTP (behind a TLS-terminating proxy).
	SecureCookies bool
	// TrustedProxies are the load balancers and proxies whose Forwarded and X-Forwarded-For headers
	// name the client; behind them, per-client limits would otherwise count the whole crowd as one.
	// Headers from any other peer are ignored.
	TrustedProxies []netip.Prefix
	// StreamsPerAddress bounds the event streams and live feeds open at once from one client address;
	// 0 means DefaultStreamsPerAddress.
	StreamsPerAddress int
	// Clock judges token expiry; nil means time.Now. It must agree with the store's clock.
	Clock func() time.Time
	// Challenges issues and verifies the proof-of-work challenges of rooms that ask for them, and Spent
	// remembers the solutions used. Without Challenges the server signs with a secret of its own; without
	// Spent, rooms that ask for a challenge cannot be joined (503).
	Challenges *challenge.Issuer
	Spent      rushgate.Spent
	// Releases, when set, shares the admissions ended early with the other instances, so that their
	// check endpoints and proxies refuse them too; one instance alone needs none.
	Releases rushgate.Releases
	// Captcha checks the CAPTCHA answers of joins into rooms with captcha; nil refuses such joins (503).
	Captcha *captcha.Verifier
	// EnqueueSecret verifies the enqueue tokens sites sign (HS256) to put a subject in an invite-only
	// room's line; empty refuses them.
	EnqueueSecret []byte
	// Templates, when set, is a directory whose room.html replaces the waiting-room page's template
	// (see PageData for its fields).
	Templates string
	// Base is the path the server is mounted under ("" for the root), such as "/rushgate" when the
	// protecting proxy gives the site every other path (--path-prefix). The server still routes the
	// paths with Base taken off; what it hands browsers (its pages' files and calls, redirects, cookie
	// paths) has Base in front.
	Base string
	// Console, when set, serves the operator's console under /admin, and its signed-in sessions are
	// taken by the admin API in place of the admin key.
	Console Console
	// Audit, when set, is the log of operators' changes that GET /v1/audit reads; the domain services
	// write it.
	Audit rushgate.Audit
	// Record, when set, is the durable SQL record, which /healthz reports on. On the embedded backend
	// claims and bids wait for it, so /healthz answers 503 while it fails writes.
	Record RecordChecker
	// Outbox says that claims and bids are answered before they reach Record, from an outbox that keeps
	// them until it takes writes again (the Redis backend's streams): /healthz then answers a failing
	// record with 200 "degraded" rather than 503, since the instance still serves and loses nothing,
	// and every instance shares the record, so a 503 would take the whole fleet out of its balancer.
	Outbox bool
	// Backlog, when set, counts what the outbox holds that Record does not yet: an operator's /healthz
	// says it while the record fails.
	Backlog func(ctx context.Context) (claims, events int64, err error)
	// Evicting, when set, names the nodes of the state store that may evict keys once full, each with
	// its policy, as last checked: /healthz says "degraded" while there are any.
	Evicting func() []string
	// Unlogged, when set, names the masters of the state store that keep no append-only file, as last
	// checked: /healthz names them to the admin (and so the console does) without calling that
	// degraded, since many run so on purpose, relying on replicas.
	Unlogged func() []string
	// Webhooks, when set, is the queue of webhooks that GET /v1/webhooks lists, and WebhookURL where
	// they are sent ("" when they are not).
	Webhooks   Webhooks
	WebhookURL string
	// Backups, when set, copies the data directory for GET /v1/backup (a *backup.Backups). Without it
	// (on Redis with the record in PostgreSQL) the call answers 409 backup_unavailable.
	Backups Backups
}

// Backups copies the data directory while rushgate serves, as a gzip-compressed tar archive written
// to w; everything that can fail but the writing to w happens before w's first byte, and a copy asked
// for while another is taken fails with backup.ErrRunning. It counts its outcomes in the metrics.
type Backups interface {
	Backup(ctx context.Context, w io.Writer) error
	// Sealed says whether backups are age files (--backup-recipient).
	Sealed() bool
	// Status says how the backups went, and what --backup-dir keeps.
	Status() backup.Status
}

// Webhooks is the queue of webhooks as an operator reads it; *record.DB is one.
type Webhooks interface {
	Webhooks(ctx context.Context, f notify.Filter, limit int) ([]notify.Webhook, error)
	SendWebhookNow(ctx context.Context, id string, now time.Time) (notify.Webhook, error)
	QueuePing(ctx context.Context, now time.Time) (notify.Webhook, error)
}

// Console is the operator's console as the API sees it: pages to serve, and sessions to accept.
type Console interface {
	Handler() http.Handler
	// Authorized returns who r's signed-in session belongs to, if it carries one (and its CSRF token
	// when r changes anything), or the error that kept it from telling.
	Authorized(r *http.Request) (operator.Operator, bool, error)
}

// RecordChecker reports whether a durable record takes writes; record.DB is one.
type RecordChecker interface {
	Check(ctx context.Context) error
}

// Server serves the API.
type Server struct {
	rooms         *room.Service
	auctions      *auction.Service
	drops         *drop.Service
	now           func() time.Time
	keys          *keyring.Keyring
	verifier      *admission.Verifier
	visitors      *visitor.Issuer
	metrics       *metrics.Metrics
	log           *slog.Logger
	credentials   *operator.Keys
	operators     *operator.Roster
	throttle      *KeyThrottle
	limiter       *limiter
	record        RecordChecker
	outbox        bool
	backlog       func(ctx context.Context) (claims, events int64, err error)
	evicting      func() []string
	unlogged      func() []string
	auditLog      rushgate.Audit
	webhookLog    Webhooks
	webhookURL    string
	backups       Backups
	console       Console
	released      released // admissions ended early here, for the check endpoint
	pages         *pages
	challenges    *challenge.Issuer
	spent         rushgate.Spent
	enqueueSecret []byte
	captcha       *captcha.Verifier
	releases      rushgate.Releases
	listening     sync.WaitGroup // the listener of other instances' releases
	announcing    sync.WaitGroup // the releases whose announcement is tried again (see ended)
	unannounced   atomic.Int64   // how many of them
	trusted       []netip.Prefix
	secure        bool
	base          string // the path the server is mounted under, "" at the root
	mux           *http.ServeMux

	// streamCtx is the context of streams served on taken-over connections, which outlive their
	// request; Drain cancels it.
	streamCtx context.Context
	drain     context.CancelFunc
	streams   sync.WaitGroup

	limits  *streamLimits
	feedsMu sync.Mutex
	feeds   map[string]*feed // room NUL visitor -> the feed its streams share
}

// New returns a server; its Handler is ready at once. It fails only on templates that do not parse and
// on a Base that is not a plain path.
func New(cfg Config) (*Server, error) {
	if err := CheckBase(cfg.Base); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Server{
		rooms: cfg.Rooms, auctions: cfg.Auctions, drops: cfg.Drops, now: cfg.Clock, keys: cfg.Keys, verifier: admission.NewVerifierFunc(cfg.Keys.PublicKeys).WithClock(cfg.Clock), visitors: cfg.Visitors, metrics: cfg.Metrics, log: cfg.Logger,
		credentials: operator.NewKeys(cfg.AdminKey, cfg.Operators), secure: cfg.SecureCookies, base: cfg.Base,
		limiter: newLimiter(cfg.NewVisitorsPerMinute), trusted: cfg.TrustedProxies, record: cfg.Record, outbox: cfg.Outbox, backlog: cfg.Backlog, evicting: cfg.Evicting, unlogged: cfg.Unlogged, auditLog: cfg.Audit, console: cfg.Console, operators: cfg.Operators, throttle: cfg.Throttle,
		webhookLog: cfg.Webhooks, webhookURL: cfg.WebhookURL, backups: cfg.Backups,
		limits: newStreamLimits(cfg.StreamsPerAddress), feeds: make(map[string]*feed),
	}
	s.challenges, s.spent, s.enqueueSecret, s.captcha = cfg.Challenges, cfg.Spent, cfg.EnqueueSecret, cfg.Captcha
	if s.challenges == nil {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		s.challenges = challenge.NewIssuer(secret, cfg.Clock)
	}
	var err error
	if s.pages, err = loadPages(cfg.Templates); err != nil {
		return nil, err
	}
	if s.base != "" && cfg.Templates != "" {
		if names := unprefixed(cfg.Templates); len(names) > 0 {
			s.log.Warn("templates load rushgate's files by paths without the path prefix; use {{.Base}}/assets/...",
				"templates", names, "prefix", s.base)
		}
	}
	s.streamCtx, s.drain = context.WithCancel(context.Background())
	if s.releases = cfg.Releases; s.releases != nil {
		announced := s.releases.Listen(s.streamCtx)
		s.listening.Go(func() {
			for r := range announced {
				s.released.add(r.ID, r.Until)
			}
		})
	}
	s.routes()
	return s, nil
}

// CheckBase reports whether base can be a Server's Config.Base: "" or a path of plain segments
// ("/rushgate", "/queue/v2"), which pages may put in front of their URLs as they are, without a
// trailing slash, a dot segment or a character a URL or an HTML attribute would need escaped.
func CheckBase(base string) error {
	if base == "" {
		return nil
	}
	bad := len(base) > 100 || !strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/")
	for _, seg := range strings.Split(base[1:], "/") {
		bad = bad || seg == "" || seg == "." || seg == ".." ||
			strings.IndexFunc(seg, func(c rune) bool { return !unreserved(c) }) >= 0
	}
	if bad {
		return fmt.Errorf("base path %q: want \"\" or a path such as /rushgate: segments of letters, digits, '-', '.', '_' and '~', no trailing slash", base)
	}
	return nil
}

// unreserved reports whether c may appear in a URL's path as it is (RFC 3986 unreserved).
func unreserved(c rune) bool {
	return c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c))
}

// Drain ends every open event stream, so that an http.Server's Shutdown can finish: register it with
// RegisterOnShutdown. Streams end cleanly and clients reconnect to another instance.
func (s *Server) Drain() { s.drain() }

// Wait blocks until every stream ended by Drain has finished; call it after Drain, before stopping the
// room service those streams read from.
func (s *Server) Wait() {
	s.streams.Wait()
	s.listening.Wait()
	s.announcing.Wait()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", s.health)
	if s.metrics != nil {
		// Metrics name every room with live counts, which only an admin may read; scrapers without the
		// key use the private listener of --metrics-addr.
		m.HandleFunc("GET /metrics", s.admin(s.metrics.Handler().ServeHTTP))
	}
	m.HandleFunc("GET /v1/keys", s.keySet)
	m.HandleFunc("POST /v1/keys/rotate", s.owner(s.rotateKeys))
	m.HandleFunc("POST /v1/verify", s.verify)
	m.HandleFunc("POST /v1/visitors", s.admin(s.mintVisitor))
	m.HandleFunc("GET /v1/visitors/me", s.me)
	m.HandleFunc("GET /v1/rooms", s.admin(listing(s, "rooms", s.rooms.List)))
	m.HandleFunc("GET /v1/audit", s.admin(s.audit))
	m.HandleFunc("GET /v1/operators", s.owner(s.roster(s.listOperators)))
	m.HandleFunc("POST /v1/operators", s.owner(s.roster(s.addOperator)))
	m.HandleFunc("PATCH /v1/operators/{name}", s.owner(s.roster(s.patchOperator)))
	m.HandleFunc("DELETE /v1/operators/{name}", s.owner(s.roster(s.removeOperator)))
	m.HandleFunc("GET /v1/webhooks", s.admin(s.webhooks))
	m.HandleFunc("POST /v1/webhooks/{id}/send", s.admin(s.sendWebhook))
	m.HandleFunc("POST /v1/webhooks/ping", s.admin(s.pingWebhook))
	m.HandleFunc("GET /v1/backup", s.owner(s.backup))
	m.HandleFunc("GET /v1/backups", s.admin(s.listBackups))
	m.HandleFunc("PUT /v1/rooms/{room}", s.admin(s.putRoom))
	m.HandleFunc("PATCH /v1/rooms/{room}", s.admin(s.patchRoom))
	m.HandleFunc("POST /v1/rooms/{room}/invites", s.admin(s.addInvites))
	m.HandleFunc("GET /v1/rooms/{room}/history", s.admin(history(s, "room", s.rooms.History)))
	m.HandleFunc("GET /v1/rooms/{room}", s.admin(s.getRoom))
	m.HandleFunc("DELETE /v1/rooms/{room}", s.admin(s.deleteRoom))
	m.HandleFunc("POST /v1/rooms/{room}/join", s.join)
	m.HandleFunc("GET /v1/rooms/{room}/status", s.status)
	m.HandleFunc("GET /v1/rooms/{room}/events", s.events)
	m.HandleFunc("POST /v1/rooms/{room}/leave", s.leave)
	m.HandleFunc("POST /v1/rooms/{room}/release", s.release)
	m.HandleFunc("GET /v1/rooms/{room}/check", s.check)
	m.HandleFunc("GET /r/{room}", s.page)
	m.Handle("GET /assets/", http.StripPrefix("/assets/", s.assetHandler()))
	if s.auctions != nil {
		m.HandleFunc("GET /v1/auctions", s.admin(listing(s, "auctions", s.auctions.List)))
		m.HandleFunc("GET /v1/auctions/{auction}/history", s.admin(history(s, "auction", s.auctions.History)))
		m.HandleFunc("GET /v1/auctions/{auction}/config", s.admin(summary(s, "auction", s.auctions.Summary)))
		m.HandleFunc("GET /v1/auctions/{auction}/events.csv", s.admin(s.exportEvents))
		m.HandleFunc("POST /v1/auctions/{auction}/end", s.admin(s.endAuction))
		m.HandleFunc("POST /v1/auctions/{auction}/extend", s.admin(s.extendAuction))
		m.HandleFunc("PUT /v1/auctions/{auction}", s.admin(s.putAuction))
		m.HandleFunc("PATCH /v1/auctions/{auction}", s.admin(s.patchAuction))
		m.HandleFunc("DELETE /v1/auctions/{auction}", s.admin(s.deleteAuction))
		m.HandleFunc("GET /v1/auctions/{auction}", s.getAuction)
		m.HandleFunc("GET /v1/auctions/{auction}/bids", s.bids)
		m.HandleFunc("GET /v1/auctions/{auction}/me", s.auctionMe)
		m.HandleFunc("POST /v1/auctions/{auction}/bids", s.postBid)
		m.HandleFunc("POST /v1/auctions/{auction}/buy-now", s.buyNow)
		m.HandleFunc("GET /v1/auctions/{auction}/live", s.live)
		m.HandleFunc("GET /a/{auction}", s.auctionPage)
	}
	if s.drops != nil {
		m.HandleFunc("GET /v1/drops", s.admin(listing(s, "drops", s.drops.List)))
		m.HandleFunc("GET /v1/drops/{drop}/history", s.admin(history(s, "drop", s.drops.History)))
		// A viewer reads a drop's config without its listed codes (?codes=0), as the console does.
		m.HandleFunc("GET /v1/drops/{drop}/config", s.allow(func(op operator.Operator, r *http.Request) bool {
			return op.Role.Can(r.Method) && (op.Role != operator.Viewer || r.URL.Query().Get("codes") == "0")
		}, s.dropConfig))
		m.HandleFunc("POST /v1/drops/{drop}/open", s.admin(s.dropControl(true)))
		m.HandleFunc("POST /v1/drops/{drop}/close", s.admin(s.dropControl(false)))
		m.HandleFunc("PUT /v1/drops/{drop}", s.admin(s.putDrop))
		m.HandleFunc("PATCH /v1/drops/{drop}", s.admin(s.patchDrop))
		m.HandleFunc("DELETE /v1/drops/{drop}", s.admin(s.deleteDrop))
		m.HandleFunc("GET /v1/drops/{drop}", s.getDrop)
		m.HandleFunc("GET /v1/drops/{drop}/live", s.dropLive)
		m.HandleFunc("POST /v1/drops/{drop}/claims", s.postClaim)
		m.HandleFunc("GET /v1/drops/{drop}/claims", s.goods(s.listClaims))
		m.HandleFunc("GET /v1/drops/{drop}/claims.csv", s.goods(s.exportClaims))
		m.HandleFunc("GET /v1/drops/{drop}/claims/mine", s.myClaims)
		m.HandleFunc("GET /v1/drops/{drop}/codes/{code}", s.goods(s.claimOfCode))
		m.HandleFunc("POST /v1/drops/{drop}/codes/{code}/redeem", s.admin(s.redeemCode))
		m.HandleFunc("POST /v1/drops/{drop}/codes/{code}/unredeem", s.admin(s.unredeemCode))
		m.HandleFunc("GET /d/{drop}", s.dropPage)
	}
	if s.console != nil {
		m.Handle("/admin", s.console.Handler())
		m.Handle("/admin/", s.console.Handler())
	}
	m.HandleFunc("/", s.unmatched)
	s.mux = m
}

// Handler returns the API with panic recovery and request metrics around it.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", p)
				if !sw.wrote {
					s.writeError(sw, r, apiError(http.StatusInternalServerError, codeInternal, "internal error"))
				}
			}
			if s.metrics != nil && r.Pattern != "" {
				s.metrics.ObserveRequest(r.Pattern, sw.code, time.Since(start))
			}
		}()
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header["Authorization"] == nil {
			if err := crossOrigin.Check(r); err != nil {
				s.writeError(sw, r, apiError(http.StatusForbidden, codeCrossOrigin,
					"a page of another origin may not make this call; call it from this origin's pages or with an Authorization header"))
				return
			}
		}
		r = s.unmount(r)
		s.mux.ServeHTTP(sw, r)
	})
}

// unmount takes the base off a path that has it, so that a front that passes rushgate's paths on as
// the browser asked for them (nginx's proxy_pass without a URI) reaches the same routes as one that
// takes it off; paths without it are routed as they are.
func (s *Server) unmount(r *http.Request) *http.Request {
	if s.base == "" {
		return r
	}
	rest, ok := strings.CutPrefix(r.URL.Path, s.base)
	if !ok || (rest != "" && rest[0] != '/') {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = new(url.URL)
	*r2.URL = *r.URL
	r2.URL.Path = cmp.Or(rest, "/")
	r2.URL.RawPath = ""
	if raw, ok := strings.CutPrefix(r.URL.RawPath, s.base); ok && raw != "" {
		r2.URL.RawPath = raw
	}
	return r2
}

// crossOrigin refuses the calls a page of another origin makes a browser send: a form posted from it
// to a visitor call carries the rg_visitor cookie (SameSite=Lax keeps it from other sites, not from a
// sibling subdomain) and would join, leave, claim or bid as the visitor. A call with an Authorization
// header is let through: no page of another origin can add one without this server's consent, which it
// never gives (it answers no CORS preflight), and servers calling the API send neither Origin nor
// Sec-Fetch-Site, which the check lets through too.
var crossOrigin = http.NewCrossOriginProtection()

// unmatched answers paths no route serves, telling a wrong method from a wrong path.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	if allowed := s.allowed(r); len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, r, apiError(http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed here"))
		return
	}
	s.writeError(w, r, apiError(http.StatusNotFound, codeNotFound, "no such endpoint"))
}

// allowed returns the methods that r's path has routes for.
func (s *Server) allowed(r *http.Request) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := s.mux.Handler(probe); pat != "/" && pat != "" {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// health answers 200 while the state store answers and the durable record (when there is one to wait
// for) takes writes, else 503 saying which does not and why; 200 "degraded" names what works now but
// puts claims and bids at risk, or works for some rooms, drops and auctions only.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	err := s.rooms.Ready(r.Context())
	if errors.Is(err, rushgate.ErrUnconfirmed) {
		// Joins go on; claims and bids are made but answered 503 until the replicas confirm them.
		writeJSON(w, http.StatusOK, map[string]string{"status": "degraded", "store": "replicas behind"})
		return
	}
	if errors.Is(err, rushgate.ErrPartlyUnavailable) {
		// A Cluster master down: its slots' rooms, drops and auctions fail, the others go on. Every
		// instance sees the same store, so a 503 would only take the working part out too.
		body := map[string]string{"status": "degraded", "store": "partly unreachable"}
		if s.isAdmin(r) { // which masters, at which addresses: the operator's to read
			body["reason"] = strings.TrimPrefix(err.Error(), rushgate.ErrPartlyUnavailable.Error()+": ")
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	if err != nil {
		store := "unreachable"
		if errors.Is(err, rushgate.ErrWritesRefused) {
			store = "refuses writes"
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "store": store})
		return
	}
	if s.record != nil {
		if err := s.record.Check(r.Context()); err != nil {
			status, code := "unavailable", http.StatusServiceUnavailable
			if s.outbox {
				status, code = "degraded", http.StatusOK
			}
			body := map[string]any{"status": status, "record": "failing writes"}
			if s.isAdmin(r) { // a driver's message names hosts, users and paths: the operator's to read
				body["reason"] = err.Error()
				if s.backlog != nil { // and how much waits for the record, which the console shows
					if claims, events, err := s.backlog(r.Context()); err == nil {
						body["waiting"] = map[string]int64{"claims": claims, "events": events}
					}
				}
			}
			writeJSON(w, code, body)
			return
		}
	}
	body := map[string]any{"status": "ok"}
	if s.evicting != nil {
		if nodes := s.evicting(); len(nodes) > 0 {
			// Everything works until Redis fills up; then it deletes rushgate's keys rather than refuse.
			body = map[string]any{"status": "degraded", "store": "may evict keys"}
			if s.isAdmin(r) { // addresses of the operator's network
				body["reason"] = "maxmemory-policy: " + strings.Join(nodes, ", ")
			}
		}
	}
	if s.unlogged != nil {
		if masters := s.unlogged(); len(masters) > 0 && s.isAdmin(r) {
			body["unlogged"] = masters // named to the operator, without calling the store degraded
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// admin wraps an admin handler with the credential check: the admin key or an operator's key as a
// bearer token, or a console session (with its CSRF token for anything but a read). A viewer may only
// read. The handler runs with who called as the context's actor, whom the audit log names.
func (s *Server) admin(next http.HandlerFunc) http.HandlerFunc {
	return s.allow(func(op operator.Operator, r *http.Request) bool { return op.Role.Can(r.Method) }, next)
}

// goods wraps a read of what a drop hands out (its claims, their codes): a viewer watches a sale
// without being able to take its coupons away, so only the owner and editors may.
func (s *Server) goods(next http.HandlerFunc) http.HandlerFunc {
	return s.allow(func(op operator.Operator, r *http.Request) bool {
		return op.Role != operator.Viewer && op.Role.Can(r.Method)
	}, next)
}

// owner wraps a handler that only the admin key's holder may call: one that hands out credentials or
// the secrets themselves.
func (s *Server) owner(next http.HandlerFunc) http.HandlerFunc {
	return s.allow(func(op operator.Operator, _ *http.Request) bool { return op.Role == operator.Owner }, next)
}

func (s *Server) allow(may func(op operator.Operator, r *http.Request) bool, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op, ok, err := s.who(r)
		switch {
		case err == errTooManyKeys:
			w.Header().Set("Retry-After", strconv.Itoa(int(s.throttle.RetryAfter().Seconds())))
			s.writeError(w, r, err)
		case err != nil:
			s.writeError(w, r, fromDomain(err))
		case !ok:
			if _, keyed := admission.Bearer(r); keyed && s.metrics != nil {
				s.metrics.AdminRefused("wrong_key")
			}
			s.writeError(w, r, apiError(http.StatusUnauthorized, codeUnauthorized, "an admin key is required: Authorization: Bearer <admin key>"))
		case !may(op, r):
			if s.metrics != nil {
				s.metrics.AdminRefused("forbidden")
			}
			msg := "only the admin key may do this"
			if op.Role == operator.Viewer {
				msg = "a viewer may only read, and not a drop's claims or codes"
			}
			s.writeError(w, r, apiError(http.StatusForbidden, codeForbidden, msg))
		default:
			next(w, r.WithContext(rushgate.WithActor(r.Context(), op.Name)))
		}
	}
}

// errTooManyKeys refuses a key from a client address that presented too many wrong ones.
var errTooManyKeys = apiError(http.StatusTooManyRequests, codeRateLimited, "too many wrong keys from this address; retry later")

// who returns who r comes from: the owner for the admin key, an operator for its key, else the
// console session's, if any. A key is refused with errTooManyKeys while its client address is locked
// out, and a key that opens nothing counts toward that (Config.Throttle).
func (s *Server) who(r *http.Request) (operator.Operator, bool, error) {
	tok, ok := admission.Bearer(r)
	if !ok {
		if s.console == nil {
			return operator.Operator{}, false, nil
		}
		return s.console.Authorized(r)
	}
	if s.throttle.Locked(r) {
		return operator.Operator{}, false, errTooManyKeys
	}
	op, ok, err := s.credentials.Who(r.Context(), tok)
	if !ok && err == nil {
		s.throttle.Failed(r)
	}
	return op, ok, err
}

// isAdmin reports whether r comes from the owner or an operator, for answers that show an operator
// more (/healthz's reason). Through who, a key it refuses counts toward the throttle as at the admin
// calls, so what a key shows is no way around it.
func (s *Server) isAdmin(r *http.Request) bool {
	_, ok, err := s.who(r)
	return ok && err == nil
}

// statusWriter records the status for metrics and passes Flush and deadlines through to the
// connection via Unwrap, for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
