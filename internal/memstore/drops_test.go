package memstore_test

import (
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/storetest"
)

func TestDropConformance(t *testing.T) {
	storetest.RunDrops(t, func(t *testing.T) storetest.DropHarness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		return storetest.DropHarness{Store: memstore.NewDrops(c.Now, nil), Advance: c.Advance, Now: c.Now}
	})
}
