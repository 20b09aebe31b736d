package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// An auction's rehearsal (`rushgate loadtest auction`) has bidders bid on a running auction until it
// closes, each at a random moment around --bid-every offering the least it was last told plus up to two
// increments, while watchers hold its live feed as the auction's page does. It reports what a seller
// and a bidder would ask of the day: the bids' answers and latencies, how long an accepted bid took to
// reach the watchers, and whether every watcher saw every event once and in order, the close included,
// and the close's price and winner those of the highest bid accepted.

// AuctionReport is what an auction's rehearsal found; --report-json writes it as is.
type AuctionReport struct {
	Auction  string  `json:"auction"`
	Bidders  int     `json:"bidders"`
	Watchers int     `json:"watchers"`
	Seconds  float64 `json:"seconds"`
	// Bids sent, and their answers: accepted, refused as too low (another bid came first), refused as
	// the auction had closed. Errors counts every other answer by code.
	Bids     int64          `json:"bids"`
	Accepted int64          `json:"accepted"`
	TooLow   int64          `json:"too_low"`
	Late     int64          `json:"after_close"`
	Errors   map[string]int `json:"errors"`
	BidCalls Latency        `json:"bid_latency"`
	// Seen is how long an accepted bid took, from its request, to show on the watchers' feeds.
	Seen Latency `json:"seen_latency"`
	// The auction's end as it answered after the run, and the highest bid the run had accepted.
	Status     string `json:"status"`
	Price      int64  `json:"price"`
	FinalPrice int64  `json:"final_price"`
	Winner     string `json:"winner"`
	BidCount   int64  `json:"bid_count"`
	// Highest is the highest price an accepted bid's answer showed: every price the auction reached
	// was some bid's of the run, so the auction must end there.
	Highest int64 `json:"highest_price"`
	// Events each watcher saw in order (the least of them), and how often a feed had to be opened
	// again (the server ended it, as a deploy does): a watcher resumes after the last event it saw.
	Events       int64 `json:"events"`
	Reconnects   int64 `json:"reconnects"`
	WatchersDone int   `json:"watchers_done"` // watchers that saw the auction's end
	// Problems lists whatever the run found wrong: an event missed, repeated or out of order on a
	// feed, a watcher that never saw the end, an end that is not the highest accepted bid's.
	Problems []string `json:"problems"`
}

// auctionRun is one rehearsal of an auction.
type auctionRun struct {
	base, id string
	every    time.Duration
	sources  *sources
	start    time.Time

	bids, accepted, tooLow, late, reconnects atomic.Int64
	highest                                  atomic.Int64
	mu                                       sync.Mutex
	errors                                   map[string]int
	bidTimes                                 []time.Duration
	sentAt                                   map[int64]time.Time // an accepted bid's last event -> when its request left
	problems                                 []string            // each once, in the order first found
	times                                    map[string]int      // problem -> how many times it was found
}

// timedWatchers is how many watchers note when each event reached them, for the report's latency from
// an accepted bid's request to its event on the feeds: enough for its quantiles at any crowd's size.
const timedWatchers = 100

// arrival is when an event reached a watcher.
type arrival struct {
	seq int64
	at  time.Time
}

// auctionView is what the run reads of an auction's answers.
type auctionView struct {
	Status     string `json:"status"`
	Price      int64  `json:"price"`
	MinNext    int64  `json:"min_next_bid"`
	Seq        int64  `json:"seq"`
	Winner     string `json:"winner"`
	FinalPrice int64  `json:"final_price"`
	BidCount   int64  `json:"bid_count"`
}

