// Package protect puts rushgate in front of a site as a reverse proxy (rushgate serve --protect URL
// --room R): admitted visitors reach the origin, WebSockets and streamed answers included; everyone else
// is sent to the room's page; rushgate's own paths are served by rushgate; open paths pass straight
// through. A response of the origin that carries "Rushgate-Command: release" ends the visitor's
// admission (see admission.Gate).
package protect

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// Own lists the prefixes of the paths rushgate serves itself in front of a site when it has no
// Config.Prefix: its API, pages, scripts, console and health. Under them, Config.Serves tells rushgate's
// paths from the site's.
var Own = []string{"/v1/", "/r/", "/d/", "/a/", "/assets/", "/admin", "/healthz", "/metrics"}

// Config wires a proxy.
type Config struct {
	// Origin is the protected site.
	Origin *url.URL
	// Room is the room whose admissions let visitors through.
	Room string
	// OpenPaths are paths that need no admission (static files, a favicon), each with what is below it;
	// one that ends in "/" only what is below it.
	OpenPaths []string
	// API serves rushgate's own paths.
	API http.Handler
	// Prefix, when set ("/rushgate"), is the one path under which rushgate serves its own: API gets
	// those requests as they came and takes Prefix off itself (httpapi.Server does, for its Base, as it
	// must behind nginx too), and every other path is the site's, so a site's own /admin, /healthz or
	// /v1/rooms/{id} stays its own. Empty means rushgate's paths are those of Own, at the root.
	Prefix string
	// Serves reports whether a request under one of the Own prefixes is for rushgate (API answers it)
	// rather than for the site: many sites have their own /assets/ (Rails, Vite) or /v1/ API. Nil
	// means every path under them is rushgate's.
	Serves func(r *http.Request) bool
	// Verifier checks admission tokens, with the server's own keys.
	Verifier *admission.Verifier
	// Logger receives the origin's failures; nil means slog.Default().
	Logger *slog.Logger
	// Release ends an admission by its token when the origin asks; Revoked reports the admissions
	// ended early, which are refused from then on.
	Release func(ctx context.Context, token string) error
	Revoked func(id string) bool
	// HTTPS says visitors reach the proxy over HTTPS that ends in front of it (--secure-cookies): the
	// origin is told so in X-Forwarded-Proto (an origin that redirects plain HTTP to HTTPS would
	// otherwise loop), the room sends visitors back to https URLs, and cookies are Secure.
	HTTPS bool
	// FromProxy, when set, reports whether a request came from a load balancer in front of the proxy
	// (--trusted-proxies; httpapi.Server.FromTrustedProxy): the forwarding headers of its requests
	// reach the origin (X-Forwarded-For with the balancer appended, Forwarded as it came), so that the
	// origin sees its visitors' addresses; anyone else's are dropped, since a visitor could forge them.
	FromProxy func(r *http.Request) bool
	// Hidden names cookies of rushgate's own that the origin is never sent (the console's session: an
	// operator's credential, which a site that logs its cookies would otherwise keep).
	Hidden []string
	// Observer, when set, is told what the proxy did, for metrics.
	Observer Observer
	// OriginDown, when set, answers a person's request for a page (a navigation) that the origin did
	// not answer, in place of the JSON error scripts get.
	OriginDown http.HandlerFunc
}

// Observer is told what the proxy did; metrics.Metrics implements it.
type Observer interface {
	// Proxied counts a request for the site by what became of it: OutcomeAdmitted, OutcomeRefused,
	// OutcomeOpen, OutcomePreflight or OutcomeInvalid.
	Proxied(outcome string)
	// OriginFailed counts a request the origin did not answer: FailureUnreachable, or
	// FailureUploadStalled when the visitor's body stopped arriving.
	OriginFailed(kind string)
	// OriginAnswered records how long the origin took to answer a request, up to its headers.
	OriginAnswered(d time.Duration)
}

// What became of a request for the site, and why the origin did not answer one, as Observer hears.
const (
	OutcomeAdmitted      = "admitted"       // the gate let it through to the origin
	OutcomeRefused       = "refused"        // the gate sent it to the room (or refused it, for a non-GET)
	OutcomeOpen          = "open"           // an open path, straight to the origin
	OutcomeInvalid       = "invalid"        // a path the proxy refuses (invalid_path)
	OutcomePreflight     = "preflight"      // a CORS preflight, which carries no admission, to the origin
	FailureUnreachable   = "unreachable"    // the origin did not answer
	FailureUploadStalled = "upload_stalled" // the visitor's body stopped arriving
)

