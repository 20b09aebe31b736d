package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultCookie is the cookie in which [Gate] keeps a visitor's admission token.
const DefaultCookie = "rg_admission"

// QueryParam is the query parameter through which the waiting room hands a fresh admission token to the
// protected site; Gate moves it into a cookie and redirects to the clean URL.
const QueryParam = "rg_admission"

type claimsKey struct{}

// FromContext returns the claims of the admitted visitor making the request, as set by [Gate].
func FromContext(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}

// Gate is middleware for the protected site. It lets a request through only with a valid admission token
// for Room, found in the Authorization bearer header, in the cookie, or in the rg_admission query
// parameter, and sends everyone else to the waiting room.
type Gate struct {
	// Verifier checks tokens; usually NewRemoteVerifier(".../v1/keys", nil).
	Verifier *Verifier
	// Room is the room whose admissions this site accepts.
	Room string
	// RoomURL is where visitors without an admission are redirected; the original URL is appended as
	// the return_to query parameter.
	RoomURL string
	// Cookie names the cookie that carries the token; empty means DefaultCookie.
	Cookie string
	// Release, when set, ends an admission whose request the site answered with the header
	// "Rushgate-Command: release" (a finished checkout), so that its slot frees at once; the header is
	// not passed on, and the cookie is cleared. ReleaseVia makes one that calls rushgate's API.
	Release func(ctx context.Context, token string) error
	// Revoked, when set, reports admissions ended early (by their id, the token's jti), which the gate
	// then refuses although their tokens are still good: a cookie kept after a release gets nowhere.
	Revoked func(id string) bool
	// HTTPS says the site is served over HTTPS that ends in front of the Gate, at a load balancer:
	// return_to URLs then say https, so the room sends visitors back to the page they asked for, and
	// cookies are Secure, as for requests that reach the Gate over TLS.
	HTTPS bool
	// Refused, when set, is told of each request the Gate turned away (sent to the room, or refused
	// with 401), for metrics.
	Refused func(r *http.Request)
}

// CommandHeader is the response header through which the protected site tells the gate to act on the
// visitor's admission: "release" ends it.
const CommandHeader = "Rushgate-Command"

// ReleaseVia returns a Release that posts the token to a room's release endpoint,
// e.g. "https://queue.example.com/v1/rooms/sale/release"; a nil client means http.DefaultClient.
func ReleaseVia(releaseURL string, client *http.Client) func(ctx context.Context, token string) error {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, token string) error {
		body, _ := json.Marshal(map[string]string{"admission_token": token})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, releaseURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusConflict { // 409: released already
			return fmt.Errorf("admission: release: HTTP %d", res.StatusCode)
		}
		return nil
	}
}

// Wrap returns next guarded by the gate. Browsers (GET and HEAD requests) are redirected to the room;
// other requests get 401 with a JSON error, since an API client cannot follow a waiting room page.
func (g *Gate) Wrap(next http.Handler) http.Handler {
	cookie := g.Cookie
	if cookie == "" {
		cookie = DefaultCookie
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, c, ok := g.held(r, cookie)
		if handed := r.URL.Query().Get(QueryParam); handed != "" {
			if ok {
				// A live admission is kept: a link that hands over another (anyone may send one) must not
				// replace what the visitor holds by navigation alone.
				g.strip(w, r)
				return
			}
			g.adopt(w, r, cookie, handed)
			return
		}
		if ok {
			if g.Release != nil {
				pending, _ := r.Cookie(pendingCookie)
				w = &commands{ResponseWriter: w, ctx: r.Context(), release: func(ctx context.Context) error { return g.Release(ctx, tok) },
					cookie: cookie, secure: g.secure(r), host: r.Host, pending: pending != nil}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, c)))
			return
		}
		g.refuse(w, r)
	})
}

// Bearer returns the credential of r's Authorization header with the Bearer scheme, whose name is
// matched without regard to case (RFC 9110: "bearer" is as good as "Bearer", and clients send both),
// and whether there is one.
func Bearer(r *http.Request) (string, bool) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if tok = strings.TrimSpace(tok); !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// held returns the live admission the request carries, from Authorization: Bearer or else the cookie.
// A bearer token that is no admission falls back to the cookie: the site may use the header for its
// own logins, and a visitor who was admitted must not be sent back to the room for it.
func (g *Gate) held(r *http.Request, cookie string) (string, *Claims, bool) {
	if h, ok := Bearer(r); ok {
		if c, ok := g.live(r.Context(), h); ok {
			return h, c, true
		}
	}
	if ck, err := r.Cookie(cookie); err == nil {
		c, ok := g.live(r.Context(), ck.Value)
		return ck.Value, c, ok
	}
	return "", nil, false
}

// live returns the claims of tok when it is a valid admission of the room that was not ended early.
func (g *Gate) live(ctx context.Context, tok string) (*Claims, bool) {
	c, err := g.Verifier.Verify(ctx, tok, g.Room)
	if err != nil || (g.Revoked != nil && g.Revoked(c.ID)) {
		return nil, false
	}
	return c, true
}

