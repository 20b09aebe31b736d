package httpapi_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/drop"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/room"
)

// adminGet sends a GET with the admin key and returns the answer unread.
func (e *env) adminGet(path string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// export fetches an export with the admin key and returns its answer and, for a 200, its rows.
func (e *env) export(path string) (*http.Response, [][]string) {
	e.t.Helper()
	res := e.adminGet(path)
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return res, nil
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	if err != nil {
		e.t.Fatalf("%s: %v", path, err)
	}
	return res, rows
}

// TestExportClaims: an operator downloads every claim of a drop as CSV, past one page of the store, in
// the order and with the values the JSON listing has, and when and for which order each redeemed code
// was used; a cell that a spreadsheet would run as a formula is made inert; an unknown drop and a
// caller without the admin key get the API's JSON errors.
func TestExportClaims(t *testing.T) {
	e := setup(t)
	const n = 1100 // more than one page of the export
	e.want(e.do("PUT", "/v1/drops/gift", adminKey, fmt.Sprintf(`{"stock": %d, "opens_at": %q}`, n, e.clock.Now().Format("2006-01-02T15:04:05Z"))), 200, "")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range n / 8 {
				req, _ := http.NewRequest("POST", e.srv.URL+"/v1/drops/gift/claims", nil)
				res, err := e.srv.Client().Do(req)
				if err != nil || res.StatusCode != 201 {
					t.Errorf("claim: %v %v", res, err)
					return
				}
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	for range n % 8 {
		e.want(e.do("POST", "/v1/drops/gift/claims", "", ""), 201, "")
	}

	redeemed := map[int]string{2: "order-2", 1050: "=order(1050)"} // one on each page of the export
	for seq, order := range redeemed {
		c := e.do("GET", "/v1/drops/gift/claims?limit=1&after="+strconv.Itoa(seq-1), adminKey, "").body["claims"].([]any)[0].(map[string]any)
		e.want(e.do("POST", "/v1/drops/gift/codes/"+c["code"].(string)+"/redeem", adminKey, `{"order": "`+order+`"}`), 200, "")
	}

	res, rows := e.export("/v1/drops/gift/claims.csv")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		res.Header.Get("Content-Disposition") != `attachment; filename="drop-gift-claims.csv"` {
		t.Fatalf("export: %d %v", res.StatusCode, res.Header)
	}
	if len(rows) != n+1 || strings.Join(rows[0], ",") != "seq,claim_id,code,visitor,claimed_at,redeemed_at,order" {
		t.Fatalf("export has %d rows, header %v; want %d claims", len(rows), rows[0], n)
	}
	for i, row := range rows[1:] {
		want := map[int]string{2: "order-2", 1050: "'=order(1050)"}[i+1]
		if row[6] != want || (row[5] != "") != (want != "") {
			t.Fatalf("claim %d's redemption is exported as %q %q; want the order %q", i+1, row[5], row[6], want)
		}
	}
	var listed [][]string
	for after := int64(0); ; {
		r := e.do("GET", "/v1/drops/gift/claims?limit=1000&after="+strconv.FormatInt(after, 10), adminKey, "")
		claims, _ := r.body["claims"].([]any)
		if len(claims) == 0 {
			break
		}
		for _, c := range claims {
			m := c.(map[string]any)
			listed = append(listed, []string{strconv.Itoa(int(m["seq"].(float64))), m["claim_id"].(string), m["code"].(string),
				m["visitor"].(string), m["claimed_at"].(string)})
		}
		after = r.num("next_after")
	}
	for i, row := range rows[1:] {
		if strings.Join(row[:5], ",") != strings.Join(listed[i], ",") || row[0] != strconv.Itoa(i+1) {
			t.Fatalf("row %d is %v; the listing says %v", i+1, row, listed[i])
		}
	}

	e.want(e.do("PUT", "/v1/drops/sheet", adminKey, fmt.Sprintf(`{"opens_at": %q, "codes": ["=HYPERLINK(\"http://x\")", "@SUM(1)", "PLAIN-1"]}`,
		e.clock.Now().Format("2006-01-02T15:04:05Z"))), 200, "")
	for range 3 {
		e.want(e.do("POST", "/v1/drops/sheet/claims", "", ""), 201, "")
	}
	_, rows = e.export("/v1/drops/sheet/claims.csv")
	if got := rows[1][2] + " " + rows[2][2] + " " + rows[3][2]; got != `'=HYPERLINK("http://x") '@SUM(1) PLAIN-1` {
		t.Fatalf("codes exported as %s", got)
	}

	e.want(e.do("GET", "/v1/drops/gift/claims.csv", "", ""), 401, "unauthorized")
	e.want(e.do("GET", "/v1/drops/nope/claims.csv", adminKey, ""), 404, "drop_not_found")
}

// cutDrops is a drop store whose listing of claims fails past the first page.
type cutDrops struct{ drop.Store }

func (s cutDrops) Claims(ctx context.Context, id string, after int64, limit int) ([]drop.Claim, error) {
	if after > 0 {
		return nil, rushgate.ErrUnavailable
	}
	return s.Store.Claims(ctx, id, after, limit)
}

// TestExportCutIsNotComplete: a store that fails in the middle of an export makes the download fail;
// it never ends short as if it were the whole list.
func TestExportCutIsNotComplete(t *testing.T) {
	e := setup(t, func(cfg *httpapi.Config, _ *room.Store) {
		cfg.Drops = drop.NewService(cutDrops{memstore.NewDrops(cfg.Clock, nil)}, drop.Options{Clock: cfg.Clock})
	})
	e.want(e.do("PUT", "/v1/drops/gift", adminKey, fmt.Sprintf(`{"stock": 1001, "opens_at": %q}`, e.clock.Now().Format("2006-01-02T15:04:05Z"))), 200, "")
	for range 1001 {
		e.want(e.do("POST", "/v1/drops/gift/claims", "", ""), 201, "")
	}
	res := e.adminGet("/v1/drops/gift/claims.csv")
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut export read to its end (%d bytes, %d lines): %v", len(body), strings.Count(string(body), "\n"), err)
	}
}

// TestExportEvents: an auction's events as CSV: every bid with its leader and price, the automatic
// answer of a maximum marked, then the sale (buy-now stays offered while the reserve is not met).
func TestExportEvents(t *testing.T) {
	e := setup(t)
	e.want(e.do("PUT", "/v1/auctions/lot", adminKey, e.auctionCfg(`, "reserve_price": 5000, "buy_now_price": 9000`)), 200, "")
	alice, bob := e.visitorToken("alice"), e.visitorToken("bob")
	e.want(e.do("POST", "/v1/auctions/lot/bids", alice, `{"max_amount": 3000}`), 201, "")
	e.want(e.do("POST", "/v1/auctions/lot/bids", bob, `{"amount": 2000}`), 201, "")
	// The operator's summary says who would win now, and that it would not be a sale yet.
	sum := e.do("GET", "/v1/auctions/lot/config", adminKey, "")
	if sum.str("leader") == "" || sum.str("leader") != e.do("GET", "/v1/auctions/lot", "", "").str("leader") || sum.body["reserve_met"] != false {
		t.Fatalf("summary: %v", sum.body)
	}
	e.want(e.do("POST", "/v1/auctions/lot/buy-now", bob, ``), 200, "")
	res, rows := e.export("/v1/auctions/lot/events.csv")
	if res.StatusCode != 200 || res.Header.Get("Content-Disposition") != `attachment; filename="auction-lot-events.csv"` {
		t.Fatalf("export: %d %v", res.StatusCode, res.Header)
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join([]string{r[0], r[2], r[4], r[5]}, " "))
	}
	// Bob's 2000 is answered at once by Alice's maximum: the event is the price it left, Alice's 2100.
	want := []string{"seq kind price automatic", "1 bid 1000 false", "2 bid 2100 true", "3 sold 9000 false"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events exported:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rows[1][3] == "" || rows[2][3] != rows[1][3] || rows[3][3] == rows[1][3] {
		t.Fatalf("bidders exported: %v", rows)
	}
	e.want(e.do("GET", "/v1/auctions/nope/events.csv", adminKey, ""), 404, "auction_not_found")
}
