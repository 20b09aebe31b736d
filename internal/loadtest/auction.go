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
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// An auction's rehearsal (`rushgate loadtest auction`) has bidders bid on a running auction until it
// closes, as its page's bidders do: each at random moments around --bid-every, never against itself (it
// lets its lead stand), some with exact amounts of the least it was last told plus up to two
// increments, some with a secret maximum (--proxy); with --top each will pay at most an amount drawn up
// to it and stops once the price passes that, so the bidding dies down and the auction ends on its own,
// soft close included; with --buy-now some try to buy it at once as it opens. Behind a room, each
// bidder first goes through the room's line and bids with its admission (see auctionLine). Watchers
// meanwhile hold its live feed as the page does. It reports what a seller and a bidder would ask of the
// day: the bids' answers and latencies, how long an accepted bid took to reach the watchers, whether
// every watcher saw every event once and in order, the end included, and whether the end is right: its
// price the highest any accepted bid's answer showed, its winner the bidder whose accepted offer was
// highest and never charged above it, a buy-now sold once and at its price.

// AuctionReport is what an auction's rehearsal found; --report-json writes it as is.
type AuctionReport struct {
	Auction  string  `json:"auction"`
	Bidders  int     `json:"bidders"`
	Watchers int     `json:"watchers"`
	Seconds  float64 `json:"seconds"`
	// Proxies is how many bidders bid with a maximum; Top the most any would pay (0: no limit), and
	// OutBid how many stopped because the price passed what they would pay.
	Proxies int   `json:"proxy_bidders"`
	Top     int64 `json:"top"`
	OutBid  int64 `json:"out_of_budget"`
	// Bids sent, and their answers: accepted, refused as too low (another bid came first), refused as
	// the auction had closed. Errors counts every other answer by code.
	Bids     int64          `json:"bids"`
	Accepted int64          `json:"accepted"`
	TooLow   int64          `json:"too_low"`
	Late     int64          `json:"after_close"`
	Errors   map[string]int `json:"errors"`
	BidCalls Latency        `json:"bid_latency"`
	// BuyNowTries is how many bidders tried to buy the lot as it opened, and BuyNowSold how many of them
	// it was sold to: at most one.
	BuyNowTries int64 `json:"buy_now_tries"`
	BuyNowSold  int64 `json:"buy_now_sold"`
	// Shown is how many events the accepted bids' answers showed (a leader raising its maximum makes
	// none), and Listed how many of them the auction's list of bids, read after the run, agrees with:
	// the last bid listed up to each is the price and leader shown.
	Shown  int64 `json:"shown"`
	Listed int64 `json:"listed"`
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
	// With an auction behind a room (Room), the bidders' way through its line: Entered counts the
	// admissions they were given, Reentered the sessions that ended while a bidder bid (it joined the
	// line again), Unserved the bidders still in line when the auction ended, and Wait how long each
	// took from its join to its admission; RoomCalls the answers of the room's calls (join, the event
	// stream's first answer, release), since a slow room holds the bidders back as a slow bid does.
	Room      string             `json:"room,omitempty"`
	Entered   int64              `json:"entered,omitempty"`
	Reentered int64              `json:"reentered,omitempty"`
	Unserved  int64              `json:"unserved,omitempty"`
	Wait      Latency            `json:"wait_latency"`
	RoomCalls map[string]Latency `json:"room_calls,omitempty"`
	// Problems lists whatever the run found wrong: an event missed, repeated or out of order on a
	// feed, a watcher that never saw the end, an end that is not the highest accepted bid's, a winner
	// whose offer another bidder's beat, a buy-now sold twice.
	Problems []string `json:"problems"`
}

