package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rushgate/rushgate/admission"
)

// pollEvery is how often a polling visitor asks for its status: the waiting-room page's pace when it
// cannot hold an event stream.
const pollEvery = 2 * time.Second

// streamRetry is how long a visitor whose event stream was refused polls before it tries the stream
// again: the page's STREAM_RETRY.
const streamRetry = 30 * time.Second

// rehearsal is one run of simulated visitors through a room, and on to a drop behind it.
type rehearsal struct {
	base     string
	room     string
	drop     string  // claimed from after each admission; "" for none
	ledger   *ledger // with a drop and the admin key: the claims answered, read back at the end
	visitors int
	arrival  float64
	think    time.Duration
	sse      bool
	client   *http.Client
	sources  *sources
	verifier *admission.Verifier
	start    time.Time

	// Live counts, for the progress line.
	joined, waiting, admitted, done, requests, failed atomic.Int64
	// With a drop: units claimed, and visitors told it is sold out, at the door, in line or at the claim.
	claims, soldOut, soldOutInLine atomic.Int64
	// Event streams the server refused (429 past its bound per address, 503), after which the visitor
	// polled, as the page does.
	streamsRefused atomic.Int64

	mu       sync.Mutex
	calls    map[string][]time.Duration // call -> latencies
	errors   map[string]int             // error code -> count
	etaMiss  []float64                  // actual - predicted wait, seconds, of visitors first told an estimate
	bounds   int                        // visitors first told an upper bound of their wait
	exceeded int                        // of those, whose wait was longer than it
	admitAt  []time.Duration            // when each admission came, since the start
	timeline []tick
}

// tick is the run's counts at one second.
type tick struct {
	At                                      float64 `json:"t"`
	Joined, Waiting, Admitted, Done, Errors int64
}

// Report is what a rehearsal found; --report-json writes it as is, and --report as a page.
type Report struct {
	Room     string  `json:"room"`
	Visitors int     `json:"visitors"`
	Seconds  float64 `json:"seconds"`
	Joins    int64   `json:"joins"`
	Admitted int64   `json:"admissions"`
	Done     int64   `json:"done"`
	Unserved int64   `json:"unserved"` // still waiting when the run ended
	// With --drop: the units the run claimed, the visitors told the drop is sold out (at the door, in
	// line or at the claim), and the drop's own counts at the end.
	Drop        string `json:"drop,omitempty"`
	Claims      int64  `json:"claims"`
	SoldOut     int64  `json:"sold_out"`
	DropStock   int    `json:"drop_stock,omitempty"`
	DropClaimed int    `json:"drop_claimed,omitempty"`
	// With --drop and --admin-key, the drop is read back at the end (ReadBack): DropListed counts the
	// run's claims its listing showed as answered, DropLookedUp the codes found as their claim's, and
	// Problems what the drop's account contradicts of the answers (see the drop's rehearsal).
	ReadBack     bool               `json:"drop_read_back,omitempty"`
	DropListed   int64              `json:"drop_listed,omitempty"`
	DropLookedUp int64              `json:"drop_looked_up,omitempty"`
	Problems     []string           `json:"problems,omitempty"`
	Calls        map[string]Latency `json:"calls"`
	Errors       map[string]int     `json:"errors"`
	AdmitRate    float64            `json:"admissions_per_second"`
	// RoomRate is the room's configured rate in admissions a second, 0 when it has none or could not
	// be read (it needs --admin-key).
	RoomRate float64 `json:"room_rate"`
	// ETA accuracy: each waiting visitor's first predicted wait against its actual wait, seconds. A
	// visitor first told an upper bound (eta_upper_bound: the line had not moved yet) is counted
	// in ETABounds instead, and in ETABoundsExceeded if its wait was longer than the bound.
	ETAMedianError float64 `json:"eta_median_error"`
	ETAP90Error    float64 `json:"eta_p90_error"`
	ETASamples     int     `json:"eta_samples"`
	// ETALonger counts the visitors of ETASamples whose wait outlasted the estimate by more than a
	// second: a wait told too short disappoints where one told long does not.
	ETALonger         int `json:"eta_longer"`
	ETABounds         int `json:"eta_bounds"`
	ETABoundsExceeded int `json:"eta_bounds_exceeded"`
	// Sources is how many client addresses the run came from: many against a target on the loopback
	// (--sources), else one.
	Sources int `json:"sources"`
	// StreamsRefused counts the event streams the server refused with 429 or 503; the visitor polled
	// meanwhile, as the page does. The server holds 100 streams an address by default
	// (--streams-per-address), and a run from one machine to another is one address.
	StreamsRefused int64  `json:"streams_refused"`
	Timeline       []tick `json:"timeline"`
}

