package memstore_test

import (
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/storetest"
)

func TestAuctionConformance(t *testing.T) {
	storetest.RunAuctions(t, func(t *testing.T) storetest.AuctionHarness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		return storetest.AuctionHarness{Store: memstore.NewAuctions(c.Now), Advance: c.Advance, Now: c.Now}
	})
}