// auctionRun is one rehearsal of an auction.
type auctionRun struct {
	base, id string
	every    time.Duration
	sources  *sources
	start    time.Time
	first    auctionView   // the auction as the run found it
	line     *auctionLine  // the auction's room, when it has one
	ended    chan struct{} // closed once the run knows the auction has ended
	end      func()        // closes ended, once

	findings
	bids, accepted, tooLow, late, reconnects, outBid atomic.Int64
	buyNowTries                                      atomic.Int64
	highest                                          atomic.Int64
	mu                                               sync.Mutex
	latest                                           auctionView      // the newest the run was told: leader, price, least next bid
	offers                                           map[string]int64 // bidder -> the highest amount or maximum accepted of it
	unsure                                           map[string]bool  // bidders of a bid whose answer was lost
	buyers                                           []string         // bidders the lot was sold to by buy-now
	bidTimes                                         []time.Duration
	answered                                         map[int64]listedBid // event -> the price and leader an accepted bid's answer showed
	sentAt                                           map[int64]time.Time // an accepted bid's last event -> when its request left
}

// contender is one of a rehearsal's bidders.
type contender struct {
	c         *http.Client
	token, id string
	admission string    // in front of an auction with a room, the bidder's admission
	until     time.Time // and when it ends
	proxy     bool      // bids with a secret maximum rather than exact amounts
	budget    int64     // the most it will pay; 0 is no limit
	buyNow    bool      // tries to buy the lot as it opens
	rng       *rand.Rand
}

// timedWatchers is how many watchers note when each event reached them, for the report's latency from
// an accepted bid's request to its event on the feeds: enough for its quantiles at any crowd's size.
const timedWatchers = 100

// endGrace is how long watchers may take to see on their feeds an end the run learnt of otherwise.
const endGrace = 10 * time.Second

// arrival is when an event reached a watcher.
type arrival struct {
	seq int64
	at  time.Time
}

// auctionView is what the run reads of an auction's answers.
type auctionView struct {
	Status     string    `json:"status"`
	Price      int64     `json:"price"`
	MinNext    int64     `json:"min_next_bid"`
	Leader     string    `json:"leader"`
	Seq        int64     `json:"seq"`
	Winner     string    `json:"winner"`
	FinalPrice int64     `json:"final_price"`
	BidCount   int64     `json:"bid_count"`
	ReserveMet bool      `json:"reserve_met"`
	BuyNow     int64     `json:"buy_now_price"`
	StartsAt   time.Time `json:"starts_at"`
	Room       string    `json:"room"`
}

// over reports whether the view is of an auction that has ended.
func (v auctionView) over() bool { return v.Status == "closed" || v.Status == "sold" }