// rehearseAuction runs `rushgate loadtest auction ...`.
func rehearseAuction(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("auction", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8080", "the rushgate to rehearse against")
	id := fs.String("auction", "", "the auction to bid on, open or about to open (required)")
	bidders := fs.Int("bidders", 50, "how many bidders bid, each its own visitor (at most 10,000)")
	watchers := fs.Int("watchers", 100, "how many watchers hold the live feed, as the page does (at most 100,000)")
	every := fs.Duration("bid-every", time.Second, "how often each bidder bids, on average")
	duration := fs.Duration("duration", 10*time.Minute, "the longest the run lasts; it stops by itself then, closed or not")
	adminKey := fs.String("admin-key", "", "mints the bidders' visitors (required)")
	nSources := fs.Int("sources", defaultSources, "with a target on the IPv4 loopback, how many of its addresses the watchers and bidders come from")
	reportJSON := fs.String("report-json", "", "also write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *id == "" || *adminKey == "":
		return errors.New("--auction and --admin-key are required")
	case *bidders < 1 || *bidders > 10_000:
		return errors.New("--bidders must be 1 to 10,000")
	case *watchers < 0 || *watchers > 100_000:
		return errors.New("--watchers must be 0 to 100,000")
	case *every < time.Millisecond || *every > time.Hour:
		return errors.New("--bid-every must be 1ms to 1h")
	}
	base, src, err := runFlags(*target, *duration, *nSources)
	if err != nil {
		return err
	}
	a := &auctionRun{base: strings.TrimSuffix(base.String(), "/"), id: url.PathEscape(*id), every: *every,
		sources: src, errors: map[string]int{}, sentAt: map[int64]time.Time{}, times: map[string]int{}}
	defer a.sources.close()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	first, err := a.view(ctx, a.sources.client(0))
	if err != nil {
		return err
	}
	if first.Status == "closed" || first.Status == "sold" {
		return fmt.Errorf("auction %s has ended (%s): rehearse one that is open or about to open", *id, first.Status)
	}
	tokens, err := mintVisitors(ctx, a.base, *adminKey, *bidders, min(*bidders, 32))
	if err != nil {
		return err
	}
	a.start = time.Now()
	stopProgress := a.progress(out)
	var wg sync.WaitGroup
	seen := make([]int64, *watchers)
	arrivals := make([][]arrival, min(*watchers, timedWatchers))
	for w := range *watchers {
		c := a.sources.client(w)
		wg.Go(func() {
			var times *[]arrival
			if w < len(arrivals) {
				times = &arrivals[w]
			}
			seen[w] = a.watch(ctx, c, first.Seq, times)
		})
	}
	var bidding sync.WaitGroup
	for b, tok := range tokens {
		c := a.sources.client(*watchers + b)
		rng := rand.New(rand.NewPCG(uint64(b), uint64(a.start.UnixNano())))
		bidding.Go(func() { a.bid(ctx, c, tok, first, rng) })
	}
	bidding.Wait()
	wg.Wait()
	stopProgress()
	ectx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second) // the end is read after the run's time too
	defer stop()
	rep := a.report(ectx, *id, len(tokens), seen, arrivals)
	writeAuctionText(out, rep)
	if *reportJSON != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*reportJSON, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// view reads the auction.
func (a *auctionRun) view(ctx context.Context, c *http.Client) (auctionView, error) {
	var v auctionView
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/v1/auctions/"+a.id, nil)
	res, err := c.Do(req)
	if err != nil {
		return v, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		return v, fmt.Errorf("reading auction %s: %s %s", a.id, res.Status, b)
	}
	return v, json.NewDecoder(res.Body).Decode(&v)
}

// bid is one bidder: it bids the least it was last told plus up to two increments, at random moments
// around a.every apart, until the auction says it is closed or the run ends.
func (a *auctionRun) bid(ctx context.Context, c *http.Client, token string, v auctionView, rng *rand.Rand) {
	next, step := v.MinNext, max(1, v.MinNext-v.Price)
	for {
		pause := time.Duration(rng.ExpFloat64() * float64(a.every))
		if !sleepUntil(ctx, time.Now().Add(min(pause, 5*a.every))) {
			return
		}
		amount := next + rng.Int64N(2*step+1)
		req, _ := http.NewRequestWithContext(ctx, "POST", a.base+"/v1/auctions/"+a.id+"/bids",
			strings.NewReader(`{"amount": `+strconv.FormatInt(amount, 10)+`}`))
		req.Header.Set("Authorization", "Bearer "+token)
		sent := time.Now()
		a.bids.Add(1)
		res, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				a.fail("network")
			}
			continue
		}
		var answer struct {
			Auction auctionView `json:"auction"`
			Error   struct {
				Code    string `json:"code"`
				MinNext int64  `json:"min_next_bid"`
			} `json:"error"`
		}
		err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&answer)
		res.Body.Close()
		took := time.Since(sent)
		switch {
		case err != nil:
			a.fail("bad_answer")
		case res.StatusCode == http.StatusCreated:
			a.accepted.Add(1)
			price := answer.Auction.Price
			for h := a.highest.Load(); price > h && !a.highest.CompareAndSwap(h, price); h = a.highest.Load() {
			}
			a.mu.Lock()
			a.bidTimes = append(a.bidTimes, took)
			a.sentAt[answer.Auction.Seq] = sent
			a.mu.Unlock()
			if m := answer.Auction.MinNext; m > 0 { // none when the answer came after the end
				next, step = m, max(1, m-answer.Auction.Price)
			}
		case answer.Error.Code == "bid_too_low":
			a.tooLow.Add(1)
			a.observe(took)
			next = max(next, answer.Error.MinNext)
		case answer.Error.Code == "auction_not_started":
			a.observe(took)
		case answer.Error.Code == "auction_closed":
			a.late.Add(1)
			a.observe(took)
			return
		default:
			code := answer.Error.Code
			if code == "" {
				code = "http_" + strconv.Itoa(res.StatusCode)
			}
			a.fail(code)
			if res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusNotFound {
				return // not_admitted, identity_required, auction_not_found: no later bid fares better
			}
		}
	}
}

