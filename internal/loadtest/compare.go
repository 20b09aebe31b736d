package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// comparison is how rounds against the null handler and a target alternate; its flags are shared by
// the join, bid and claim commands.
type comparison struct {
	target, null, key string
	conc              int
	dur               time.Duration
	rounds            int
	want              float64
	cpu               string
}

// flags registers the shared flags on fs: -target (defaulting to target, described as what), -null,
// -admin-key when the command needs one, and those of the rounds.
func (c *comparison) flags(fs *flag.FlagSet, target, what string, key bool) {
	fs.StringVar(&c.target, "target", target, what)
	fs.StringVar(&c.null, "null", "http://127.0.0.1:9090/", "null handler URL")
	if key {
		fs.StringVar(&c.key, "admin-key", "", "rushgate admin key")
	}
	fs.IntVar(&c.conc, "c", 64, "concurrent connections")
	fs.DurationVar(&c.dur, "d", 2*time.Second, "length of each round")
	fs.IntVar(&c.rounds, "rounds", 9, "rounds against each server")
	fs.Float64Var(&c.want, "want", 0, "fail unless the median ratio reaches this")
	fs.StringVar(&c.cpu, "cpu", "", "also report the CPU time per request of these processes: name=pid,name=pid")
}

// parse parses args into fs and refuses targets off loopback.
func (c *comparison) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, u := range []string{c.target, c.null} {
		if err := loopback(u); err != nil {
			return err
		}
	}
	return nil
}

// round is what one round measured: successes (the figure compared), all answers, and their latencies.
type round struct {
	loadResult
	answered  int
	latencies [][]time.Duration
}

// at is where a round's requests to u go: u itself in a target round, or in a null round u with the
// scheme and host of the null handler, so that it receives the very requests the target does (method,
// path, headers, body) and the ratio charges the target only for what it does with them.
func (c *comparison) at(u string, null bool) string {
	if !null {
		return u
	}
	to, err := url.Parse(u)
	n, nerr := url.Parse(c.null)
	if err != nil || nerr != nil {
		return c.null
	}
	to.Scheme, to.Host = n.Scheme, n.Host
	return to.String()
}

// judge is how a round's answers count: by check in a target round; in a null round, every 200.
func judge(null bool, check func(w int, res *http.Response) bool) func(w int, res *http.Response) bool {
	if null {
		return func(_ int, res *http.Response) bool { return res.StatusCode == http.StatusOK }
	}
	return check
}

// compare alternates rounds of the null handler and of the target (null first, then target first, and
// so on), so that both see the same machine, and prints each round's ratio of target successes/s to
// null requests/s, their median, the target's p50 and p99 latency over all its rounds, and, with
// -cpu, the CPU each process spent per request. rounds(i, null) runs round i (from 0) against the
// target or, sending the same requests (see at and judge), against the null handler.
func (c *comparison) compare(ctx context.Context, kind string, rounds func(i int, null bool) round) error {
	procs, err := parseProcesses(c.cpu)
	if err != nil {
		return err
	}
	meter := newCPUMeter(procs)
	var ratios []float64
	var lat [][]time.Duration
	var total int64
	fmt.Printf("%-6s %14s %16s %8s\n", "round", "null req/s", kind+"/s", "ratio")
	for i := range c.rounds {
		var n, t round
		var nerr, terr error
		measure := func(k string, f func() round) (round, error) {
			var r round
			_, err := meter.measure(k, func() loadResult { r = f(); return r.loadResult })
			return r, err
		}
		null := func() round { return rounds(i, true) }
		target := func() round { return rounds(i, false) }
		if i%2 == 0 {
			n, nerr = measure("null", null)
			t, terr = measure(kind, target)
		} else {
			t, terr = measure(kind, target)
			n, nerr = measure("null", null)
		}
		if err := errors.Join(nerr, terr); err != nil {
			return err
		}
		if t.failed > 0 || n.failed > 0 {
			return fmt.Errorf("round %d: %d %s and %d null requests failed", i+1, t.failed, kind, n.failed)
		}
		r := t.perSec() / n.perSec()
		ratios = append(ratios, r)
		lat = append(lat, t.latencies...)
		total += t.ok
		fmt.Printf("%-6d %14.0f %16.0f %8.2f\n", i+1, n.perSec(), t.perSec(), r)
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	meter.report("null", kind)
	_, p50, p99 := percentiles(lat)
	fmt.Printf("%s/null median ratio: %.2f; %s latency p50 %v, p99 %v (concurrency %d)\n", kind, med, kind, p50, p99, c.conc)
	fmt.Printf("%ss in all rounds: %d\n", kind, total)
	if med < c.want {
		return fmt.Errorf("ratio %.2f is below the target %.2f", med, c.want)
	}
	return nil
}

// timed runs timedRequests and counts its successes as a round.
func timed(ctx context.Context, conc int, d time.Duration, next func(ctx context.Context, w int) (*http.Request, bool),
	check func(w int, res *http.Response) bool) round {
	var ok int64
	oks := make([]int64, conc)
	r := timedRequests(ctx, conc, d, next, func(w int, res *http.Response) bool {
		good := check(w, res)
		if good {
			oks[w]++
		}
		return good
	})
	n := 0
	for w := range oks {
		ok += oks[w]
		n += len(r.latencies[w])
	}
	return round{loadResult: loadResult{ok: ok, failed: r.failed, elapsed: r.elapsed}, answered: n, latencies: r.latencies}
}