// rehearseAuction runs `rushgate loadtest auction ...`.
func rehearseAuction(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("auction", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8080", "the rushgate to rehearse against")
	id := fs.String("auction", "", "the auction to bid on, open or about to open (required)")
	bidders := fs.Int("bidders", 50, "how many bidders bid, each its own visitor (at most 10,000)")
	watchers := fs.Int("watchers", 100, "how many watchers hold the live feed, as the page does (at most 100,000)")
	every := fs.Duration("bid-every", time.Second, "how often each bidder bids, on average")
	proxy := fs.Float64("proxy", 0.5, "the share of bidders who bid with a secret maximum rather than exact amounts (0 to 1)")
	top := fs.Int64("top", 0, "the most any bidder pays, in minor units: each stops at an amount drawn up to it (0: bid until the end)")
	buyNow := fs.Int("buy-now", 0, "how many of the bidders try to buy the lot as it opens, all at once")
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
	case !(*proxy >= 0 && *proxy <= 1):
		return errors.New("--proxy must be 0 to 1")
	case *top < 0:
		return errors.New("--top must be 0 or more")
	case *buyNow < 0 || *buyNow > *bidders:
		return errors.New("--buy-now must be 0 to --bidders")
	}
	base, src, err := runFlags(*target, *duration, *nSources)
	if err != nil {
		return err
	}
	a := &auctionRun{base: strings.TrimSuffix(base.String(), "/"), id: url.PathEscape(*id), every: *every,
		sources: src, ended: make(chan struct{}), offers: map[string]int64{}, unsure: map[string]bool{},
		sentAt: map[int64]time.Time{}, answered: map[int64]listedBid{}}
	defer a.sources.close()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	lineCtx, stopLine := context.WithCancel(ctx)
	defer stopLine()
	a.end = sync.OnceFunc(func() { close(a.ended); stopLine() })
	if a.first, err = a.view(ctx); err != nil {
		return err
	}
	a.latest = a.first
	switch {
	case a.first.over():
		return fmt.Errorf("auction %s has ended (%s): rehearse one that is open or about to open", *id, a.first.Status)
	case *top > 0 && *top < a.first.MinNext:
		return fmt.Errorf("--top %d is below the least bid the auction takes, %d", *top, a.first.MinNext)
	case *buyNow > 0 && a.first.BuyNow == 0:
		return fmt.Errorf("--buy-now: auction %s offers no buy-now now", *id)
	}
	tokens, ids, err := mintVisitors(ctx, a.base, *adminKey, *bidders, min(*bidders, 32))
	if err != nil {
		return err
	}
	if a.first.Room != "" {
		a.line = newAuctionLine(lineCtx, a.base, url.PathEscape(a.first.Room))
	}
	a.start = time.Now()
	stopProgress := a.progress(out)
	var watching, bidding, helpers sync.WaitGroup
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	helpers.Go(func() { a.poll(wctx) })
	helpers.Go(func() { // watchers get endGrace after the end to see it on their feeds
		select {
		case <-a.ended:
			sleepUntil(wctx, time.Now().Add(endGrace))
			stopWatching()
		case <-wctx.Done():
		}
	})
	seen := make([]int64, *watchers)
	arrivals := make([][]arrival, min(*watchers, timedWatchers))
	for w := range *watchers {
		c := a.sources.client(w)
		watching.Go(func() {
			var times *[]arrival
			if w < len(arrivals) {
				times = &arrivals[w]
			}
			seen[w] = a.watch(wctx, c, a.first.Seq, times)
		})
	}
	proxies := int(math.Round(*proxy * float64(len(tokens))))
	opens := a.first.StartsAt // or at once, when it has started
	for b, tok := range tokens {
		rng := rand.New(rand.NewPCG(uint64(b), uint64(a.start.UnixNano())))
		k := &contender{c: a.sources.client(*watchers + b), token: tok, id: ids[b], proxy: b < proxies,
			buyNow: b >= len(tokens)-*buyNow, rng: rng}
		if *top > 0 {
			k.budget = a.first.MinNext + rng.Int64N(*top-a.first.MinNext+1)
		}
		bidding.Go(func() {
			defer a.line.leave(k)
			if k.buyNow && (a.line == nil || a.line.enter(k)) && sleepUntil(ctx, opens) {
				a.buy(ctx, k)
			}
			a.bid(ctx, k)
		})
	}
	bidding.Wait()
	watching.Wait()
	stopWatching()
	helpers.Wait()
	stopProgress()
	ectx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second) // the end is read after the run's time too
	defer stop()
	rep := a.report(ectx, *id, len(tokens), seen, arrivals)
	rep.Proxies, rep.Top = proxies, *top
	writeAuctionText(out, rep)
	if err := saveJSON(*reportJSON, rep); err != nil {
		return err
	}
	return problemsFound(rep.Problems)
}

// view reads the auction.
func (a *auctionRun) view(ctx context.Context) (auctionView, error) {
	var v auctionView
	err := getJSON(ctx, a.sources.client(0), a.base+"/v1/auctions/"+a.id, "", &v)
	return v, err
}

// pause waits d, or less when the run ends or learns that the auction has; it reports whether the
// bidder goes on.
func (a *auctionRun) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-a.ended:
		return false
	case <-t.C:
		return true
	}
}

// note keeps what an answer or a look told of the auction: the newest leader, and the price and least
// next bid, which only ever rise. An answer after the end carries no least next bid.
func (a *auctionRun) note(v auctionView) {
	a.mu.Lock()
	if v.Seq >= a.latest.Seq {
		a.latest.Seq, a.latest.Leader = v.Seq, v.Leader
	}
	a.latest.Price, a.latest.MinNext = max(a.latest.Price, v.Price), max(a.latest.MinNext, v.MinNext)
	a.mu.Unlock()
	if v.over() {
		a.end()
	}
}

