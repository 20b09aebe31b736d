package loadtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
		got := a.judge(end)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s: %q; want no problem", tc.name, got)
		case tc.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, tc.want) }):
			t.Errorf("%s: %q; want a problem %q...", tc.name, got, tc.want)
		}
	}
}
