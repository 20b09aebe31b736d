package memstore_test

import (
	"testing"
	"time"

	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		c := storetest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		return storetest.Harness{Store: memstore.New(memstore.Options{Clock: c.Now}), Advance: c.Advance, Now: c.Now}
	})
}
