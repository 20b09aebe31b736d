package loadtest

import (
	"fmt"
	"html/template"
	"os"
	"slices"
	"strings"
)

// page is the report as a page of its own: no script, charts drawn here as SVG.
var page = template.Must(template.New("report").Funcs(template.FuncMap{"addresses": addresses}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>rushgate loadtest: {{.R.Room}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 960px; padding: 0 1rem; color: #1d1d22; }
table { border-collapse: collapse; } td, th { padding: .3rem .8rem; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 1rem 0; } svg { width: 100%; height: 220px; background: #fafafc; }
.legend span { margin-right: 1rem; } .legend i { display: inline-block; width: .8rem; height: .3rem; margin-right: .3rem; vertical-align: middle; }
</style></head><body>
<h1>Rehearsal of room {{.R.Room}}</h1>
<p>{{.R.Visitors}} visitors in {{printf "%.1f" .R.Seconds}}s: {{.R.Joins}} joined, {{.R.Admitted}} admitted, {{.R.Done}} released,
{{.R.Unserved}} still waiting at the end; from {{addresses .R.Sources}}. Admissions/s {{printf "%.2f" .R.AdmitRate}}{{if gt .R.RoomRate 0.0}} against the room's
{{printf "%.2f" .R.RoomRate}}/s{{end}}.{{if .R.ETASamples}} ETA error over {{.R.ETASamples}} visitors: median
{{printf "%.1f" .R.ETAMedianError}}s, p90 {{printf "%.1f" .R.ETAP90Error}}s; {{.R.ETALonger}} waited longer than told.{{end}}{{if .R.ETABounds}} Upper bounds told before
the line moved: {{.R.ETABounds}}, of which {{.R.ETABoundsExceeded}} the wait exceeded.{{end}}{{if .R.StreamsRefused}}
Event streams refused {{.R.StreamsRefused}} times (past the server's --streams-per-address, which counted this run as
{{addresses .R.Sources}}): those visitors polled meanwhile, as the page does.{{end}}</p>
{{if .R.Drop}}<p>Drop {{.R.Drop}}: {{.R.Claims}} claimed by the run, {{.R.SoldOut}} told it is sold out; the drop counts
{{.R.DropClaimed}} of {{.R.DropStock}} claimed.{{if .R.ReadBack}} Read back: {{.R.DropListed}} of the run's claims listed as answered,
{{.R.DropLookedUp}} codes looked up and found.{{end}}</p>{{end}}
{{if .R.ReadBack}}<h2>Problems</h2>{{if .R.Problems}}<ul>{{range .R.Problems}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}{{end}}
<figure><figcaption>Visitors over the run</figcaption>
<svg viewBox="0 0 900 220" role="img" aria-label="visitors over the run">
<line x1="50" y1="200" x2="890" y2="200" stroke="#999"/><text x="45" y="24" text-anchor="end" font-size="12">{{.Top}}</text>
<text x="45" y="204" text-anchor="end" font-size="12">0</text><text x="890" y="216" text-anchor="end" font-size="12">{{printf "%.0f" .R.Seconds}}s</text>
{{range .Lines}}<polyline fill="none" stroke="{{.Color}}" stroke-width="2" points="{{.Points}}"/>{{end}}
</svg>
<div class="legend">{{range .Lines}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}</div></figure>
<h2>Latency per call</h2>
<table><tr><th>call</th><th>count</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr>
{{range .Calls}}<tr><td>{{.Name}}</td><td>{{.L.Count}}</td><td>{{.L.P50}}</td><td>{{.L.P95}}</td><td>{{.L.P99}}</td></tr>{{end}}</table>
<h2>Errors by code</h2>
{{if .Errors}}<table><tr><th>code</th><th>count</th></tr>{{range .Errors}}<tr><td>{{.Code}}</td><td>{{.N}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}
</body></html>
`))

type line struct {
	Name, Color string
	Points      string
}

// writeHTML writes the report as a page with its charts.
func writeHTML(path string, rep Report) error {
	top := int64(1)
	for _, t := range rep.Timeline {
		top = max(top, t.Joined, t.Waiting, t.Admitted, t.Done)
	}
	span := max(rep.Seconds, 1)
	series := []struct {
		name, color string
		get         func(tick) int64
	}{
		{"joined", "#1a5fb4", func(t tick) int64 { return t.Joined }},
		{"waiting", "#c64600", func(t tick) int64 { return t.Waiting }},
		{"admitted", "#1e7b34", func(t tick) int64 { return t.Admitted }},
		{"released", "#8b2fc9", func(t tick) int64 { return t.Done }},
		{"errors", "#b3261e", func(t tick) int64 { return t.Errors }},
	}
	var lines []line
	for _, s := range series {
		var b strings.Builder
		for _, t := range rep.Timeline {
			fmt.Fprintf(&b, "%.1f,%.1f ", 50+t.At/span*840, 200-float64(s.get(t))/float64(top)*180)
		}
		lines = append(lines, line{Name: s.name, Color: s.color, Points: b.String()})
	}
	type call struct {
		Name string
		L    Latency
	}
	var calls []call
	for k, v := range rep.Calls {
		calls = append(calls, call{k, v})
	}
	slices.SortFunc(calls, func(a, b call) int { return strings.Compare(a.Name, b.Name) })
	type code struct {
		Code string
		N    int
	}
	var errs []code
	for k, v := range rep.Errors {
		errs = append(errs, code{k, v})
	}
	slices.SortFunc(errs, func(a, b code) int { return strings.Compare(a.Code, b.Code) })
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := page.Execute(f, map[string]any{"R": rep, "Top": top, "Lines": lines, "Calls": calls, "Errors": errs}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
