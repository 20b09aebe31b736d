package loadtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: a rehearsal's visitors and its
// progress display all end with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--room", "r", "--visitors", "0"},
		{"--room", "r", "--arrival-rate", "0"},
		{"--room", "r", "--duration", "0s"},
		{"--room", "r", "--sse", "--poll"},
		{"--room", "r", "--target", "ftp://x"},
		{"--room", "r", "--think", "-1s"},
		{"--room", "r", "--sources", "0"},
	} {
		if err := Run(context.Background(), append([]string{"--duration", "1s"}, args...), io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	for _, args := range [][]string{
		{},
		{"--auction", "a"},
		{"--admin-key", "k"},
		{"--auction", "a", "--admin-key", "k", "--bidders", "0"},
		{"--auction", "a", "--admin-key", "k", "--watchers", "-1"},
		{"--auction", "a", "--admin-key", "k", "--bid-every", "0s"},
		{"--auction", "a", "--admin-key", "k", "--sources", "255"},
		{"--auction", "a", "--admin-key", "k", "--target", "ftp://x"},
		{"--auction", "a", "--admin-key", "k", "--proxy", "1.5"},
		{"--auction", "a", "--admin-key", "k", "--proxy", "NaN"},
		{"--auction", "a", "--admin-key", "k", "--top", "-1"},
		{"--auction", "a", "--admin-key", "k", "--bidders", "5", "--buy-now", "6"},
	} {
		if err := Run(context.Background(), append([]string{"auction", "--duration", "1s"}, args...), io.Discard); err == nil {
			t.Errorf("auction %v: accepted", args)
		}
	}
	// A drop's flags are refused before anything is sent: each error names its flag.
	for _, args := range [][]string{
		{"--admin-key", "k"},
		{"--drop", "d"},
		{"--drop", "d", "--admin-key", "k", "--visitors", "0"},
		{"--drop", "d", "--admin-key", "k", "--arrival-rate", "-1"},
		{"--drop", "d", "--admin-key", "k", "--claims-each", "0"},
		{"--drop", "d", "--admin-key", "k", "--repeat", "2"},
		{"--drop", "d", "--admin-key", "k", "--watchers", "-1"},
		{"--drop", "d", "--admin-key", "k", "--sources", "0"},
	} {
		flag := args[len(args)-2]
		if err := Run(context.Background(), append([]string{"drop", "--duration", "1s"}, args...), io.Discard); err == nil ||
			!strings.Contains(err.Error(), flag) {
			t.Errorf("drop %v: %v; want an error naming %s", args, err, flag)
		}
	}
	if err := Run(context.Background(), []string{"nonsense"}, io.Discard); err == nil {
		t.Error("an unknown mode was accepted")
	}
	if err := Run(context.Background(), []string{"claim", "--target", "http://127.0.0.1:1", "--visitors", "0"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "-visitors") {
		t.Errorf("a claim run without visitors: %v", err)
	}
}

// TestRehearsalCountsRefusals runs against a server that refuses every join: each refusal is counted
// under its code, nobody is admitted, and the run ends by itself.
func TestRehearsalCountsRefusals(t *testing.T) {
	var joins atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/join") {
			joins.Add(1)
			w.WriteHeader(http.StatusGone)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "room_closed"}})
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	var out strings.Builder
	start := time.Now()
	err := Run(context.Background(), []string{"--target", srv.URL, "--room", "r", "--visitors", "20", "--arrival-rate", "200",
		"--duration", "10s", "--poll"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second || joins.Load() != 20 {
		t.Fatalf("%d joins in %v", joins.Load(), time.Since(start))
	}
	if !strings.Contains(out.String(), "joins 0, admissions 0") || !strings.Contains(out.String(), "room_closed 20") {
		t.Fatalf("report:\n%s", out.String())
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if quantile(ds, 0.5) != 6 || quantile(ds, 0.99) != 10 || quantile(nil, 0.5) != 0 {
		t.Fatal(quantile(ds, 0.5), quantile(ds, 0.99))
	}
}

func TestMinNextBid(t *testing.T) {
	for _, answer := range []string{
		`{"accepted":true,"leading":true,"auction":{"id":"h","price":1,"bid_count":1,"min_next_bid":2,"seq":1}}`,
		`{"error":{"code":"bid_too_low","message":"auction: bid too low, minimum next bid 6","min_next_bid":6}}`,
		`{"error":{"code":"bid_too_low","min_next_bid":9007199254740993}}`,
		`{"error":{"code":"auction_closed","message":"the auction has ended"}}`,
		`{"auction":{"min_next_bid":"x"}}`,
	} {
		var body struct {
			Auction struct {
				Min int64 `json:"min_next_bid"`
			} `json:"auction"`
			Error struct {
				Min int64 `json:"min_next_bid"`
			} `json:"error"`
		}
		jsonErr := json.Unmarshal([]byte(answer), &body)
		want, wantOK := max(body.Auction.Min, body.Error.Min), jsonErr == nil && max(body.Auction.Min, body.Error.Min) > 0
		got, ok := minNextBid([]byte(answer))
		if got != want || ok != wantOK {
			t.Errorf("%s: minNextBid = %d, %v; encoding/json reads %d, %v", answer, got, ok, want, wantOK)
		}
	}
}

// TestPageOrigin: the page origin renders its listing of n tickets for each request, escaped as
// html/template escapes.
func TestPageOrigin(t *testing.T) {
	rec := httptest.NewRecorder()
	pageHandler(20).ServeHTTP(rec, httptest.NewRequest("GET", "/shop", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if n := strings.Count(body, "<li>"); n != 20 || !strings.Contains(body, "&amp; &lt;standing&gt;") || strings.Contains(body, "<standing>") {
		t.Fatalf("%d items; escaped %v:\n%s", n, strings.Contains(body, "&lt;standing&gt;"), body)
	}
}

// TestNullRoundsGetTheTargetsRequests: in a comparison the null handler receives the very requests the
// target does (method, path, headers, body), so that the ratio charges the target only for its work.
func TestNullRoundsGetTheTargetsRequests(t *testing.T) {
	type seen struct{ method, path, auth, body string }
	var mu sync.Mutex
	var target, null []seen
	note := func(to *[]seen, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		*to = append(*to, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(b)})
		mu.Unlock()
	}
	tsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/visitors":
			_, _ = io.WriteString(w, `{"visitor_token":"tok"}`)
		case strings.HasSuffix(r.URL.Path, "/bids"):
			note(&target, r)
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"error":{"code":"bid_too_low","min_next_bid":5}}`)
		}
	}))
	defer tsrv.Close()
	nsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { note(&null, r) }))
	defer nsrv.Close()
	err := Run(context.Background(), []string{"bid", "--target", tsrv.URL, "--null", nsrv.URL + "/", "--admin-key", "k",
		"-c", "2", "-d", "100ms", "-rounds", "1", "-margin", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(target) == 0 || len(null) == 0 {
		t.Fatalf("%d target and %d null requests", len(target), len(null))
	}
	want := seen{"POST", "/v1/auctions/benchhot/bids", "Bearer tok", `{"max_amount": 1}`}
	if target[0] != want || null[0] != want {
		t.Fatalf("first target request %+v, first null request %+v; want both %+v", target[0], null[0], want)
	}
}

// TestJudgeAnAuctionsEnd holds ends against what a run's answers showed: each wrong end is named, and
// a right one, or one a lost answer leaves unknown, is not.
func TestJudgeAnAuctionsEnd(t *testing.T) {
	fresh := func() *auctionRun {
		a := &auctionRun{offers: map[string]int64{"s_a": 3000, "s_b": 2500, "s_c": 1200}, unsure: map[string]bool{}}
		a.first = auctionView{Status: "open", BuyNow: 9000}
		a.accepted.Store(5)
		a.highest.Store(2600)
		return a
	}
	closed := auctionView{Status: "closed", Winner: "s_a", FinalPrice: 2600, ReserveMet: true}
	for _, tc := range []struct {
		name   string
		change func(a *auctionRun, end *auctionView)
		want   string // the beginning of one of the problems; "" is none
	}{
		{"right", func(*auctionRun, *auctionView) {}, ""},
		{"not ended", func(_ *auctionRun, e *auctionView) { e.Status = "open" }, "the auction had not ended"},
		{"price not the highest shown", func(_ *auctionRun, e *auctionView) { e.FinalPrice = 2700 }, "the auction ended at 2700"},
		{"a lower offer wins", func(_ *auctionRun, e *auctionView) { e.Winner = "s_b" }, "the winner s_b offered at most 2500"},
		{"charged above the maximum", func(a *auctionRun, _ *auctionView) { a.offers["s_a"] = 2550 }, "the winner s_a pays 2600"},
		{"a lost answer", func(a *auctionRun, e *auctionView) { a.unsure["s_c"] = true; e.FinalPrice = 2700 }, ""},
		{"bids before the run", func(a *auctionRun, e *auctionView) { a.first.BidCount = 3; e.Winner = "s_x" }, ""},
		{"no winner, reserve met", func(_ *auctionRun, e *auctionView) { e.Winner = "" }, "the auction closed without a winner"},
		{"no winner, reserve not met", func(_ *auctionRun, e *auctionView) { e.Winner, e.ReserveMet = "", false }, ""},
		{"bought now", func(a *auctionRun, e *auctionView) {
			a.buyers = []string{"s_c"}
			*e = auctionView{Status: "sold", Winner: "s_c", FinalPrice: 9000}
		}, ""},
		{"bought twice", func(a *auctionRun, e *auctionView) {
			a.buyers = []string{"s_c", "s_b"}
			*e = auctionView{Status: "sold", Winner: "s_c", FinalPrice: 9000}
		}, "the lot was bought now 2 times"},
		{"sold to another", func(a *auctionRun, e *auctionView) {
			a.buyers = []string{"s_c"}
			*e = auctionView{Status: "sold", Winner: "s_b", FinalPrice: 9000}
		}, "the lot was sold to s_b"},
		{"sold at another price", func(a *auctionRun, e *auctionView) {
			a.buyers = []string{"s_c"}
			*e = auctionView{Status: "sold", Winner: "s_c", FinalPrice: 8000}
		}, "the lot was sold at 8000"},
		{"sold unbought", func(_ *auctionRun, e *auctionView) { *e = auctionView{Status: "sold", Winner: "s_c", FinalPrice: 9000} },
			"the auction was sold, but no buy-now"},
		{"bought, then closed", func(a *auctionRun, _ *auctionView) { a.buyers = []string{"s_c"} }, "the lot was bought now, but"},
	} {
		a, end := fresh(), closed
		tc.change(a, &end)
		wantProblem(t, tc.name, a.judge(end), tc.want)
	}
}

// TestJudgeADropsEnd holds drops' ends against what a run's answers showed: each wrong end is named,
// and a right one, or one a lost answer leaves unknown, is not.
func TestJudgeADropsEnd(t *testing.T) {
	fresh := func() *dropRun {
		d := &dropRun{ledger: &ledger{first: dropView{Status: "open", Stock: 10, Remaining: 10, PerVisitor: 2},
			claims: map[string]claimSeen{}, bySeq: map[int64]string{}, mine: map[string]int{}}, each: 2, complete: true}
		for seq := int64(1); seq <= 10; seq++ {
			c := claimSeen{ID: "x." + strconv.FormatInt(seq, 10), Seq: seq, Visitor: "v" + strconv.FormatInt((seq+1)/2, 10)}
			d.claims[c.ID], d.bySeq[seq] = c, c.ID
			d.mine[c.Visitor]++
		}
		d.soldOut.Store(3)
		return d
	}
	soldOut := dropView{Status: "sold_out", Stock: 10, Remaining: 0, Claimed: 10}
	for _, tc := range []struct {
		name     string
		visitors int
		change   func(d *dropRun, end *dropView)
		want     string // the beginning of one of the problems; "" is none
	}{
		{"right", 5, func(*dropRun, *dropView) {}, ""},
		{"past the stock", 5, func(d *dropRun, _ *dropView) { d.first.Remaining = 8 }, "the run was given 10 claims, while 8 units remained"},
		{"a claim the run was not told of", 5, func(_ *dropRun, e *dropView) { e.Stock, e.Claimed = 11, 11 }, "the drop counts 11 claims made"},
		{"counts that do not add up", 5, func(_ *dropRun, e *dropView) { e.Remaining = 1 }, "the drop counts 1 remaining of 10"},
		{"over the limit", 5, func(d *dropRun, _ *dropView) { d.mine["v1"] = 3 }, "visitor v1 was given 3 claims, over its limit of 2"},
		{"a number past the stock", 5, func(d *dropRun, _ *dropView) { d.bySeq[11] = "x.11" }, "claim x.11 has the number 11"},
		{"sold out too soon", 5, func(_ *dropRun, e *dropView) { *e = dropView{Status: "open", Stock: 12, Remaining: 2, Claimed: 10} },
			"visitors were told the drop was sold out 3 times, while 2 units remain"},
		{"units left unclaimed", 6, func(d *dropRun, e *dropView) {
			d.first.Stock, d.first.Remaining = 20, 20
			d.soldOut.Store(0)
			*e = dropView{Status: "open", Stock: 20, Remaining: 10, Claimed: 10}
		}, "the run asked for 12 claims and was given 10"},
		{"an answer lost", 6, func(d *dropRun, e *dropView) {
			d.first.Stock, d.first.Remaining = 20, 20
			d.soldOut.Store(0)
			d.unsure.Store(1)
			*e = dropView{Status: "open", Stock: 20, Remaining: 9, Claimed: 11}
		}, ""},
		{"the run's time ran out", 6, func(d *dropRun, e *dropView) {
			d.first.Stock, d.first.Remaining = 20, 20
			d.soldOut.Store(0)
			d.complete = false
			*e = dropView{Status: "open", Stock: 20, Remaining: 10, Claimed: 10}
		}, ""},
	} {
		d, end := fresh(), soldOut
		tc.change(d, &end)
		wantProblem(t, tc.name, d.judge(end, tc.visitors), tc.want)
	}
}

// TestReadBackFindsWhatDiffers reads back a drop whose listing and code lookups differ from the run's
// answers in every way they can: each difference is named, and the claim that agrees is counted.
func TestReadBackFindsWhatDiffers(t *testing.T) {
	answered := []claimSeen{{ID: "x.1", Seq: 1, Code: "A-1", Visitor: "v1"}, {ID: "x.2", Seq: 2, Code: "B-2", Visitor: "v2"},
		{ID: "x.3", Seq: 3, Code: "C-3", Visitor: "v3"}}
	listing := []claimSeen{answered[0], {ID: "x.2", Seq: 2, Code: "Z-2", Visitor: "v2"}, {ID: "x.4", Seq: 4, Code: "D-4", Visitor: "v4"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/drops/x/claims" && r.URL.Query().Get("after") == "0":
			_ = json.NewEncoder(w).Encode(map[string]any{"claims": listing, "next_after": 4})
		case r.URL.Path == "/v1/drops/x/claims":
			_ = json.NewEncoder(w).Encode(map[string]any{"claims": []claimSeen{}, "next_after": 4})
		case r.URL.Path == "/v1/drops/x/codes/C-3":
			_ = json.NewEncoder(w).Encode(claimSeen{ID: "x.3", Seq: 3, Code: "C-3", Visitor: "v9"})
		case strings.HasPrefix(r.URL.Path, "/v1/drops/x/codes/"):
			for _, c := range answered {
				if c.Code == strings.TrimPrefix(r.URL.Path, "/v1/drops/x/codes/") {
					_ = json.NewEncoder(w).Encode(c)
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src := newSources("127.0.0.1", 1)
	defer src.close()
	l := &ledger{base: srv.URL, id: "x", client: src.client(0), claims: map[string]claimSeen{}, bySeq: map[int64]string{}}
	for _, c := range answered {
		l.claims[c.ID], l.bySeq[c.Seq] = c, c.ID
	}
	listed, looked := l.readBack(context.Background(), dropView{Claimed: 3})
	_, problems := l.found()
	if listed != 1 || looked != 2 {
		t.Errorf("listed %d, looked up %d; want 1 and 2", listed, looked)
	}
	for _, want := range []string{"claim x.2 is listed as", "the drop lists claim x.4, which no answer of the run gave",
		"claim x.3, answered to the run, is not in the drop's listing", "code C-3 is found as"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem %q... in %q", want, problems)
		}
	}
	if len(problems) != 4 {
		t.Errorf("problems %q; want the four above", problems)
	}
}

// wantProblem fails the test unless got holds a problem that begins with want, or none when want is "".
func wantProblem(t *testing.T, name string, got []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(got) != 0:
		t.Errorf("%s: %q; want no problem", name, got)
	case want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }):
		t.Errorf("%s: %q; want a problem %q...", name, got, want)
	}
}

// TestAuctionTextSaysHowItEnded: a report says a sale, a close with a winner and one without in words
// of their own, rather than a winner "" at a price of 0.
func TestAuctionTextSaysHowItEnded(t *testing.T) {
	for _, tc := range []struct {
		rep  AuctionReport
		want string
	}{
		{AuctionReport{Status: "closed", Winner: "s_a", FinalPrice: 2600, BidCount: 9, Highest: 2600}, `closed at 2600 to "s_a" after 9 bids`},
		{AuctionReport{Status: "closed", BidCount: 9, Highest: 4300}, "closed without a sale after 9 bids"},
		{AuctionReport{Status: "sold", Winner: "s_b", FinalPrice: 9000}, `sold at 9000 to "s_b", bought now`},
		{AuctionReport{Status: "open", Price: 1200, BidCount: 2}, "still open, at 1200 after 2 bids"},
	} {
		var b strings.Builder
		writeAuctionText(&b, tc.rep)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant %q", tc.rep.Status, b.String(), tc.want)
		}
	}
}

// TestReadEvents reads a stream as an EventSource does: an event ends at a blank line, its data lines
// are joined, comments and the retry hint are no events, and a handler that says stop stops it.
func TestReadEvents(t *testing.T) {
	stream := "retry: 2000\n\n: keep-alive\n\nevent: snapshot\ndata: {\"a\":1}\n\nid: 7\nevent: bid\ndata:{\"b\":\ndata: 2}\n\n" +
		"data: plain\n\nid: 9\nevent: closed\ndata: {}\n\nid: 10\nevent: after\ndata: {}\n\n"
	var got []event
	readEvents(strings.NewReader(stream), func(e event) bool {
		got = append(got, e)
		return e.name != "closed"
	})
	want := []event{{"", "snapshot", `{"a":1}`}, {"7", "bid", "{\"b\":\n2}"}, {"", "", "plain"}, {"9", "closed", "{}"}}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q\nwant %q", got, want)
	}
}

// TestHoldBids holds an auction's list of bids against the events accepted bids' answers showed: an
// answer may show a soft close's extension after its bid, which the list holds no bid for, and agrees
// when the last bid up to it is its price and leader; every other difference is named.
func TestHoldBids(t *testing.T) {
	bids := []listedBid{{1, "s_a", 1000}, {2, "s_b", 1100}, {4, "s_a", 1300}, {6, "s_c", 1500}}
	end := auctionView{Status: "closed", Winner: "s_c", FinalPrice: 1500, BidCount: 4}
	for _, tc := range []struct {
		name     string
		answered []listedBid
		end      func(*auctionView)
		want     string // the beginning of one of the problems; "" is none
		listed   int64
	}{
		{"as shown", []listedBid{{1, "s_a", 1000}, {2, "s_b", 1100}, {5, "s_a", 1300}, {7, "s_c", 1500}}, nil, "", 4},
		{"a bid lost", []listedBid{{3, "s_c", 1200}, {7, "s_c", 1500}}, nil,
			"an accepted bid's answer showed event 3, 1200 to s_c, while the auction's last bid up to it is 1100 to s_b", 1},
		{"before any bid", []listedBid{{0, "s_a", 1000}}, nil, "an accepted bid's answer showed event 0", 0},
		{"counts apart", nil, func(e *auctionView) { e.BidCount = 5 }, "the auction counts 5 bids and lists 4", 0},
		{"another end", nil, func(e *auctionView) { e.Winner = "s_a" }, "the last bid listed is 1500 to s_c, while the auction ended at 1500 to s_a", 0},
	} {
		a := &auctionRun{answered: map[int64]listedBid{}}
		for _, b := range tc.answered {
			a.answered[b.Seq] = b
		}
		e := end
		if tc.end != nil {
			tc.end(&e)
		}
		listed := a.holdBids(bids, e, true)
		_, problems := a.found()
		wantProblem(t, tc.name, problems, tc.want)
		if listed != tc.listed {
			t.Errorf("%s: %d listed as shown, want %d", tc.name, listed, tc.listed)
		}
	}
}

// TestReportSaysWhichWayEstimatesMissed: the report's ETA errors are the misses either way, and it
// counts the visitors whose wait outlasted the estimate by more than the second its rounding allows.
func TestReportSaysWhichWayEstimatesMissed(t *testing.T) {
	r := &rehearsal{start: time.Now(), sources: &sources{}, etaMiss: []float64{-3, -0.5, 0.5, 1, 2, 4}}
	rep := r.report(0)
	if rep.ETASamples != 6 || rep.ETAMedianError != 2 || rep.ETAP90Error != 4 || rep.ETALonger != 2 {
		t.Fatalf("samples %d, median %.1f, p90 %.1f, longer %d; want 6, 2, 4 and 2", rep.ETASamples, rep.ETAMedianError,
			rep.ETAP90Error, rep.ETALonger)
	}
	var out strings.Builder
	writeText(&out, rep)
	if want := "median 2.0s, p90 4.0s; 2 waited longer than told"; !strings.Contains(out.String(), want) {
		t.Fatalf("the printed report has no %q:\n%s", want, out.String())
	}
}
