package loadtest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
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
	tokens, err := mintVisitors(ctx, c.target, c.key, c.conc, c.conc)
	if err != nil {
		return err
	}
	var accepted, refused atomic.Int64
	next := make([]int64, c.conc) // the minimum each bidder was last told
	rngs := make([]*rand.Rand, c.conc)
	for w := range rngs {
		next[w], rngs[w] = 1, rand.New(rand.NewPCG(uint64(w), 1))
	}
	err = c.compare(ctx, "bid", func(int) round {
		return timed(ctx, c.conc, c.dur, func(ctx context.Context, w int) (*http.Request, bool) {
			offer := fmt.Sprintf(`{"max_amount": %d}`, next[w]+rngs[w].Int64N(*margin+1))
			req, _ := http.NewRequestWithContext(ctx, "POST", c.target+"/v1/auctions/benchhot/bids", strings.NewReader(offer))
			req.Header.Set("Authorization", "Bearer "+tokens[w])
			return req, true
		}, func(w int, res *http.Response) bool {
			var body struct {
				Auction struct {
					Min int64 `json:"min_next_bid"`
				} `json:"auction"`
				Error struct {
					Min int64 `json:"min_next_bid"`
				} `json:"error"`
			}
			_ = json.NewDecoder(res.Body).Decode(&body)
			switch res.StatusCode {
			case http.StatusCreated:
				accepted.Add(1)
				next[w] = body.Auction.Min
			case http.StatusConflict:
				refused.Add(1)
				next[w] = body.Error.Min
			default:
				return false
			}
			return true
		})
	})
	fmt.Printf("of all bids: %d accepted, %d refused as too low\n", accepted.Load(), refused.Load())
	return err
}
