package httpapi

import (
	_ "embed"
	"html/template"
	"net/http"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// pageData is handed to the page's script as JSON (html/template escapes it for the script context).
type pageData struct {
	Room   string `json:"room"`
	Join   string `json:"join"`
	Events string `json:"events"`
	Target string `json:"target"`
}

// page serves the waiting room for browsers: it joins, shows the place and ETA from the event stream,
// and on admission sends the visitor to the site with the admission token in the rg_admission query
// parameter, which admission.Gate moves into a cookie. The target is the room's site_url or a
// return_to on its origin, chosen here on the server, never taken from the page's URL unchecked.
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
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	_ = pageTmpl.Execute(w, pageData{
		Room: id, Join: "/v1/rooms/" + id + "/join", Events: "/v1/rooms/" + id + "/events",
		Target: cfg.Target(r.URL.Query().Get("return_to")),
	})
}