// nobody is the Observer of a proxy without one.
type nobody struct{}

func (nobody) Proxied(string)               {}
func (nobody) OriginFailed(string)          {}
func (nobody) OriginAnswered(time.Duration) {}

// buffers recycles the buffers ReverseProxy copies answers through: without a pool it allocates and
// clears 32 KiB for every answer, a tenth of the proxy's CPU under a crowd.
type buffers struct{ pool sync.Pool }

// Get returns a recycled buffer, or a new one.
func (b *buffers) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

// Put keeps buf for a later answer.
func (b *buffers) Put(buf []byte) { b.pool.Put(&buf) }

// hostPort is where a plain-HTTP origin listens (https origins go through http.Transport).
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// New returns the handler that serves everything: rushgate's paths, open paths, and the gated origin.
func New(cfg Config) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	obs := cfg.Observer
	if obs == nil {
		obs = nobody{}
	}
	origin := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// ReverseProxy has dropped the forwarding headers from Out: a trusted balancer's are put back.
			if cfg.FromProxy != nil && cfg.FromProxy(r.In) {
				for _, h := range []string{"X-Forwarded-For", "Forwarded"} { // SetXForwarded appends to the first
					if v := r.In.Header[h]; v != nil {
						r.Out.Header[h] = v
					}
				}
			}
			hideCookies(r.Out.Header, cfg.Hidden)
			r.SetURL(cfg.Origin)
			r.SetXForwarded()
			if cfg.HTTPS {
				r.Out.Header.Set("X-Forwarded-Proto", "https")
			}
			r.Out.Host = r.In.Host
		},
		// FlushInterval stays 0: ReverseProxy flushes event streams and answers of unknown length as the
		// origin writes them (batched holds the latter for up to flushDelay), and everything else once.
		// Flushing after every write (-1) cost an extra system call per answer, and a third of the
		// proxy's CPU went to flushes.
		BufferPool: &buffers{},
		ModifyResponse: func(res *http.Response) error {
			if b, ok := res.Request.Context().Value(batchedKey{}).(*batched); ok {
				obs.OriginAnswered(time.Since(b.start))
			}
			return endOnClose(res)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if stalled(r) { // before the check below: net/http cancels the request when a read times out
				obs.OriginFailed(FailureUploadStalled)
				log.InfoContext(r.Context(), "upload stalled", "path", r.URL.Path, "idle", uploadIdle.String())
				writeError(w, http.StatusRequestTimeout, "request_timeout", "the request's body stopped arriving")
				return
			}
			if errors.Is(err, context.Canceled) {
				return // the visitor went away
			}
			obs.OriginFailed(FailureUnreachable)
			log.WarnContext(r.Context(), "origin unreachable", "path", r.URL.Path, "err", err)
			if cfg.OriginDown != nil && navigation(r) {
				cfg.OriginDown(w, r)
				return
			}
			writeError(w, http.StatusBadGateway, "origin_unavailable", "the protected site did not answer")
		},
		// Connections to the origin are kept for the crowd's requests: net/http's default keeps two
		// idle, and a crowd would open and close one per request.
		Transport: &transport{addr: hostPort(cfg.Origin), fallback: &http.Transport{Proxy: nil, MaxIdleConns: maxIdle,
			MaxIdleConnsPerHost: maxIdle, IdleConnTimeout: idleTimeout, ForceAttemptHTTP2: false, DisableCompression: true}},
	}
	gate := &admission.Gate{Verifier: cfg.Verifier, Room: cfg.Room, RoomURL: cfg.Prefix + "/r/" + cfg.Room, Release: cfg.Release,
		Revoked: cfg.Revoked, HTTPS: cfg.HTTPS, Refused: func(*http.Request) { obs.Proxied(OutcomeRefused) }}
	gated := gate.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obs.Proxied(OutcomeAdmitted)
		serve(origin, w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := cleanPath(r.URL.Path)
		if !ok {
			obs.Proxied(OutcomeInvalid)
			writeError(w, http.StatusBadRequest, "invalid_path", "the path has a backslash, or a dot segment with parameters")
			return
		}
		if p != r.URL.Path {
			// The same answer as http.ServeMux gives: a path relative to this site, so it stays here.
			http.Redirect(w, r, (&url.URL{Path: p, RawQuery: r.URL.RawQuery}).String(), http.StatusTemporaryRedirect)
			return
		}
		if cfg.Prefix != "" {
			if rest, ok := strings.CutPrefix(p, cfg.Prefix); ok && (rest == "" || rest[0] == '/') {
				cfg.API.ServeHTTP(w, r)
				return
			}
		} else if ownPath(p) && (cfg.Serves == nil || cfg.Serves(r)) {
			cfg.API.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" && r.Header.Get("Origin") != "" {
			// A CORS preflight: browsers send it without cookies, so the gate could only refuse it, and
			// then the request it asks about, which the gate judges, would never be sent. It changes
			// nothing, so the site answers it.
			obs.Proxied(OutcomePreflight)
			serve(origin, w, r)
			return
		}
		for _, open := range cfg.OpenPaths {
			if opens(open, p) {
				obs.Proxied(OutcomeOpen)
				serve(origin, w, r)
				return
			}
		}
		gated.ServeHTTP(w, r)
	})
}

