package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A drop's rehearsal (`rushgate loadtest drop`) has a crowd claim from a drop the moment it opens, as
// its page's visitors do, some pressing twice (a repeat with the same Idempotency-Key), while watchers
// hold its live feed. It then reads back what the drop keeps and holds it against every answer the
// run was given: no unit handed out twice or past the stock, no visitor over its limit, every claim
// listed as answered and its code found, a sold-out told only when nothing was left, and a crowd that
// asked for more than the stock leaving none.

// DropReport is what a drop's rehearsal found; --report-json writes it as is.
type DropReport struct {
	Drop     string  `json:"drop"`
	Visitors int     `json:"visitors"`
	Watchers int     `json:"watchers"`
	Seconds  float64 `json:"seconds"`
	// Stock and Remaining are the drop's when the run began.
	Stock     int64 `json:"stock"`
	Remaining int64 `json:"remaining"`
	// Claims the run was given (each once), repeats with the same key answered with the same claim,
	// and the refusals it expects: sold out, and a visitor at its limit. Errors counts every other
	// answer by code.
	Claims     int64          `json:"claims"`
	Repeats    int64          `json:"repeats"`
	SoldOut    int64          `json:"sold_out"`
	Limited    int64          `json:"already_claimed"`
	Errors     map[string]int `json:"errors"`
	ClaimCalls Latency        `json:"claim_latency"`
	// SoldOutAfter is how long after the opening the last unit was claimed, in seconds; 0 when the drop
	// did not sell out.
	SoldOutAfter float64 `json:"sold_out_after"`
	// The drop as it answered after the run.
	Status  string `json:"status"`
	Claimed int64  `json:"claimed"`
	// Listed is how many of the run's claims the drop's listing showed as they were answered, and
	// Looked up how many codes were looked up and found as their claim's.
	Listed   int64 `json:"listed"`
	LookedUp int64 `json:"looked_up"`
	// WatchersDone counts the watchers whose feed showed the end: sold out, or the last count.
	WatchersDone int `json:"watchers_done"`
	// Problems lists whatever the run found wrong.
	Problems []string `json:"problems"`
}

// dropRun is one rehearsal of a drop.
type dropRun struct {
	*ledger
	sources  *sources
	opens    time.Time
	each     int     // claims each visitor asks for
	repeat   float64 // the share of claims sent again with the same key
	complete bool    // every visitor had its answers before the run's time ran out

	soldOut, limited atomic.Int64
	timesMu          sync.Mutex
	times            []time.Duration
}

// feedGrace is how long watchers may take, after the last claim's answer, to show its count: a drop's
// feed reads the drop once a second.
const feedGrace = 3 * time.Second

