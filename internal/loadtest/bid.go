package loadtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// runBid measures bidding on one hot auction, in rounds that alternate with the null handler's: every
// worker is a bidder that offers the last minimum it was told plus a random margin, as a crowd does in
// an auction's last seconds. The figure compared is answered bids/s, accepted or refused as too low:
// both are a full step of the auction.
func runBid(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bid", flag.ContinueOnError)
	margin := fs.Int64("margin", 200, "bidders offer the minimum next bid plus up to this much")
	var c comparison
	c.flags(fs, "http://127.0.0.1:8080", "rushgate base URL", true)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	now := time.Now().UTC()
	cfg := fmt.Sprintf(`{"title": "bench", "currency": "EUR", "start_price": 1, "increment": 1, "starts_at": %q, "ends_at": %q}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	if err := adminDo(ctx, "PUT", c.target+"/v1/auctions/benchhot", c.key, cfg); err != nil {
		return err
	}
	tokens, _, err := mintVisitors(ctx, c.target, c.key, c.conc, c.conc)
	if err != nil {
		return err
	}
	var accepted, refused atomic.Int64
	// Each bidder keeps what it needs from one request to the next (the minimum it was last told, its
	// random source, its headers, a buffer for the body it sends and one for the answer), so that the
	// tool spends its CPU on requests rather than on itself: it shares the machine with the server.
	bidders := make([]bidder, c.conc)
	for w := range bidders {
		bidders[w] = bidder{next: 1, rng: rand.New(rand.NewPCG(uint64(w), 1)),
			header: http.Header{"Authorization": {"Bearer " + tokens[w]}, "Content-Type": {"application/json"}}}
	}
	err = c.compare(ctx, "bid", func(_ int, null bool) round {
		url := c.at(c.target+"/v1/auctions/benchhot/bids", null)
		return timed(ctx, c.conc, c.dur, func(ctx context.Context, w int) (*http.Request, bool) {
			b := &bidders[w]
			b.body = append(strconv.AppendInt(append(b.body[:0], `{"max_amount": `...), b.next+b.rng.Int64N(*margin+1), 10), '}')
			req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b.body))
			req.Header = b.header
			return req, true
		}, judge(null, func(w int, res *http.Response) bool {
			b := &bidders[w]
			b.answer.Reset()
			_, _ = b.answer.ReadFrom(res.Body)
			least, ok := minNextBid(b.answer.Bytes())
			if !ok {
				return false
			}
			switch res.StatusCode {
			case http.StatusCreated:
				accepted.Add(1)
				b.next = least
			case http.StatusConflict:
				refused.Add(1)
				b.next = least
			default:
				return false
			}
			return true
		}))
	})
	fmt.Printf("of all bids: %d accepted, %d refused as too low\n", accepted.Load(), refused.Load())
	return err
}

// bidder is one worker of the bid benchmark, one of the auction's bidders.
type bidder struct {
	next   int64 // the minimum next bid it was last told
	rng    *rand.Rand
	header http.Header // sent with every bid: net/http only reads it
	body   []byte
	answer bytes.Buffer
}

// minNextBid finds the one "min_next_bid" of a bid's answer, accepted (in its auction) or refused as
// too low (in its error), without decoding the rest: the tool reads every answer of a crowd on the
// machine it measures. TestMinNextBid holds it to what encoding/json reads.
func minNextBid(answer []byte) (int64, bool) {
	const key = `"min_next_bid":`
	i := bytes.Index(answer, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := answer[i+len(key):]
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}