func (a *auctionRun) observe(took time.Duration) {
	a.mu.Lock()
	a.bidTimes = append(a.bidTimes, took)
	a.mu.Unlock()
}

func (a *auctionRun) fail(code string) {
	a.mu.Lock()
	a.errors[code]++
	a.mu.Unlock()
}

// problem notes what went wrong; the report says each once, with how often when more than once (every
// watcher that missed the end).
func (a *auctionRun) problem(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.times[p]++; a.times[p] == 1 && len(a.problems) < 100 {
		a.problems = append(a.problems, p)
	}
}

// watch holds the auction's live feed (Server-Sent Events) from after the sequence the run started at
// until the auction's end, opening it again after the last event seen when the server ends it early,
// as an EventSource does. Each event must come once, in order; it returns how many came, or -1 when
// the end never did, and notes when each came in times unless that is nil.
func (a *auctionRun) watch(ctx context.Context, c *http.Client, after int64, times *[]arrival) int64 {
	last, n := after, int64(0)
	for opened := 0; ctx.Err() == nil; opened++ {
		if opened > 0 {
			a.reconnects.Add(1)
			sleepUntil(ctx, time.Now().Add(time.Second))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/v1/auctions/"+a.id+"/live?after="+strconv.FormatInt(last, 10), nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := c.Do(req)
		if err != nil {
			continue
		}
		if res.StatusCode == http.StatusNoContent { // over, and nothing after last
			res.Body.Close()
			a.problem("a watcher's feed ended after event %d without the auction's end", last)
			return -1
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			a.fail("live_http_" + strconv.Itoa(res.StatusCode))
			continue
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var kind string
		var seq int64 = -1
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				seq, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				kind = line[7:]
			case line == "" && kind != "":
				if kind != "snapshot" {
					if seq != last+1 {
						a.problem("a watcher got event %d after %d", seq, last)
					} else if times != nil {
						*times = append(*times, arrival{seq, time.Now()})
					}
					last = max(last, seq)
					n++
					if kind == "closed" || kind == "sold" {
						res.Body.Close()
						return n
					}
				}
				kind, seq = "", -1
			}
		}
		res.Body.Close()
	}
	a.problem("a watcher did not see the auction's end within the run (last event %d)", last)
	return -1
}

