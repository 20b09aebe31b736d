package httpapi

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
)

// assets holds the pages' templates, scripts and styles, served by the binary as they are.
//
//go:embed assets
var assets embed.FS

var roomPage = template.Must(template.ParseFS(assets, "assets/room.html"))

// pageCSP allows the pages nothing but their own files: no inline script or style, no other origin.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageData is what the room page's template shows; html/template escapes each field for its attribute.
type pageData struct {
	Room   string
	Join   string
	Events string
	Target string
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
		s.writeError(w, r, err)
		return
	}
	cfg, _, err := s.rooms.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	_ = roomPage.Execute(w, pageData{
		Room: id, Join: "/v1/rooms/" + id + "/join", Events: "/v1/rooms/" + id + "/events",
		Target: cfg.Target(r.URL.Query().Get("return_to")),
	})
}

// assetHandler serves the pages' scripts and styles (not their templates); they change only with the
// binary.
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
