// Package console is the operator's console at /admin: pages that show every room, drop and auction
// live and steer them. It is a transport like the JSON API it stands on: the pages are a shell that
// its own script fills from the admin API (/v1/...), and every control is an admin call. The console
// adds only a sign-in: a session cookie that the API takes in place of the admin key.
//
// An operator signs in with the admin key (as the owner) or with an operator's key
// (internal/operator), and the pages show what the role may do. A session is a signed cookie
// (HttpOnly, SameSite=Strict) holding its expiry and, for an operator, the ID of its key; its signing
// key derives from the admin key, so every instance that shares the admin key accepts it, changing
// the key signs everybody out, and taking an operator back ends its sessions. No key ever travels in
// a URL. Requests that change anything and carry the session cookie must also carry its CSRF token
// (header Rushgate-CSRF, or the form field csrf), which another site can neither read nor make a
// browser send.
package console

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/operator"
)

// Names of the console's cookies and the header that carries the CSRF token.
const (
	SessionCookie = "rg_console"
	loginCookie   = "rg_console_login"
	CSRFHeader    = "Rushgate-CSRF"
)

// Cookies names the console's cookies: an operator's credentials, which the site behind the protecting
// proxy must never be sent.
var Cookies = []string{SessionCookie, loginCookie}

// SessionTTL is how long a sign-in lasts.
const SessionTTL = 12 * time.Hour

//go:embed assets
var assets embed.FS

var pages = template.Must(template.ParseFS(assets, "assets/*.html"))

// csp allows the console its own files only; its forms post to itself.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Config wires a Console.
type Config struct {
	// AdminKey is what the owner signs in with; sessions are signed with a key derived from it.
	AdminKey string
	// Operators, when set, are the other keys that sign in, each with its name and role.
	Operators *operator.Roster
	// SecureCookies marks cookies Secure even on plain HTTP (behind a TLS-terminating proxy).
	SecureCookies bool
	// Clock dates sessions; nil means time.Now.
	Clock func() time.Time
	// Base is the path rushgate is served under, "" at the root (httpapi.Config.Base): the console's
	// links, forms, calls and cookies have it in front, while its routes stay /admin.
	Base string
	// Log hears each sign-in, and each key refused, with who and from where: the trail of who held
	// the console; nil discards it.
	Log *slog.Logger
	// Refused, when set, hears each sign-in refused for its key (the metrics count them).
	Refused func()
	// Throttle, when set, refuses the sign-ins of a client that presented too many wrong keys.
	Throttle Throttle
	// ClientAddr tells a request's client behind the trusted proxies (httpapi.ClientAddr); nil reads
	// the TCP peer.
	ClientAddr func(*http.Request) string
	// Backups says that GET /v1/backup copies the data directory (all of the embedded backend, the
	// SQLite record of an instance on Redis): the overview
	// then offers the download.
	Backups bool
}

// Throttle refuses clients that presented too many wrong keys; httpapi.KeyThrottle is one, shared
// with the admin API so that neither is a way around the other.
type Throttle interface {
	Locked(r *http.Request) bool
	Failed(r *http.Request)
}

// Console serves /admin and says whether a request carries a signed-in session.
type Console struct {
	key       [32]byte
	keys      *operator.Keys
	operators *operator.Roster
	log       *slog.Logger
	refused   func()
	throttle  Throttle
	client    func(*http.Request) string
	secure    bool
	base      string
	backups   bool
	now       func() time.Time
	mux       *http.ServeMux
}

// New returns the console.
func New(cfg Config) *Console {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = func(r *http.Request) string { return r.RemoteAddr }
	}
	if cfg.Refused == nil {
		cfg.Refused = func() {}
	}
	c := &Console{log: cfg.Log, client: cfg.ClientAddr, refused: cfg.Refused, throttle: cfg.Throttle, secure: cfg.SecureCookies, base: cfg.Base, backups: cfg.Backups, now: cfg.Clock, keys: operator.NewKeys(cfg.AdminKey, cfg.Operators),
		operators: cfg.Operators}
	c.key = sha256.Sum256([]byte("rushgate console session\x00" + cfg.AdminKey))
	m := http.NewServeMux()
	m.HandleFunc("GET /admin", c.page("overview"))
	m.HandleFunc("GET /admin/{$}", c.page("overview"))
	m.HandleFunc("GET /admin/rooms/{id}", c.page("room"))
	m.HandleFunc("GET /admin/drops/{id}", c.page("drop"))
	m.HandleFunc("GET /admin/auctions/{id}", c.page("auction"))
	m.HandleFunc("POST /admin/login", c.login)
	m.HandleFunc("POST /admin/logout", c.logout)
	sub, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(sub)
	m.Handle("GET /admin/assets/", http.StripPrefix("/admin/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".js") && !strings.HasSuffix(r.URL.Path, ".css") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})))
	c.mux = m
	return c
}

// Handler serves the console's pages and assets under /admin.
func (c *Console) Handler() http.Handler { return c.mux }

// Authorized returns whose live session r carries, if it does and, unless it only reads (GET, HEAD),
// carries the session's CSRF token too: what the admin API accepts in place of a key. An operator
// taken back has no session; the error says that the operators could not be read to tell.
func (c *Console) Authorized(r *http.Request) (operator.Operator, bool, error) {
	sess, op, err := c.session(r)
	if err != nil || sess == "" {
		return operator.Operator{}, false, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		got := r.Header.Get(CSRFHeader)
		if got == "" || !hmac.Equal([]byte(got), []byte(c.csrf(sess))) {
			return operator.Operator{}, false, nil
		}
	}
	return op, true, nil
}

// session returns the session cookie's value and whose it is, or "" if there is none signed by this
// console, unexpired, whose operator still holds a key.
func (c *Console) session(r *http.Request) (string, operator.Operator, error) {
	none := operator.Operator{}
	ck, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", none, nil
	}
	payload, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(c.sign("session", payload))) {
		return "", none, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(raw) < 24 || len(raw) > 24+64 {
		return "", none, nil
	}
	if exp := time.Unix(int64(binary.BigEndian.Uint64(raw)), 0); !c.now().Before(exp) {
		return "", none, nil
	}
	id := string(raw[24:])
	if id == "" {
		return payload, operator.Admin, nil
	}
	if c.operators == nil {
		return "", none, nil
	}
	op, ok, err := c.operators.ByID(r.Context(), id)
	if err != nil || !ok {
		return "", none, err
	}
	return payload, op, nil
}

