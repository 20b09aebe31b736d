package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/redisstore"
	"github.com/rushgate/rushgate/internal/redistest"
)

// TestReleasesReachLateListeners: a listener hears the admissions released before it listened whose
// tokens still run, then those released while it listens; standalone and on a Cluster, where the
// announcement's PUBLISH comes from a script.
func TestReleasesReachLateListeners(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, tp redistest.Topology) {
		b := redisstore.New(tp.Client(t), redisstore.Options{Prefix: redistest.Prefix("releases"), Cluster: tp.Cluster})
		ctx := context.Background()
		now := time.Now()
		if err := b.Releases().Announce(ctx, "gone.1", now.Add(-time.Second)); err != nil { // its token ran out
			t.Fatal(err)
		}
		if err := b.Releases().Announce(ctx, "early.1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// More than a page of the set, and than a listener's buffer: none may be dropped.
		const bulk = 1500
		for i := range bulk {
			if err := b.Releases().Announce(ctx, fmt.Sprint("bulk.", i), now.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		lctx, cancel := context.WithCancel(ctx)
		heard := b.Releases().Listen(lctx)
		next := func() rushgate.Released {
			t.Helper()
			select {
			case r := <-heard:
				return r
			case <-time.After(5 * time.Second):
				t.Fatal("nothing heard")
			}
			return rushgate.Released{}
		}
		if r := next(); r.ID != "early.1" || r.Until.Unix() != now.Add(time.Minute).Unix() {
			t.Fatalf("heard %+v, want early.1, released before the listener started", r)
		}
		got := map[string]bool{}
		for len(got) < bulk {
			r := next()
			if !strings.HasPrefix(r.ID, "bulk.") {
				t.Fatalf("heard %+v with %d of the %d bulk releases", r, len(got), bulk)
			}
			got[r.ID] = true
		}
		// Announced while listening: heard through the channel (again, at times, through a
		// subscription made anew, which reads the set).
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := b.Releases().Announce(ctx, "late.1", now.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if r := next(); r.ID == "late.1" {
				break
			} else if r.ID == "gone.1" || time.Now().After(deadline) {
				t.Fatalf("heard %+v, want late.1", r)
			}
		}
		cancel()
		for range heard { // closed once the listener has stopped
		}
	})
}