// bid is one bidder: at random moments around a.every apart, unless it leads, it bids the least it was
// last told plus up to two increments, or as a proxy bidder a maximum of that least plus one to ten
// increments, raised again when it is outbid (as bidders do, rather than name their limit at once),
// each offer at most its budget, until the price passes that, the auction ends or the run does. Behind
// a room it first waits in the room's line, and again whenever its session ends.
func (a *auctionRun) bid(ctx context.Context, k *contender) {
	for {
		pause := time.Duration(k.rng.ExpFloat64() * float64(a.every))
		if !a.pause(ctx, min(pause, 5*a.every)) {
			return
		}
		a.mu.Lock()
		leader, price, next := a.latest.Leader, a.latest.Price, a.latest.MinNext
		a.mu.Unlock()
		if leader == k.id {
			continue // nobody bids against themself
		}
		if k.budget > 0 && next > k.budget { // behind a room, before it takes a slot to bid
			a.outBid.Add(1)
			return
		}
		if a.line != nil && k.admission == "" {
			if !a.line.enter(k) {
				return
			}
			continue // the auction moved on while it waited in line: it looks again
		}
		step := int64(1)
		if leader != "" {
			step = max(1, next-price)
		}
		field, offer := "amount", next+k.rng.Int64N(2*step+1)
		if k.proxy {
			field, offer = "max_amount", next+k.rng.Int64N(10)*step+step
		}
		if k.budget > 0 {
			offer = min(offer, k.budget)
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", a.base+"/v1/auctions/"+a.id+"/bids",
			strings.NewReader(`{"`+field+`": `+strconv.FormatInt(offer, 10)+`}`))
		req.Header.Set("Authorization", "Bearer "+k.token)
		k.admit(req)
		sent := time.Now()
		a.bids.Add(1)
		res, err := k.c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				a.fail("network")
			}
			a.mu.Lock()
			a.unsure[k.id] = true // it may have been taken
			a.mu.Unlock()
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
			seq, shown := answer.Auction.Seq, listedBid{Seq: answer.Auction.Seq, Bidder: answer.Auction.Leader, Price: price}
			if _, ok := a.sentAt[seq]; !ok { // a leader raising its maximum makes no event: the answer shows the last
				a.sentAt[seq] = sent
			}
			if before, ok := a.answered[seq]; ok && before != shown {
				a.problem("two answers showed event %d, as %d to %s and as %d to %s", seq, before.Price, before.Bidder, price, shown.Bidder)
			}
			a.answered[seq] = shown
			a.offers[k.id] = max(a.offers[k.id], offer)
			a.mu.Unlock()
			a.note(answer.Auction)
		case answer.Error.Code == "bid_too_low":
			a.tooLow.Add(1)
			a.observe(took)
			a.note(auctionView{MinNext: answer.Error.MinNext})
		case answer.Error.Code == "auction_not_started":
			a.observe(took)
		case answer.Error.Code == "auction_closed":
			a.late.Add(1)
			a.observe(took)
			a.end()
			return
		case answer.Error.Code == "not_admitted" && a.line != nil:
			a.observe(took)
			a.line.ended(k)
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

// buy tries to buy the lot now, once the auction has opened.
func (a *auctionRun) buy(ctx context.Context, k *contender) {
	a.buyNowTries.Add(1)
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "POST", a.base+"/v1/auctions/"+a.id+"/buy-now", nil)
		req.Header.Set("Authorization", "Bearer "+k.token)
		k.admit(req)
		res, err := k.c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				a.fail("network")
			}
			a.mu.Lock()
			a.unsure[k.id] = true
			a.mu.Unlock()
			return
		}
		var answer struct {
			auctionView
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&answer)
		res.Body.Close()
		switch {
		case err != nil:
			a.fail("bad_answer")
		case res.StatusCode == http.StatusOK:
			a.mu.Lock()
			a.buyers = append(a.buyers, k.id)
			a.mu.Unlock()
			a.note(answer.auctionView)
		case answer.Error.Code == "auction_not_started": // this machine's clock is ahead of the server's
			if a.pause(ctx, 10*time.Millisecond) {
				continue
			}
		case answer.Error.Code == "buy_now_unavailable" || answer.Error.Code == "auction_closed":
		default:
			a.fail("buy_now_" + answer.Error.Code)
		}
		return
	}
}