// adopt stores a token handed over in the URL as a cookie and redirects to the URL without it, so the
// token does not linger in history, logs or Referer headers.
func (g *Gate) adopt(w http.ResponseWriter, r *http.Request, cookie, tok string) {
	c, ok := g.live(r.Context(), tok)
	if !ok {
		g.refuse(w, r)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookie, Value: tok, Path: "/", HttpOnly: true, Secure: g.secure(r),
		SameSite: http.SameSiteLaxMode, Expires: c.ExpiresAt.Time,
		MaxAge: int(time.Until(c.ExpiresAt.Time).Seconds()),
	})
	g.strip(w, r)
}

// strip redirects to the request's URL without the handed-over token.
func (g *Gate) strip(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del(QueryParam)
	http.Redirect(w, r, SitePath(r.URL.EscapedPath(), q.Encode()), http.StatusSeeOther)
}

// SitePath returns a redirect target that is a path on the site itself, built from an escaped path and
// a raw query. A run of leading slashes and backslashes becomes one slash: a Location of
// "//evil.example/x" or "/\evil.example" is read by browsers as another host, so a crafted link
// carrying a genuine admission would otherwise send the visitor (and the token) away.
func SitePath(escapedPath, rawQuery string) string {
	target := "/" + strings.TrimLeft(escapedPath, `/\`)
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	return target
}

func (g *Gate) refuse(w http.ResponseWriter, r *http.Request) {
	if g.Refused != nil {
		g.Refused(r)
	}
	back, status := g.requestURL(r), http.StatusFound
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"not_admitted","message":"an admission from the waiting room is required"}}` + "\n"))
			return
		}
		// A form a person posted (its admission ran out mid-checkout, say): a page of JSON would strand
		// them, so they go to the room too, and back to the page the form was on, which they can send
		// again; its URL is taken from Referer only when it is on this site.
		back, status = g.siteRoot(r), http.StatusSeeOther // the room's page is read with GET
		if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host && (ref.Scheme == "http" || ref.Scheme == "https") {
			back = ref.String()
		}
	}
	target, err := url.Parse(g.RoomURL)
	if err != nil {
		http.Error(w, "waiting room misconfigured", http.StatusInternalServerError)
		return
	}
	q := target.Query()
	q.Set("return_to", back)
	target.RawQuery = q.Encode()
	http.Redirect(w, r, target.String(), status)
}

// siteRoot returns the front page of the site r is for.
func (g *Gate) siteRoot(r *http.Request) string { return g.origin(r) + "/" }

// secure reports whether the visitor reached the site over HTTPS.
func (g *Gate) secure(r *http.Request) bool { return r.TLS != nil || g.HTTPS }

// origin returns the scheme and host visitors reach the site at.
func (g *Gate) origin(r *http.Request) string {
	if g.secure(r) {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

func (g *Gate) requestURL(r *http.Request) string {
	return g.origin(r) + r.URL.RequestURI()
}

// pendingCookie marks a release the site asked for with a redirect on the site, which the gate carries
// out on the next request: the redirect's.
const pendingCookie = "rg_release"

// commands watches the site's response for the gate's command header and carries it out before the
// header is sent: a release ends the admission and clears its cookie. A release sent with a redirect
// to a page of the site (a checkout's POST answered 303 to its thank-you page, the usual pattern)
// waits for the next request, the redirect's, so that the visitor sees that page rather than the
// room: a cookie marks it pending (pending), and the next answer carries it out. A visitor who drops
// that cookie keeps their admission until it runs out, as one who never finishes a checkout does.
type commands struct {
	http.ResponseWriter
	ctx     context.Context
	release func(context.Context) error
	cookie  string
	secure  bool
	host    string // the site's, to tell its redirects from others
	pending bool   // a release waits from the request before
	done    bool
}

func (c *commands) WriteHeader(code int) {
	if !c.done {
		c.done = true
		h := c.Header()
		if strings.EqualFold(h.Get(CommandHeader), "release") || c.pending {
			h.Del(CommandHeader)
			if code >= 300 && code < 400 && c.onSite(h.Get("Location")) {
				h.Add("Set-Cookie", c.setCookie(pendingCookie, "1", 60))
			} else {
				// The site's answer stands even if the release fails: the admission then runs out.
				_ = c.release(context.WithoutCancel(c.ctx))
				h.Add("Set-Cookie", c.setCookie(c.cookie, "", -1))
				if c.pending {
					h.Add("Set-Cookie", c.setCookie(pendingCookie, "", -1))
				}
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

// setCookie returns the Set-Cookie value that sets cookie name to value for maxAge seconds (-1 removes
// it).
func (c *commands) setCookie(name, value string, maxAge int) string {
	return (&http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode}).String()
}

// onSite reports whether a redirect's Location is a page of this site.
func (c *commands) onSite(location string) bool {
	u, err := url.Parse(location)
	return location != "" && err == nil && (u.Host == "" || u.Host == c.host)
}

func (c *commands) Write(b []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, WebSocket hijacks).
func (c *commands) Unwrap() http.ResponseWriter { return c.ResponseWriter }
