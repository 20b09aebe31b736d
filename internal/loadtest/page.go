package loadtest

import (
	"fmt"
	"html/template"
	"net/http"
)

// shopPage is what the page origin renders for every request: a ticket shop's listing, the kind of
// page a protected site serves behind the room.
var shopPage = template.Must(template.New("shop").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><ul>
{{range .Items}}<li><a href="/tickets/{{.ID}}">{{.Name}}</a> <span class="price">{{.Price}}</span> {{if .Left}}{{.Left}} left{{else}}sold out{{end}}</li>
{{end}}</ul></body></html>
`))

type shopItem struct {
	ID          int
	Name, Price string
	Left        int
}

// pageHandler serves the page origin: the shop's listing of n tickets, rendered again for each
// request as a site's handler would render it, so that the proxy benchmark has an origin doing a
// page's work as well as the null one.
func pageHandler(n int) http.Handler {
	data := struct {
		Title string
		Items []shopItem
	}{Title: "Tonight's tickets"}
	for i := range n {
		data.Items = append(data.Items, shopItem{ID: i, Name: fmt.Sprintf("Block %d, row %d & <standing>", i/4, i%4),
			Price: fmt.Sprintf("EUR %d.00", 40+i), Left: i % 3 * 7})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = shopPage.Execute(w, data)
	})
}