// poll reads the auction every second until it has ended, so that bidders who wait for nothing (all
// out of their budgets, or leading) learn of its end without a watcher.
func (a *auctionRun) poll(ctx context.Context) {
	for a.pause(ctx, time.Second) {
		if v, err := a.view(ctx); err == nil {
			a.note(v)
		}
	}
}

func (a *auctionRun) observe(took time.Duration) {
	a.mu.Lock()
	a.bidTimes = append(a.bidTimes, took)
	a.mu.Unlock()
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
		ended := false
		readEvents(res.Body, func(e event) bool {
			if e.name == "snapshot" {
				return true
			}
			seq, err := strconv.ParseInt(e.id, 10, 64)
			if err != nil || seq != last+1 {
				a.problem("a watcher got event %q after %d", e.id, last)
			} else if times != nil {
				*times = append(*times, arrival{seq, time.Now()})
			}
			last = max(last, seq)
			n++
			ended = e.name == "closed" || e.name == "sold"
			return !ended
		})
		res.Body.Close()
		if ended {
			a.end()
			return n
		}
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
	end, err := a.view(ctx)
	if err != nil {
		a.problem("reading the auction after the run: %v", err)
	}
	bids, err := a.listBids(ctx)
	if err != nil {
		a.problem("reading the auction's bids after the run: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	listed := a.holdBids(bids, end, err == nil)
	var delays []time.Duration
	for _, times := range arrivals {
		for _, t := range times {
			if sent, ok := a.sentAt[t.seq]; ok {
				delays = append(delays, t.at.Sub(sent))
			}
		}
	}
	errs, problems := a.found()
	rep := AuctionReport{Shown: int64(len(a.answered)), Listed: listed, Auction: id, Bidders: bidders, Watchers: len(seen), Seconds: time.Since(a.start).Seconds(),
		Bids: a.bids.Load(), Accepted: a.accepted.Load(), TooLow: a.tooLow.Load(), Late: a.late.Load(), Errors: errs,
		BidCalls: latency(a.bidTimes), Seen: latency(delays), Status: end.Status, OutBid: a.outBid.Load(), Price: end.Price, FinalPrice: end.FinalPrice,
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
	rep.BuyNowTries, rep.BuyNowSold = a.buyNowTries.Load(), int64(len(a.buyers))
	rep.Problems = append(problems, a.judge(end)...)
	if a.line != nil {
		rep.Room = a.first.Room
		a.line.sum(&rep)
	}
	return rep
}

// judge holds the auction's end against what the run's answers showed, under a.mu. An answer lost in
// transport leaves its bid's fate unknown, so the checks it could upset are not made for its bidder.
func (a *auctionRun) judge(end auctionView) (problems []string) {
	say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(a.buyers) > 1 {
		say("the lot was bought now %d times", len(a.buyers))
	}
	switch {
	case !end.over():
		say("the auction had not ended when the run did (%s)", end.Status)
	case end.Status == "sold":
		switch {
		case len(a.buyers) == 0 && len(a.unsure) == 0:
			say("the auction was sold, but no buy-now of the run was answered as taken")
		case len(a.buyers) > 0 && end.Winner != a.buyers[0]:
			say("the lot was sold to %s, while it was bought now by %s", end.Winner, a.buyers[0])
		}
		if end.FinalPrice != a.first.BuyNow {
			say("the lot was sold at %d, while its buy-now price was %d", end.FinalPrice, a.first.BuyNow)
		}
	case len(a.buyers) > 0:
		say("the lot was bought now, but the auction ended %s", end.Status)
	case end.Winner == "":
		if a.accepted.Load() > 0 && end.ReserveMet {
			say("the auction closed without a winner, though it accepted %d bids and its reserve was met", a.accepted.Load())
		}
	case len(a.unsure) > 0:
		// a bid whose answer was lost may have set the price or the lead
	case end.FinalPrice != a.highest.Load():
		say("the auction ended at %d, while an accepted bid's answer showed %d", end.FinalPrice, a.highest.Load())
	case a.first.BidCount == 0: // the run's bidders made every bid: the winner's offer must be the highest
		won := a.offers[end.Winner]
		if end.FinalPrice > won {
			say("the winner %s pays %d, above the most it offered, %d", end.Winner, end.FinalPrice, won)
		}
		for _, who := range slices.Sorted(maps.Keys(a.offers)) {
			if a.offers[who] > won {
				say("the winner %s offered at most %d, while %s offered %d", end.Winner, won, who, a.offers[who])
				break
			}
		}
	}
	return problems
}

// listedBid is an accepted bid's event as the auction lists it: its number, the leader it left and the
// price.
type listedBid struct {
	Seq    int64  `json:"seq"`
	Bidder string `json:"bidder"`
	Price  int64  `json:"price"`
}

// listBids reads the auction's whole list of bids.
func (a *auctionRun) listBids(ctx context.Context) ([]listedBid, error) {
	var all []listedBid
	for after := int64(0); ; {
		var page struct {
			Bids []listedBid `json:"bids"`
			Next int64       `json:"next_after"`
		}
		u := fmt.Sprintf("%s/v1/auctions/%s/bids?after=%d&limit=1000", a.base, a.id, after)
		if err := getJSON(ctx, a.sources.client(0), u, "", &page); err != nil {
			return nil, err
		}
		if len(page.Bids) == 0 || page.Next <= after {
			return all, nil
		}
		all, after = append(all, page.Bids...), page.Next
	}
}

// holdBids holds the auction's list of bids (in order) against the accepted bids' answers and its end,
// under a.mu, noting each difference as a problem; it returns how many answers the list shows as they
// were. Each accepted bid's answer showed the auction after its step: the price and leader of the
// step's last bid (the bid's own, or the proxy's that answered it), and the step's last event, which a
// soft close's extension may follow. The last bid listed at or before that event must be that price
// and leader, whatever happened to the server after the answer.
func (a *auctionRun) holdBids(bids []listedBid, end auctionView, read bool) (listed int64) {
	if !read {
		return 0
	}
	for _, seq := range slices.Sorted(maps.Keys(a.answered)) {
		want := a.answered[seq]
		i := sort.Search(len(bids), func(i int) bool { return bids[i].Seq > seq }) - 1 // the last at or before seq
		switch {
		case i < 0:
			a.problem("an accepted bid's answer showed event %d, %d to %s, and the auction lists no bid up to it", seq, want.Price, want.Bidder)
		case bids[i].Price != want.Price || bids[i].Bidder != want.Bidder:
			a.problem("an accepted bid's answer showed event %d, %d to %s, while the auction's last bid up to it is %d to %s", seq,
				want.Price, want.Bidder, bids[i].Price, bids[i].Bidder)
		default:
			listed++
		}
	}
	if int64(len(bids)) != end.BidCount {
		a.problem("the auction counts %d bids and lists %d", end.BidCount, len(bids))
	}
	if end.Status == "closed" && end.Winner != "" && len(bids) > 0 {
		if last := bids[len(bids)-1]; last.Bidder != end.Winner || last.Price != end.FinalPrice {
			a.problem("the last bid listed is %d to %s, while the auction ended at %d to %s", last.Price, last.Bidder, end.FinalPrice, end.Winner)
		}
	}
	return listed
}

// latency sums a set of durations, which it leaves in their order.
func latency(ds []time.Duration) Latency {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return Latency{Count: len(ds), P50: ms(quantile(ds, 0.50)), P95: ms(quantile(ds, 0.95)), P99: ms(quantile(ds, 0.99))}
}

// roomCallNames says what each of the room's calls in an auction's report is, for a person.
var roomCallNames = map[string]string{
	"join": "joins", "events": "event streams opened", "status": "status reads (a stream refused)", "release": "releases",
}

// writeAuctionText prints the report for a person.
func writeAuctionText(out io.Writer, rep AuctionReport) {
	fmt.Fprintf(out, "\nauction %s: %d bidders, %d watchers, %.1fs\n", rep.Auction, rep.Bidders, rep.Watchers, rep.Seconds)
	fmt.Fprintf(out, "bidders: %d with a secret maximum, %d with exact amounts", rep.Proxies, rep.Bidders-rep.Proxies)
	if rep.Top > 0 {
		fmt.Fprintf(out, "; each paying at most up to %d, %d stopped as the price passed theirs", rep.Top, rep.OutBid)
	}
	fmt.Fprintln(out)
	if rep.Room != "" {
		fmt.Fprintf(out, "room %s: bidders let in %d times (%d again after their sessions ended), %d still in line at the end; "+
			"from join to admission p50 %.1fs, p95 %.1fs, p99 %.1fs\n", rep.Room, rep.Entered, rep.Reentered, rep.Unserved,
			rep.Wait.P50/1000, rep.Wait.P95/1000, rep.Wait.P99/1000)
		for _, name := range slices.Sorted(maps.Keys(rep.RoomCalls)) {
			c := rep.RoomCalls[name]
			fmt.Fprintf(out, "room %s: %d answered, p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n", roomCallNames[name], c.Count, c.P50, c.P95, c.P99)
		}
	}
	if rep.BuyNowTries > 0 {
		fmt.Fprintf(out, "buy-now: %d tried as it opened, %d bought\n", rep.BuyNowTries, rep.BuyNowSold)
	}
	fmt.Fprintf(out, "bids %d: accepted %d, too low %d, after the close %d\n", rep.Bids, rep.Accepted, rep.TooLow, rep.Late)
	switch rep.Status {
	case "sold":
		fmt.Fprintf(out, "the auction: sold at %d to %q, bought now after %d bids\n", rep.FinalPrice, rep.Winner, rep.BidCount)
	case "closed":
		if rep.Winner == "" {
			fmt.Fprintf(out, "the auction: closed without a sale after %d bids (none, or none that met its reserve); "+
				"the highest price an answer showed: %d\n", rep.BidCount, rep.Highest)
			break
		}
		fmt.Fprintf(out, "the auction: closed at %d to %q after %d bids; the highest price an answer showed: %d\n", rep.FinalPrice,
			rep.Winner, rep.BidCount, rep.Highest)
	default:
		fmt.Fprintf(out, "the auction: still %s, at %d after %d bids; the highest price an answer showed: %d\n", rep.Status, rep.Price,
			rep.BidCount, rep.Highest)
	}
	if rep.Watchers > 0 {
		fmt.Fprintf(out, "live feed: %d of %d watchers saw the end, each %d events or more, in order; feeds opened again %d times\n",
			rep.WatchersDone, rep.Watchers, rep.Events, rep.Reconnects)
	}
	if rep.Accepted > 0 {
		fmt.Fprintf(out, "read back: the auction's bids agree with %d of the %d events the accepted bids' answers showed\n", rep.Listed, rep.Shown)
	}
	if rep.Seen.Count > 0 {
		fmt.Fprintf(out, "an accepted bid on the watchers' feeds, from its request: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n",
			rep.Seen.P50, rep.Seen.P95, rep.Seen.P99)
	}
	if rep.BidCalls.Count > 0 {
		fmt.Fprintf(out, "bid answers: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms\n", rep.BidCalls.P50, rep.BidCalls.P95, rep.BidCalls.P99)
	}
	writeFindings(out, rep.Problems, rep.Errors)
}
