package httpapi

import (
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/room"
)

// assets holds the pages' templates, scripts and styles, served by the binary as they are.
//
//go:embed assets
var assets embed.FS

// Texts is one language's table of the visitor pages' texts, from assets/lang/CODE.json: another
// language is one more file there, with the same keys.
type Texts map[string]string

// language is a language the pages speak.
type language struct {
	Code, Name string
	texts      Texts
	textsJSON  string // texts as the pages' scripts read them, encoded once
}

// languages are the built-in tables, English first: the fallback.
var languages = func() []language {
	entries, err := fs.ReadDir(assets, "assets/lang")
	if err != nil {
		panic(err)
	}
	var out []language
	for _, e := range entries {
		code := strings.TrimSuffix(e.Name(), ".json")
		data, err := fs.ReadFile(assets, "assets/lang/"+e.Name())
		if err != nil {
			panic(err)
		}
		var t Texts
		if err := json.Unmarshal(data, &t); err != nil {
			panic(fmt.Sprintf("assets/lang/%s: %v", e.Name(), err))
		}
		out = append(out, language{Code: code, Name: t["lang_name"], texts: t, textsJSON: string(data)})
	}
	slices.SortFunc(out, func(a, b language) int {
		first := func(l language) int { // English first: the fallback
			if l.Code == "en" {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(first(a), first(b)), strings.Compare(a.Code, b.Code))
	})
	return out
}()

// pickLanguage chooses the page's language: ?lang=, then the browser's Accept-Language in its order,
// then the room's default, then English.
func pickLanguage(r *http.Request, roomDefault string) language {
	find := func(code string) (language, bool) {
		code = strings.ToLower(strings.TrimSpace(code))
		if i := strings.IndexAny(code, "-_"); i > 0 {
			code = code[:i]
		}
		for _, l := range languages {
			if l.Code == code {
				return l, true
			}
		}
		return language{}, false
	}
	if l, ok := find(r.URL.Query().Get("lang")); ok {
		return l
	}
	type pref struct {
		code string
		q    float64
	}
	var prefs []pref
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		code, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if code != "" && q > 0 {
			prefs = append(prefs, pref{code, q})
		}
		if len(prefs) == 20 {
			break
		}
	}
	slices.SortStableFunc(prefs, func(a, b pref) int { return cmp.Compare(b.q, a.q) })
	for _, p := range prefs {
		if l, ok := find(p.code); ok {
			return l
		}
	}
	if l, ok := find(roomDefault); ok {
		return l
	}
	return languages[0]
}

// PageData is what the visitor pages' templates (room.html, drop.html, auction.html) are given. A site that replaces the template
// with --templates has these fields; html/template escapes each for where it is used.
type PageData struct {
	// Base is the path rushgate is served under, "" at the root (--path-prefix): it goes in front of
	// the paths of rushgate's own files, pages and calls ({{.Base}}/assets/room.js), and the scripts read
	// it from data-base.
	Base string
	// Room is the room's id; Join, Events and Status are the paths of its join, event stream and status.
	Room, Join, Events, Status string
	// Target is where an admitted visitor is sent: the room's site_url, or a return_to on its origin.
	Target string
	// Title, Message, LogoURL and BrandColor are the room's page branding, "" when unset; a drop's and
	// an auction's page have their title and message.
	Title, Message, LogoURL, BrandColor string
	// Lang is the chosen language's code; Texts its table; TextsJSON the table as JSON, which the
	// page's script reads from the data-texts attribute.
	Lang      string
	Texts     Texts
	TextsJSON string
	// Languages lists the languages the page can switch to, each with Code and Name.
	Languages []language
	// Now is the server's clock in unix milliseconds when the page was made, which countdowns follow.
	Now int64
	// Drop and Auction name the drop or auction of their pages; Room is then the room they sit behind
	// ("" for none).
	Drop, Auction string
	// LineHolds, on a drop's page, says its room follows the drop and holds its line until the drop
	// opens: joining it early keeps a place for the opening, where a room that only guards the drop
	// would let the visitor in at once, an admission that may end before the sale starts.
	LineHolds bool
	// LineMissing, on a drop's or an auction's page, says the room it sits behind does not exist (yet:
	// a sale may be set up before its room): the page says its line is not open rather than send its
	// visitors to a room that is not there.
	LineMissing bool
	// Refresh, on notice.html (a page that could not be served: Title and Message say why), is how many
	// seconds until the page loads itself again, 0 for never.
	Refresh int
}