// newSession returns a cookie value: 8 bytes of expiry, 16 random bytes and the operator's ID ("" for
// the owner), signed.
func (c *Console) newSession(id string) string {
	raw := make([]byte, 24, 24+len(id))
	binary.BigEndian.PutUint64(raw, uint64(c.now().Add(SessionTTL).Unix()))
	_, _ = rand.Read(raw[8:])
	raw = append(raw, id...)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + c.sign("session", payload)
}

func (c *Console) csrf(session string) string { return c.sign("csrf", session) }

func (c *Console) sign(purpose, payload string) string {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(purpose + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// pageData is what the console's templates show.
type pageData struct {
	Base           string
	Page, ID, Kind string
	CSRF           string
	Backups        bool // the overview says what backups there are
	// Who and Role are who signed in; Owner, that it is the admin key's holder, whom the overview
	// offers backups' downloads and the operators.
	Who       string
	Role      operator.Role
	Owner     bool
	Operators bool // the instance keeps operators
	// LoginCSRF is the sign-in form's token, matched against its cookie.
	LoginCSRF string
	Error     string
}

// page serves a console page, or the sign-in form without a session.
func (c *Console) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if id != "" && !rushgate.ValidID(id) {
			http.NotFound(w, r)
			return
		}
		sess, op, err := c.session(r)
		if err != nil {
			c.signIn(w, http.StatusServiceUnavailable, "unavailable")
			return
		}
		if sess == "" {
			c.signIn(w, http.StatusOK, "")
			return
		}
		kind := name
		if name == "overview" {
			kind = ""
		}
		c.render(w, http.StatusOK, "console.html", pageData{Page: name, ID: id, Kind: kind, CSRF: c.csrf(sess), Backups: c.backups,
			Who: op.Name, Role: op.Role, Owner: op.Role == operator.Owner, Operators: c.operators != nil})
	}
}

// signIn shows the sign-in form with a fresh login token in a cookie and in the form.
func (c *Console) signIn(w http.ResponseWriter, status int, msg string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: tok, Path: c.base + "/admin", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	c.render(w, status, "login.html", pageData{LoginCSRF: tok, Error: msg})
}

// login signs in with the admin key or an operator's key from the form (never from the URL), against
// the login token.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		c.signIn(w, http.StatusBadRequest, "bad_form")
		return
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
		c.signIn(w, http.StatusForbidden, "expired")
		return
	}
	if c.throttle != nil && c.throttle.Locked(r) {
		c.signIn(w, http.StatusTooManyRequests, "too_many")
		return
	}
	op, ok, err := c.keys.Who(r.Context(), strings.TrimSpace(r.PostForm.Get("key")))
	if err != nil {
		c.signIn(w, http.StatusServiceUnavailable, "unavailable")
		return
	}
	if !ok {
		c.log.Warn("console: a sign-in with a wrong key", "client", c.client(r))
		c.refused()
		if c.throttle != nil {
			c.throttle.Failed(r)
		}
		c.signIn(w, http.StatusUnauthorized, "wrong_key")
		return
	}
	c.log.Info("console: signed in", "operator", op.Name, "role", op.Role, "client", c.client(r))
	id := op.ID // "" for the owner
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: c.base + "/admin", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: c.newSession(id), Path: c.path(), HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
	http.Redirect(w, r, c.base+"/admin", http.StatusSeeOther)
}

// logout ends the session; its form carries the CSRF token, so no other site can sign an operator out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	sess, _, _ := c.session(r)
	if sess != "" && r.ParseForm() == nil && hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(c.csrf(sess))) {
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: c.path(), MaxAge: -1, HttpOnly: true, Secure: c.secure,
			SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, c.base+"/admin", http.StatusSeeOther)
}

// path is the session cookie's path: every path of rushgate, whose admin API takes the session too.
func (c *Console) path() string { return cmp.Or(c.base, "/") }

func (c *Console) render(w http.ResponseWriter, status int, name string, d pageData) {
	d.Base = c.base
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, d)
}