// progress prints the counts every two seconds until the function it returns is called.
func (a *auctionRun) progress(out io.Writer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(out, "%7.1fs  bids %d  accepted %d  too low %d  highest %d\n", time.Since(a.start).Seconds(),
					a.bids.Load(), a.accepted.Load(), a.tooLow.Load(), a.highest.Load())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// report sums the run and holds its end against the auction's own.
func (a *auctionRun) report(ctx context.Context, id string, bidders int, seen []int64, arrivals [][]arrival) AuctionReport {
	end, err := a.view(ctx, a.sources.client(0))
	if err != nil {
		a.problem("reading the auction after the run: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var delays []time.Duration
	for _, times := range arrivals {
		for _, t := range times {
			if sent, ok := a.sentAt[t.seq]; ok {
				delays = append(delays, t.at.Sub(sent))
			}
		}
	}
	rep := AuctionReport{Auction: id, Bidders: bidders, Watchers: len(seen), Seconds: time.Since(a.start).Seconds(),
		Bids: a.bids.Load(), Accepted: a.accepted.Load(), TooLow: a.tooLow.Load(), Late: a.late.Load(), Errors: a.errors,
		BidCalls: latency(a.bidTimes), Seen: latency(delays), Status: end.Status, Price: end.Price, FinalPrice: end.FinalPrice,
		Winner: end.Winner, BidCount: end.BidCount, Highest: a.highest.Load(), Reconnects: a.reconnects.Load()}
	rep.Events = -1
	for _, n := range seen {
		if n >= 0 {
			rep.WatchersDone++
			if rep.Events < 0 || n < rep.Events {
				rep.Events = n
			}
		}
	}
	rep.Events = max(0, rep.Events)
	var problems []string
	for _, p := range a.problems {
		if n := a.times[p]; n > 1 {
			p += fmt.Sprintf(" (%d times)", n)
		}
		problems = append(problems, p)
	}
	switch {
	case end.Status != "closed" && end.Status != "sold":
		problems = append(problems, "the auction had not ended when the run did ("+end.Status+")")
	case rep.Accepted > 0 && end.FinalPrice != rep.Highest:
		problems = append(problems, fmt.Sprintf("the auction ended at %d, while an accepted bid's answer showed %d", end.FinalPrice, rep.Highest))
	}
	rep.Problems = append([]string{}, problems...)
	return rep
}

// latency sums a set of durations.
func latency(ds []time.Duration) Latency {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return Latency{Count: len(ds), P50: ms(quantile(ds, 0.50)), P95: ms(quantile(ds, 0.95)), P99: ms(quantile(ds, 0.99))}
}

// writeAuctionText prints the report for a person.
func writeAuctionText(out io.Writer, rep AuctionReport) {
	fmt.Fprintf(out, "\nauction %s: %d bidders, %d watchers, %.1fs\n", rep.Auction, rep.Bidders, rep.Watchers, rep.Seconds)
	fmt.Fprintf(out, "bids %d: accepted %d, too low %d, after the close %d\n", rep.Bids, rep.Accepted, rep.TooLow, rep.Late)
	if rep.Status == "closed" || rep.Status == "sold" {
		fmt.Fprintf(out, "the auction: %s at %d to %q after %d bids; the highest price an answer showed: %d\n", rep.Status, rep.FinalPrice,
			rep.Winner, rep.BidCount, rep.Highest)
	} else {
		fmt.Fprintf(out, "the auction: still %s, at %d after %d bids; the highest price an answer showed: %d\n", rep.Status, rep.Price,
			rep.BidCount, rep.Highest)
	}
	if rep.Watchers > 0 {
		fmt.Fprintf(out, "live feed: %d of %d watchers saw the end, each %d events or more, in order; feeds opened again %d times\n",
			rep.WatchersDone, rep.Watchers, rep.Events, rep.Reconnects)
		fmt.Fprintf(out, "an accepted bid on the watchers' feeds, from its request: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n",
			rep.Seen.P50, rep.Seen.P95, rep.Seen.P99)
	}
	fmt.Fprintf(out, "bid answers: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n", rep.BidCalls.P50, rep.BidCalls.P95, rep.BidCalls.P99)
	if len(rep.Problems) == 0 {
		fmt.Fprintln(out, "problems: none")
	} else {
		fmt.Fprintln(out, "problems:")
		for _, p := range rep.Problems {
			fmt.Fprintln(out, "  "+p)
		}
	}
	writeErrors(out, rep.Errors)
}