// rehearseDrop runs `rushgate loadtest drop ...`.
func rehearseDrop(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("drop", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8080", "the rushgate to rehearse against")
	id := fs.String("drop", "", "the drop to claim from, open or about to open, with no room (required)")
	visitors := fs.Int("visitors", 1000, "how many visitors claim, each its own (at most 100,000)")
	arrival := fs.Float64("arrival-rate", 0, "visitors arriving a second from the opening; 0: all at the opening")
	each := fs.Int("claims-each", 1, "how many claims each visitor asks for, one after another (at most 100)")
	repeat := fs.Float64("repeat", 0.1, "the share of claims sent again with the same Idempotency-Key, as a double press does (0 to 1)")
	watchers := fs.Int("watchers", 100, "how many watchers hold the drop's live feed, as its page does (at most 100,000)")
	duration := fs.Duration("duration", 5*time.Minute, "the longest the run lasts; it stops by itself then")
	adminKey := fs.String("admin-key", "", "mints the visitors and reads the drop's claims back (required)")
	nSources := fs.Int("sources", defaultSources, "with a target on the IPv4 loopback, how many of its addresses the visitors and watchers come from")
	reportJSON := fs.String("report-json", "", "also write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *id == "" || *adminKey == "":
		return errors.New("--drop and --admin-key are required")
	case *visitors < 1 || *visitors > 100_000:
		return errors.New("--visitors must be 1 to 100,000")
	case !(*arrival >= 0 && *arrival <= 1e6):
		return errors.New("--arrival-rate must be 0 to 1,000,000")
	case *each < 1 || *each > 100:
		return errors.New("--claims-each must be 1 to 100")
	case !(*repeat >= 0 && *repeat <= 1):
		return errors.New("--repeat must be 0 to 1")
	case *watchers < 0 || *watchers > 100_000:
		return errors.New("--watchers must be 0 to 100,000")
	}
	base, src, err := runFlags(*target, *duration, *nSources)
	if err != nil {
		return err
	}
	defer src.close()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	l, err := openLedger(ctx, strings.TrimSuffix(base.String(), "/"), *id, *adminKey, src.client(0))
	if err != nil {
		return err
	}
	d := &dropRun{ledger: l, sources: src, each: *each, repeat: *repeat}
	switch {
	case d.first.Room != "":
		return fmt.Errorf("drop %s is claimed through room %s: rehearse it with --room %s --drop %s", *id, d.first.Room, d.first.Room, *id)
	case d.first.Status == "sold_out" || d.first.Status == "closed":
		return fmt.Errorf("drop %s has ended (%s): rehearse one that is open or about to open", *id, d.first.Status)
	}
	tokens, ids, err := mintVisitors(ctx, d.base, d.adminKey, *visitors, min(*visitors, 32))
	if err != nil {
		return err
	}
	start := time.Now()
	d.opens = d.first.OpensAt
	if d.opens.Before(start) {
		d.opens = start
	}
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	var watching, claiming sync.WaitGroup
	seen := make([]int64, *watchers) // the last count each watcher's feed showed; -1 after a broken feed
	for w := range *watchers {
		c := d.sources.client(w)
		watching.Go(func() { seen[w] = d.watch(wctx, c) })
	}
	for v := range tokens {
		at := d.opens
		if *arrival > 0 {
			at = at.Add(time.Duration(float64(v) / *arrival * float64(time.Second)))
		}
		c := d.sources.client(*watchers + v)
		rng := rand.New(rand.NewPCG(uint64(v), uint64(start.UnixNano())))
		claiming.Go(func() {
			if sleepUntil(ctx, at) {
				d.visit(ctx, c, tokens[v], ids[v], v, rng)
			}
		})
	}
	claiming.Wait()
	d.complete = ctx.Err() == nil
	watched := make(chan struct{})
	go func() { watching.Wait(); close(watched) }()
	grace := time.NewTimer(feedGrace) // or less: watchers of a sold-out drop end by themselves
	select {
	case <-watched:
	case <-grace.C:
	}
	grace.Stop()
	stopWatching()
	<-watched
	ectx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second) // the read-back runs after the run's time too
	defer stop()
	rep := d.report(ectx, *id, len(tokens), seen)
	rep.Seconds = time.Since(start).Seconds()
	writeDropText(out, rep)
	if err := saveJSON(*reportJSON, rep); err != nil {
		return err
	}
	return problemsFound(rep.Problems)
}

// visit is one visitor: it asks for its claims one after another, each under a key of its own and
// some twice, until it has them all, is told it is at its limit or the drop is sold out.
func (d *dropRun) visit(ctx context.Context, c *http.Client, token, vid string, v int, rng *rand.Rand) {
	for n := 0; n < d.each && ctx.Err() == nil; n++ {
		key := fmt.Sprintf("rehearsal-%d-%d", v, n)
		code := d.claim(ctx, c, token, vid, key)
		for try := 0; code == "not_open"; try++ { // this machine's clock is ahead of the server's, or the drop closed
			if try == 100 || !sleepUntil(ctx, time.Now().Add(20*time.Millisecond)) {
				d.fail("not_open")
				return
			}
			code = d.claim(ctx, c, token, vid, key)
		}
		if code != "" {
			return
		}
		if rng.Float64() < d.repeat { // a double press: the same claim again
			if again := d.claim(ctx, c, token, vid, key); again != "" && again != "network" {
				d.problem("a repeat of a claim under its Idempotency-Key was refused: %s", again)
			}
		}
	}
}

// claim asks for a claim under key and notes the answer: "" for a claim, or the refusal's code.
func (d *dropRun) claim(ctx context.Context, c *http.Client, token, vid, key string) string {
	req, _ := http.NewRequestWithContext(ctx, "POST", d.base+"/v1/drops/"+d.id+"/claims", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	sent := time.Now()
	res, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			d.fail("network")
		}
		d.unsure.Add(1) // it may have been made
		return "network"
	}
	var answer struct {
		claimSeen
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&answer)
	res.Body.Close()
	took := time.Since(sent)
	d.timesMu.Lock()
	d.times = append(d.times, took)
	d.timesMu.Unlock()
	switch {
	case err != nil:
		d.fail("bad_answer")
		return "bad_answer"
	case res.StatusCode == http.StatusCreated:
		answer.Visitor = vid
		d.made(key, answer.claimSeen)
		return ""
	case answer.Error.Code == "sold_out":
		d.soldOut.Add(1)
	case answer.Error.Code == "already_claimed":
		d.limited.Add(1)
	case answer.Error.Code == "not_open":
	default:
		if answer.Error.Code == "" {
			answer.Error.Code = "http_" + strconv.Itoa(res.StatusCode)
		}
		d.fail(answer.Error.Code)
	}
	return answer.Error.Code
}

