package loadtest

import (
	"context"
	"flag"
	"net/http"
	"time"
)

// runGet alternates rounds of the null handler and of GETs of a target carrying a header (an admission
// cookie): the protecting proxy against the origin straight, or the nginx check endpoint against the null
// handler. A target answer counts when its status is -status.
func runGet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	var c comparison
	c.flags(fs, "http://127.0.0.1:8080/v1/rooms/bench/check", "URL to GET", false)
	header := fs.String("header", "", `a header every request carries, "Name: value"`)
	status := fs.Int("status", http.StatusOK, "the status of a successful answer of the target")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	name, value := splitHeader(*header)
	get := func(u string) func(ctx context.Context, _ int) (*http.Request, bool) {
		return func(ctx context.Context, _ int) (*http.Request, bool) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if name != "" {
				req.Header.Set(name, value)
			}
			return req, true
		}
	}
	ok := func(_ int, res *http.Response) bool { return res.StatusCode == *status }
	timed(ctx, c.conc, time.Second, get(c.target), ok) // warm up
	return c.compare(ctx, "get", func(_ int, null bool) round {
		return timed(ctx, c.conc, c.dur, get(c.at(c.target, null)), judge(null, ok))
	})
}

func splitHeader(h string) (string, string) {
	for i := 0; i < len(h); i++ {
		if h[i] == ':' {
			v := h[i+1:]
			for len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			return h[:i], v
		}
	}
	return "", ""
}