// pages holds the visitor pages' templates: the built-in ones, each replaced by a file of the same name
// in the --templates directory when there is one.
type pages struct{ room, drop, auction, notice *template.Template }

// loadPages parses the templates, preferring those in dir ("" for none).
func loadPages(dir string) (*pages, error) {
	load := func(name string) (*template.Template, error) {
		if dir != "" {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err == nil {
				t, err := template.ParseFiles(path)
				if err != nil {
					return nil, fmt.Errorf("--templates: %w", err)
				}
				return t, nil
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("--templates: %w", err)
			}
		}
		return template.ParseFS(assets, "assets/"+name)
	}
	var p pages
	var err error
	for _, t := range []struct {
		name string
		into **template.Template
	}{{"room.html", &p.room}, {"drop.html", &p.drop}, {"auction.html", &p.auction}, {"notice.html", &p.notice}} {
		if *t.into, err = load(t.name); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// unprefixed names the templates in dir (the --templates directory) that load rushgate's files or call
// its API by absolute paths of their own ("/assets/room.js") rather than under {{.Base}}: under a
// path prefix those paths are the site's, and the page's scripts would not load.
func unprefixed(dir string) []string {
	var names []string
	for _, name := range []string{"room.html", "drop.html", "auction.html", "notice.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for _, own := range []string{`"/assets/`, `'/assets/`, `"/v1/`, `'/v1/`} {
			if strings.Contains(string(b), own) {
				names = append(names, name)
				break
			}
		}
	}
	return names
}

// pageCSP allows the pages nothing but their own files: no inline script or style, no other origin;
// img adds the origin of the room's logo.
func pageCSP(img string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'" + img + "; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// page serves the waiting room for browsers: it joins, shows the place and ETA from the event stream,
// and on admission sends the visitor to the site with the admission token in the rg_admission query
// parameter, which admission.Gate moves into a cookie. The target is the room's site_url or a
// return_to on its origin, chosen here on the server, never taken from the page's URL unchecked.
// Loading the page changes nothing the visitor holds: its script's join never leaves another line
// unless the visitor clicks to switch.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	id, err := roomID(r)
	if err != nil {
		s.pageError(w, r, "room", err)
		return
	}
	cfg, _, err := s.rooms.Get(r.Context(), id)
	if err != nil {
		s.pageError(w, r, "room", err)
		return
	}
	var brand room.Page
	if cfg.Page != nil {
		brand = *cfg.Page
	}
	d := s.pageData(r, brand.Language)
	api := s.base + "/v1/rooms/" + id
	d.Room, d.Join, d.Events, d.Status = id, api+"/join", api+"/events", api+"/status"
	d.Target = s.target(cfg, r.URL.Query().Get("return_to"))
	d.Title, d.Message, d.LogoURL, d.BrandColor = brand.Title, brand.Message, brand.LogoURL, brand.BrandColor
	s.render(w, r, s.pages.room, d, http.StatusOK)
}

// target is where the room's page sends an admitted visitor (room.Config.Target), with a path of
// rushgate's own pages seen under the server's base: the room knows a drop's page as /d/ID, which a
// browser reaches at Base/d/ID.
func (s *Server) target(cfg room.Config, returnTo string) string {
	if s.base == "" {
		return cfg.Target(returnTo)
	}
	if rest, ok := strings.CutPrefix(returnTo, s.base); ok && strings.HasPrefix(rest, "/") {
		returnTo = rest
	}
	t := cfg.Target(returnTo)
	if strings.HasPrefix(t, "/") {
		return s.base + t
	}
	return t
}

// pageData starts a page's data in the visitor's language.
func (s *Server) pageData(r *http.Request, fallback string) PageData {
	lang := pickLanguage(r, fallback)
	return PageData{Base: s.base, Lang: lang.Code, Texts: lang.texts, TextsJSON: lang.textsJSON, Languages: languages,
		Now: s.now().UnixMilli()}
}

// pageError answers a visitor page that cannot be served with a page in the visitor's language, not
// the API's JSON: a room, drop or auction (kind) that does not exist or a malformed id, or a store that
// does not answer, which the page retries by itself.
func (s *Server) pageError(w http.ResponseWriter, r *http.Request, kind string, err error) {
	e := s.failure(r, err)
	if e.Status >= 500 {
		s.notice(w, r, e.Status, "busy_title", "busy_page", true)
		return
	}
	s.notice(w, r, e.Status, "missing_title", kind+"_missing", false)
}

// OriginDown answers a person's request for a page of the site behind the protecting proxy when the
// site did not answer: a page in their language, 502, that loads itself again after a few seconds. In a
// crowd the site is the likeliest part to fail, and the API's JSON would be all they saw.
func (s *Server) OriginDown(w http.ResponseWriter, r *http.Request) {
	s.notice(w, r, http.StatusBadGateway, "origin_title", "origin_down", true)
}

// notice renders notice.html with the texts title and message of the visitor's language; with retry,
// the page loads itself again after a wait drawn for each answer, 3 to 7 seconds, as Retry-After also
// says. A crowd meets a failing site or store together; a wait the same for all would bring their
// reloads back in the same waves, one every few seconds.
func (s *Server) notice(w http.ResponseWriter, r *http.Request, status int, title, message string, retry bool) {
	d := s.pageData(r, "")
	d.Title, d.Message = d.Texts[title], d.Texts[message]
	if retry {
		d.Refresh = 3 + rand.IntN(5)
		w.Header().Set("Retry-After", strconv.Itoa(d.Refresh))
	}
	s.render(w, r, s.pages.notice, d, status)
}

// render writes a visitor page with the headers every page has.
func (s *Server) render(w http.ResponseWriter, r *http.Request, t *template.Template, d PageData, status int) {
	img := ""
	if u, err := url.Parse(d.LogoURL); err == nil && d.LogoURL != "" {
		img = " " + u.Scheme + "://" + u.Host
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP(img))
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Language", d.Lang)
	h.Add("Vary", "Accept-Language")
	w.WriteHeader(status)
	if err := t.Execute(w, d); err != nil {
		s.log.WarnContext(r.Context(), "page template failed", "path", r.URL.Path, "err", err)
	}
}

// dropPage serves a drop's page: a countdown to its opening by the server's clock, a claim button whose
// page load makes the Idempotency-Key (a double click or a retry never claims twice), the code when
// won, and for a drop behind a room the way through the room and back. Loading it claims nothing.
func (s *Server) dropPage(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	var info drop.Info
	if err == nil {
		info, err = s.drops.Get(r.Context(), id)
	}
	if err != nil {
		s.pageError(w, r, "drop", err)
		return
	}
	d := s.pageData(r, "")
	d.Drop, d.Room, d.Title, d.Message = id, info.Config.Room, info.Config.Title, info.Config.Message
	if d.Room != "" {
		// The room's config as joins see it, read at most a second ago: no store read for most loads.
		cfg, err := s.rooms.Config(r.Context(), d.Room)
		d.LineHolds = err == nil && cfg.Drop == id
		d.LineMissing = errors.Is(err, room.ErrNotFound)
	}
	s.render(w, r, s.pages.drop, d, http.StatusOK)
}

// auctionPage serves an auction's page: live price and bids over the live feed (resumed after a
// reconnection), the countdown with its extensions, bids and buy-now. Loading it bids nothing.
func (s *Server) auctionPage(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	var st auction.State
	if err == nil {
		st, err = s.auctions.Get(r.Context(), id)
	}
	if err != nil {
		s.pageError(w, r, "auction", err)
		return
	}
	d := s.pageData(r, "")
	d.Auction, d.Room, d.Title, d.Message = id, st.Config.Room, st.Config.Title, st.Config.Message
	if d.Room != "" {
		_, err := s.rooms.Config(r.Context(), d.Room)
		d.LineMissing = errors.Is(err, room.ErrNotFound)
	}
	s.render(w, r, s.pages.auction, d, http.StatusOK)
}

// assetHandler serves the pages' scripts and styles (not their templates); they change only with the
// binary.
// Serves reports whether rushgate itself answers r, for a proxy that shares its host with a site: a
// path one of its routes takes, with any method (a wrong one is still answered here, as such), or one
// of its own script and style files. A site's other paths under the same prefixes (its own /assets/
// or /v1/ API) are the site's.
func (s *Server) Serves(r *http.Request) bool {
	if name, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
		return isAsset(name)
	}
	if _, pat := s.mux.Handler(r); pat != "" && pat != "/" {
		return true
	}
	return len(s.allowed(r)) > 0
}

// isAsset reports whether name is one of the script and style files the pages load.
func isAsset(name string) bool {
	if !strings.HasSuffix(name, ".js") && !strings.HasSuffix(name, ".css") {
		return false
	}
	fi, err := fs.Stat(assets, path.Join("assets", name))
	return err == nil && !fi.IsDir()
}

func (s *Server) assetHandler() http.Handler {
	sub, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".js") && !strings.HasSuffix(r.URL.Path, ".css") {
			s.writeError(w, r, apiError(http.StatusNotFound, codeNotFound, "no such file"))
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
