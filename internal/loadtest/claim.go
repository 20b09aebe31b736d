package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// runClaim measures successful claims/s through HTTP, in rounds that alternate with the null handler's:
// as in a real crowd every claim is a different visitor's first (tokens are minted beforehand, and each
// round claims on a drop of its own), so every request takes a unit.
func runClaim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("claim", flag.ContinueOnError)
	visitors := fs.Int("visitors", 150000, "visitors minted beforehand: the most claims a round can make")
	var c comparison
	c.flags(fs, "http://127.0.0.1:8080", "rushgate base URL", true)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *visitors < 1 {
		return errors.New("-visitors must be at least 1")
	}
	cfg := fmt.Sprintf(`{"stock": 10000000, "opens_at": %q}`, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339))
	for i := range c.rounds {
		if err := adminDo(ctx, "PUT", fmt.Sprintf("%s/v1/drops/bench%d", c.target, i), c.key, cfg); err != nil {
			return err
		}
	}
	tokens, _, err := mintVisitors(ctx, c.target, c.key, *visitors, c.conc)
	if err != nil {
		return err
	}
	var short atomic.Bool
	err = c.compare(ctx, "claim", func(i int, null bool) round {
		var next atomic.Int64
		u := c.at(fmt.Sprintf("%s/v1/drops/bench%d/claims", c.target, i), null)
		return timed(ctx, c.conc, c.dur, func(ctx context.Context, _ int) (*http.Request, bool) {
			n := next.Add(1) - 1
			if null { // the null handler keeps nothing: its rounds may reuse visitors
				n %= int64(len(tokens))
			}
			if n >= int64(len(tokens)) {
				short.Store(true)
				return nil, false
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", u, nil)
			req.Header.Set("Authorization", "Bearer "+tokens[n])
			return req, true
		}, judge(null, func(_ int, res *http.Response) bool { return res.StatusCode == http.StatusCreated }))
	})
	if short.Load() {
		fmt.Println("note: a round ran out of visitors before its end; raise -visitors")
	}
	return err
}