// Latency sums one kind of call.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
}

// rehearse runs `rushgate loadtest --room R ...`.
func rehearse(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8080", "the rushgate to rehearse against")
	roomID := fs.String("room", "", "the room the visitors join (required)")
	dropID := fs.String("drop", "", "after each admission, claim a unit of this drop with it, as the drop's page does")
	visitors := fs.Int("visitors", 100, "how many visitors arrive in all (at most 1,000,000)")
	arrival := fs.Float64("arrival-rate", 10, "visitors arriving per second")
	think := fs.Duration("think", 30*time.Second, "how long an admitted visitor stays before releasing")
	duration := fs.Duration("duration", 5*time.Minute, "the longest the run lasts; it stops by itself then")
	sse := fs.Bool("sse", false, "wait on the event stream, as the page does (the default)")
	poll := fs.Bool("poll", false, "wait by polling the status every 2s instead")
	adminKey := fs.String("admin-key", "", "read the room's configured rate to compare (optional)")
	report := fs.String("report", "", "also write the report with charts to this HTML file")
	reportJSON := fs.String("report-json", "", "also write the report as JSON to this file")
	nSources := fs.Int("sources", defaultSources, "with a target on the IPv4 loopback, how many of its addresses the visitors come from, each from one,\n"+
		"as a crowd comes from many (1 to 254; 1: one address, as from another machine)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *roomID == "":
		return errors.New("--room is required")
	case *visitors < 1 || *visitors > 1_000_000:
		return errors.New("--visitors must be 1 to 1,000,000")
	case !(*arrival > 0 && *arrival <= 100_000):
		return errors.New("--arrival-rate must be above 0 and at most 100,000 a second")
	case *think < 0:
		return errors.New("--think must not be negative")
	case *sse && *poll:
		return errors.New("--sse and --poll exclude each other")
	}
	base, src, err := runFlags(*target, *duration, *nSources)
	if err != nil {
		return err
	}
	r := &rehearsal{
		base: strings.TrimSuffix(base.String(), "/"), room: *roomID, drop: *dropID, visitors: *visitors, arrival: *arrival, think: *think,
		sse: !*poll, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, sources: src,
		calls: map[string][]time.Duration{}, errors: map[string]int{},
	}
	defer r.client.CloseIdleConnections()
	defer src.close()
	r.verifier = admission.NewRemoteVerifier(r.base+"/v1/keys", r.client)
	roomRate := 0.0
	if *adminKey != "" {
		roomRate, err = r.roomRate(ctx, *adminKey)
		if err != nil {
			return err
		}
	}
	if *dropID != "" && *adminKey != "" {
		if r.ledger, err = openLedger(ctx, r.base, *dropID, *adminKey, r.client); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	r.start = time.Now()
	progress := newProgress(out, r)
	stopProgress := progress.run()
	var wg sync.WaitGroup
	for i := range r.visitors {
		at := r.start.Add(time.Duration(float64(i) / r.arrival * float64(time.Second)))
		if !sleepUntil(ctx, at) {
			break
		}
		v := &visitor{r, r.sources.client(i)}
		wg.Go(func() { v.visit(ctx) })
	}
	wg.Wait()
	stopProgress()
	rep := r.report(roomRate)
	if r.drop != "" {
		r.dropCounts(context.WithoutCancel(ctx), &rep)
	}
	writeText(out, rep)
	if *report != "" {
		if err := writeHTML(*report, rep); err != nil {
			return err
		}
		fmt.Fprintln(out, "report:", *report)
	}
	if err := saveJSON(*reportJSON, rep); err != nil {
		return err
	}
	return problemsFound(rep.Problems)
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// roomRate reads the room's configured admissions a second.
func (r *rehearsal) roomRate(ctx context.Context, adminKey string) (float64, error) {
	var cfg struct {
		Rate *struct {
			Admits int    `json:"admits"`
			Per    string `json:"per"`
		} `json:"rate"`
	}
	if _, _, err := r.operator().call(ctx, "room", "GET", "/v1/rooms/"+r.room, adminKey, nil, &cfg); err != nil {
		return 0, fmt.Errorf("reading room %s: %w", r.room, err)
	}
	if cfg.Rate == nil {
		return 0, nil
	}
	per, err := time.ParseDuration(cfg.Rate.Per)
	if err != nil || per <= 0 {
		return 0, nil
	}
	return float64(cfg.Rate.Admits) / per.Seconds(), nil
}

// status is a visitor's answer from join, status and the event stream.
type status struct {
	VisitorToken  string `json:"visitor_token"`
	State         string `json:"state"`
	Position      int64  `json:"position"`
	ETASeconds    *int64 `json:"eta_seconds"`
	ETAUpperBound bool   `json:"eta_upper_bound"`
	// Paused and DropClosed say the wait is told from a resume that nobody can date; DropOpensAt, that
	// it is told from the drop's opening.
	Paused         bool      `json:"paused"`
	DropClosed     bool      `json:"drop_closed"`
	DropOpensAt    time.Time `json:"drop_opens_at"`
	AdmissionToken string    `json:"admission_token"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// apiError is a refusal the API answered, named by its code.
type apiError struct{ code string }

func (e *apiError) Error() string { return e.code }

// visitor is one simulated visitor of the run, with the client of its address (see sources).
type visitor struct {
	*rehearsal
	client *http.Client
}

// operator is whoever reads the room's and the drop's counts: the run's own client.
func (r *rehearsal) operator() *visitor { return &visitor{r, r.client} }

// call sends one request, timing it under name, and decodes its JSON answer into out. A refusal is
// counted as an error unless its code is one of outcomes, an answer the run expects.
func (v *visitor) call(ctx context.Context, name, method, path, token string, body, out any, outcomes ...string) (int, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, v.base+path, rd)
	if err != nil {
		return 0, 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	v.requests.Add(1)
	start := time.Now()
	res, err := v.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			v.fail("network")
		}
		return 0, 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	took := time.Since(start)
	if err != nil {
		if ctx.Err() == nil {
			v.fail("network")
		}
		return res.StatusCode, took, err
	}
	v.observe(name, took)
	if res.StatusCode >= 300 {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		code := fmt.Sprintf("http_%d", res.StatusCode)
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			code = e.Error.Code
		}
		if !slices.Contains(outcomes, code) {
			v.fail(code)
		}
		return res.StatusCode, took, &apiError{code}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			v.fail("bad_answer")
			return res.StatusCode, took, err
		}
	}
	return res.StatusCode, took, nil
}

func (r *rehearsal) observe(name string, d time.Duration) {
	r.mu.Lock()
	r.calls[name] = append(r.calls[name], d)
	r.mu.Unlock()
}

func (r *rehearsal) fail(code string) {
	r.failed.Add(1)
	r.mu.Lock()
	r.errors[code]++
	r.mu.Unlock()
}

// visit is one visitor's way through the room: join, wait, verify, claim (with a drop), think, release.
func (v *visitor) visit(ctx context.Context) {
	var st status
	joinedAt := time.Now()
	if _, _, err := v.call(ctx, "join", "POST", "/v1/rooms/"+v.room+"/join", "", nil, &st, v.dropOutcomes()...); err != nil {
		if isCode(err, "sold_out") {
			v.soldOut.Add(1)
		}
		return
	}
	v.joined.Add(1)
	token := st.VisitorToken
	waited := st.State == "waiting"
	var predicted float64 = -1
	bound := st.ETAUpperBound
	from := joinedAt // when the wait told starts: the join, or the opening of the drop the room follows
	if waited {
		v.waiting.Add(1)
		if st.ETASeconds != nil && !st.Paused && !st.DropClosed {
			predicted = float64(*st.ETASeconds)
		}
		if st.DropOpensAt.After(from) {
			from = st.DropOpensAt
		}
		var err error
		if v.sse {
			st, err = v.stream(ctx, token)
		} else {
			st, err = v.poll(ctx, token)
		}
		v.waiting.Add(-1)
		if err != nil {
			return
		}
	}
	if st.State == "sold_out" && v.drop != "" { // a room that follows the drop's stock
		v.soldOut.Add(1)
		v.soldOutInLine.Add(1)
		return
	}
	if st.State != "admitted" {
		v.fail("not_admitted")
		return
	}
	v.admitted.Add(1)
	now := time.Now()
	v.mu.Lock()
	v.admitAt = append(v.admitAt, now.Sub(v.start))
	switch waitedFor := now.Sub(from).Seconds(); {
	case !waited || predicted < 0:
	case bound:
		v.bounds++
		if waitedFor > predicted+1 { // the answer's seconds are rounded up; a second for the way back
			v.exceeded++
		}
	default:
		v.etaMiss = append(v.etaMiss, waitedFor-predicted)
	}
	v.mu.Unlock()
	start := time.Now()
	adm, err := v.verifier.Verify(ctx, st.AdmissionToken, v.room)
	if err != nil {
		if ctx.Err() == nil {
			v.fail("token_invalid")
		}
		return
	}
	v.observe("verify", time.Since(start))
	if v.drop != "" {
		var c claimSeen
		_, _, err := v.call(ctx, "claim", "POST", "/v1/drops/"+v.drop+"/claims", token, map[string]string{"admission_token": st.AdmissionToken},
			&c, "sold_out")
		var refused *apiError
		switch {
		case err == nil:
			v.claims.Add(1)
			if v.ledger != nil {
				c.Visitor = adm.Visitor()
				v.ledger.made("", c)
			}
		case isCode(err, "sold_out"):
			v.soldOut.Add(1)
		case !errors.As(err, &refused) && v.ledger != nil: // lost in transport: it may have been made
			v.ledger.unsure.Add(1)
		}
	}
	if !sleepUntil(ctx, time.Now().Add(v.think)) {
		return
	}
	// A drop with release_on_claim has ended the admission with the claim: nothing is left to release.
	if _, _, err := v.call(ctx, "release", "POST", "/v1/rooms/"+v.room+"/release", token, nil, nil, v.dropOutcomes()...); err != nil &&
		!(v.drop != "" && isCode(err, "not_admitted")) {
		return
	}
	v.done.Add(1)
}

// dropOutcomes are the refusals a run with a drop expects: its stock gone, an admission its claim ended.
func (r *rehearsal) dropOutcomes() []string {
	if r.drop == "" {
		return nil
	}
	return []string{"sold_out", "not_admitted"}
}

// isCode reports whether err is the API's refusal with this code.
func isCode(err error, code string) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == code
}

// dropCounts reads the drop once at the end: its own counts, to set beside the run's, and with a
// ledger its account, held against the run's answers.
func (r *rehearsal) dropCounts(ctx context.Context, rep *Report) {
	var end dropView
	_, _, err := r.operator().call(ctx, "drop", "GET", "/v1/drops/"+r.drop, "", nil, &end)
	if err == nil {
		rep.DropStock, rep.DropClaimed = int(end.Stock), int(end.Claimed)
	}
	rep.Drop, rep.Claims, rep.SoldOut = r.drop, r.claims.Load(), r.soldOut.Load()
	if r.ledger == nil {
		return
	}
	if err != nil {
		r.ledger.problem("reading the drop after the run: %v", err)
	}
	rep.ReadBack = true
	rep.DropListed, rep.DropLookedUp = r.ledger.readBack(ctx, end)
	for _, p := range r.ledger.judge(end) {
		r.ledger.problem("%s", p)
	}
	_, rep.Problems = r.ledger.found()
}

// poll asks for the status at the page's pace until the visitor is admitted or leaves the line.
func (v *visitor) poll(ctx context.Context, token string) (status, error) {
	st, _, err := v.pollUntil(ctx, token, time.Time{})
	return st, err
}

// pollUntil polls as poll does, giving up at until (the zero time: never); its bool is false then, when
// the visitor is still waiting.
func (v *visitor) pollUntil(ctx context.Context, token string, until time.Time) (status, bool, error) {
	for until.IsZero() || time.Now().Before(until) {
		if !sleepUntil(ctx, time.Now().Add(pollEvery)) {
			return status{}, true, ctx.Err()
		}
		var st status
		if _, _, err := v.call(ctx, "status", "GET", "/v1/rooms/"+v.room+"/status", token, nil, &st); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				return st, true, err
			}
			continue // a network error: try again at the next beat, as the page does
		}
		if st.State != "waiting" {
			return st, true, nil
		}
	}
	return status{}, false, nil
}

// stream holds the event stream until it says the visitor is admitted or out of the line; a stream
// that ends otherwise is opened again, as EventSource does.
func (v *visitor) stream(ctx context.Context, token string) (status, error) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", v.base+"/v1/rooms/"+v.room+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		v.requests.Add(1)
		start := time.Now()
		res, err := v.client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				v.fail("network")
				sleepUntil(ctx, time.Now().Add(time.Second))
			}
			continue
		}
		v.observe("events", time.Since(start))
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
			// The page polls while it cannot hold a stream and tries the stream again later.
			res.Body.Close()
			v.streamsRefused.Add(1)
			if st, over, err := v.pollUntil(ctx, token, time.Now().Add(streamRetry)); over {
				return st, err
			}
			continue
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			v.fail(fmt.Sprintf("events_http_%d", res.StatusCode))
			return status{}, fmt.Errorf("events: %d", res.StatusCode)
		}
		var st status
		done := false
		readEvents(res.Body, func(e event) bool {
			var got status
			if json.Unmarshal([]byte(e.data), &got) == nil && got.State != "waiting" {
				st, done = got, true
			}
			return !done
		})
		res.Body.Close()
		if done {
			return st, nil
		}
	}
	return status{}, ctx.Err()
}

// report sums the run.
func (r *rehearsal) report(roomRate float64) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{
		Room: r.room, Visitors: r.visitors, Seconds: time.Since(r.start).Seconds(), Joins: r.joined.Load(),
		Admitted: r.admitted.Load(), Done: r.done.Load(), Unserved: r.joined.Load() - r.admitted.Load() - r.soldOutInLine.Load(),
		Calls: map[string]Latency{}, Errors: r.errors, RoomRate: roomRate, ETASamples: len(r.etaMiss),
		ETABounds: r.bounds, ETABoundsExceeded: r.exceeded, Sources: r.sources.used(), StreamsRefused: r.streamsRefused.Load(), Timeline: r.timeline,
	}
	for name, ds := range r.calls {
		rep.Calls[name] = latency(ds)
	}
	if n := len(r.admitAt); n > 1 {
		first, last := slices.Min(r.admitAt), slices.Max(r.admitAt)
		if span := (last - first).Seconds(); span > 0 {
			rep.AdmitRate = float64(n-1) / span
		}
	}
	if len(r.etaMiss) > 0 {
		e := make([]float64, len(r.etaMiss))
		for i, m := range r.etaMiss {
			e[i] = math.Abs(m)
			if m > 1 { // the answer's seconds are rounded up; a second for the way back
				rep.ETALonger++
			}
		}
		slices.Sort(e)
		rep.ETAMedianError = e[len(e)/2]
		rep.ETAP90Error = e[min(len(e)-1, len(e)*9/10)]
	}
	return rep
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*q))]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// addresses says how many client addresses a run came from.
func addresses(n int) string {
	if n == 1 {
		return "one address"
	}
	return fmt.Sprintf("%d addresses", n)
}

// writeText prints the report for a person.
func writeText(out io.Writer, rep Report) {
	fmt.Fprintf(out, "\nroom %s: %d visitors in %.1fs\n", rep.Room, rep.Visitors, rep.Seconds)
	fmt.Fprintf(out, "joins %d, admissions %d, released %d, still waiting at the end %d; from %s\n", rep.Joins, rep.Admitted, rep.Done,
		rep.Unserved, addresses(rep.Sources))
	rate := "the room has no rate"
	if rep.RoomRate > 0 {
		rate = fmt.Sprintf("the room's rate %.2f/s", rep.RoomRate)
	}
	fmt.Fprintf(out, "admissions/s %.2f (%s)\n", rep.AdmitRate, rate)
	if rep.Drop != "" {
		fmt.Fprintf(out, "drop %s: claims %d, told sold out %d; the drop counts %d of %d claimed\n", rep.Drop, rep.Claims, rep.SoldOut,
			rep.DropClaimed, rep.DropStock)
		if rep.ReadBack {
			fmt.Fprintf(out, "read back: %d of the run's claims listed as answered, %d codes looked up and found\n", rep.DropListed, rep.DropLookedUp)
		}
	}
	if rep.ETASamples > 0 {
		fmt.Fprintf(out, "ETA error (first estimate against the actual wait, %d visitors): median %.1fs, p90 %.1fs; "+
			"%d waited longer than told\n", rep.ETASamples, rep.ETAMedianError, rep.ETAP90Error, rep.ETALonger)
	}
	if rep.ETABounds > 0 {
		fmt.Fprintf(out, "ETA upper bounds (told before the line had moved, %d visitors): %d waited longer\n",
			rep.ETABounds, rep.ETABoundsExceeded)
	}
	if rep.StreamsRefused > 0 {
		fmt.Fprintf(out, "event streams refused %d times (429 past the server's --streams-per-address, which counted this run\n"+
			"as %s, or 503); those visitors polled the status meanwhile, as the page does\n", rep.StreamsRefused, addresses(rep.Sources))
	}
	names := make([]string, 0, len(rep.Calls))
	for k := range rep.Calls {
		names = append(names, k)
	}
	slices.Sort(names)
	fmt.Fprintf(out, "%-8s %8s %9s %9s %9s\n", "call", "count", "p50 ms", "p95 ms", "p99 ms")
	for _, k := range names {
		c := rep.Calls[k]
		fmt.Fprintf(out, "%-8s %8d %9.2f %9.2f %9.2f\n", k, c.Count, c.P50, c.P95, c.P99)
	}
	if rep.ReadBack {
		writeFindings(out, rep.Problems, rep.Errors)
	} else {
		writeErrors(out, rep.Errors)
	}
}

// runFlags checks the flags that the rehearsals of a room, an auction and a drop share, and returns
// the target and where its visitors come from.
func runFlags(target string, duration time.Duration, nSources int) (*url.URL, *sources, error) {
	switch {
	case duration <= 0 || duration > 24*time.Hour:
		return nil, nil, errors.New("--duration must be above 0 and at most 24h")
	case nSources < 1 || nSources > 254:
		return nil, nil, errors.New("--sources must be 1 to 254")
	}
	base, err := url.Parse(target)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, nil, fmt.Errorf("--target %q: want an http(s) URL", target)
	}
	return base, newSources(base.Hostname(), nSources), nil
}

// saveJSON writes a run's report as JSON to path, when there is one (--report-json).
func saveJSON(path string, rep any) error {
	if path == "" {
		return nil
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	return os.WriteFile(path, b, 0o644)
}

// writeFindings prints a run's problems and its errors by code, or that there were none.
func writeFindings(out io.Writer, problems []string, errs map[string]int) {
	if len(problems) == 0 {
		fmt.Fprintln(out, "problems: none")
	} else {
		fmt.Fprintln(out, "problems:")
		for _, p := range problems {
			fmt.Fprintln(out, "  "+p)
		}
	}
	writeErrors(out, errs)
}

// writeErrors prints a run's errors by code, or that there were none.
func writeErrors(out io.Writer, errs map[string]int) {
	if len(errs) == 0 {
		fmt.Fprintln(out, "errors: none")
		return
	}
	fmt.Fprint(out, "errors:")
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(out, " %s %d", k, errs[k])
	}
	fmt.Fprintln(out)
}