// opens reports whether the open path open covers the clean path p: a path ending in "/" covers what
// is below it, any other that path and what is below it, never a longer name ("/favicon.ico" opens
// neither "/favicon.icon" nor "/favicon.ico.php"; "/api/public" not "/api/public-admin").
func opens(open, p string) bool {
	if open == "" || !strings.HasPrefix(p, open) {
		return false
	}
	return len(p) == len(open) || open[len(open)-1] == '/' || p[len(open)] == '/'
}

// hideCookies takes the cookies named in hidden out of h's Cookie headers, dropping a header left empty.
// A request without them, nearly every one, is left as it is.
func hideCookies(h http.Header, hidden []string) {
	values := h["Cookie"]
	found := false
	for _, v := range values {
		for _, name := range hidden {
			found = found || strings.Contains(v, name) // a superset of the cookies named so: parsed below
		}
	}
	if !found {
		return
	}
	var kept []string
	for _, v := range values {
		var parts []string
		for part := range strings.SplitSeq(v, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if part != "" && !slices.Contains(hidden, strings.TrimSpace(name)) {
				parts = append(parts, part)
			}
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	if len(kept) == 0 {
		h.Del("Cookie")
		return
	}
	h["Cookie"] = kept
}

// ownPath reports whether p is under one of the Own prefixes.
func ownPath(p string) bool {
	for _, own := range Own {
		if strings.HasPrefix(p, own) {
			return true
		}
	}
	return false
}

// cleanPath returns the form of p that the proxy matches against its prefixes, and false when p has no
// form that means the same to every origin. An open path must not open more than itself: an origin
// resolves "/static/../checkout" (or "/static/%2e%2e/checkout", which arrives here decoded) to
// "/checkout", so a path with dot segments or empty ones is sent to its clean form first, as
// http.ServeMux does, and is gated there. Some origins also take a backslash for a slash (IIS) or drop
// a segment's ";parameters" before resolving it (Tomcat: "/static/..;/checkout"); browsers send
// neither, so such paths are refused. A segment of parameters alone ("/app/;jsessionid=..." in a
// Java site's links) cannot climb, and passes.
func cleanPath(p string) (string, bool) {
	if p == "" || p[0] != '/' || strings.IndexByte(p, '\\') >= 0 || strings.Contains(p, "/.;") || strings.Contains(p, "/..;") {
		return "", false
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/./") && !strings.Contains(p, "/../") &&
		!strings.HasSuffix(p, "/.") && !strings.HasSuffix(p, "/..") {
		return p, true // the common case, without an allocation
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, true
}

// writeError answers as rushgate's API does: {"error": {"code", "message"}}, the code stable. The
// messages here are constants without characters JSON would escape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"` + message + `"}}` + "\n"))
}

// navigation reports whether r is a person loading a page rather than a script's call: the browser
// says so in Sec-Fetch-Mode, or, from one too old to send it, asks for HTML.
func navigation(r *http.Request) bool {
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