// watch holds the drop's live feed until the drop is sold out or the run ends it, opening it again
// when the server ends it early, and returns the last count of claims it showed; -1 when it showed
// none, or a count that went down (each a problem).
func (d *dropRun) watch(ctx context.Context, c *http.Client) int64 {
	last := int64(-1)
	for opened := 0; ctx.Err() == nil; opened++ {
		if opened > 0 {
			sleepUntil(ctx, time.Now().Add(time.Second))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", d.base+"/v1/drops/"+d.id+"/live", nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := c.Do(req)
		if err != nil {
			continue
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			d.fail("live_http_" + strconv.Itoa(res.StatusCode))
			continue
		}
		broke, over := false, false
		readEvents(res.Body, func(e event) bool {
			var v dropView
			if json.Unmarshal([]byte(e.data), &v) != nil {
				d.problem("a watcher's feed sent a view it could not read: %.80s", e.data)
				return true
			}
			if v.Claimed < last {
				d.problem("a watcher's feed showed %d claimed after %d", v.Claimed, last)
				broke = true
				return false
			}
			last, over = v.Claimed, v.Status == "sold_out"
			return !over
		})
		res.Body.Close()
		switch {
		case broke:
			return -1
		case over:
			return last
		}
	}
	if last < 0 {
		d.problem("a watcher's feed showed nothing within the run")
	}
	return last
}

// report reads the drop back and holds it against the run's answers.
func (d *dropRun) report(ctx context.Context, id string, visitors int, seen []int64) DropReport {
	end, err := d.view(ctx)
	if err != nil {
		d.problem("reading the drop after the run: %v", err)
	}
	listed, looked := d.readBack(ctx, end)
	for _, p := range d.judge(end, visitors) {
		d.problem("%s", p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rep := DropReport{Drop: id, Visitors: visitors, Watchers: len(seen), Stock: d.first.Stock, Remaining: d.first.Remaining,
		Claims: int64(len(d.claims)), Repeats: d.repeats.Load(), SoldOut: d.soldOut.Load(), Limited: d.limited.Load(),
		ClaimCalls: latency(d.times), Status: end.Status, Claimed: end.Claimed, Listed: listed, LookedUp: looked}
	if !d.lastUnit.IsZero() {
		rep.SoldOutAfter = d.lastUnit.Sub(d.opens).Seconds()
	}
	for _, n := range seen {
		switch {
		case n == end.Claimed:
			rep.WatchersDone++
		case n >= 0:
			d.problem("a watcher's feed last showed %d claimed, while the drop counts %d", n, end.Claimed)
		}
	}
	rep.Errors, rep.Problems = d.found()
	return rep
}

// judge holds the drop's end against the run's answers: the ledger's checks, and those of a crowd
// that claimed all it could at the opening.
func (d *dropRun) judge(end dropView, visitors int) []string {
	problems := d.ledger.judge(end)
	say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	d.mu.Lock()
	defer d.mu.Unlock()
	made := int64(len(d.claims))
	if d.soldOut.Load() > 0 && end.Status != "sold_out" {
		say("visitors were told the drop was sold out %d times, while %d units remain", d.soldOut.Load(), end.Remaining)
	}
	// Every visitor that finished asked for its claims up to the drop's limit: the crowd must have been
	// given that many, or the whole stock.
	wanted := int64(visitors) * min(int64(d.each), d.first.PerVisitor)
	if want := min(wanted, d.first.Remaining); d.complete && d.unsure.Load() == 0 && d.failures() == 0 && made != want {
		say("the run asked for %d claims and was given %d, while %d units remained at its start", wanted, made, d.first.Remaining)
	}
	return problems
}

// writeDropText prints the report for a person.
func writeDropText(out io.Writer, rep DropReport) {
	fmt.Fprintf(out, "\ndrop %s: %d visitors, %d watchers, %.1fs; %d of %d units remained at the start\n", rep.Drop, rep.Visitors,
		rep.Watchers, rep.Seconds, rep.Remaining, rep.Stock)
	fmt.Fprintf(out, "claims %d (each once; %d repeats under the same key answered alike), told sold out %d, at their limit %d\n",
		rep.Claims, rep.Repeats, rep.SoldOut, rep.Limited)
	fmt.Fprintf(out, "the drop: %s, %d of %d claimed", rep.Status, rep.Claimed, rep.Stock)
	if rep.SoldOutAfter > 0 {
		fmt.Fprintf(out, "; the last unit went %.2fs after the opening", rep.SoldOutAfter)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "read back: %d of the run's claims listed as answered, %d codes looked up and found\n", rep.Listed, rep.LookedUp)
	if rep.Watchers > 0 {
		fmt.Fprintf(out, "live feed: %d of %d watchers ended on the drop's count\n", rep.WatchersDone, rep.Watchers)
	}
	if rep.ClaimCalls.Count > 0 {
		fmt.Fprintf(out, "claim answers: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n", rep.ClaimCalls.P50, rep.ClaimCalls.P95, rep.ClaimCalls.P99)
	}
	writeFindings(out, rep.Problems, rep.Errors)
}
