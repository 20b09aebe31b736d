package httpapi_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/room"
)

// flakyReleases fails its first announcements, as a store that answered the release a moment
// before and fails now, then keeps what it is told.
type flakyReleases struct {
	mu        sync.Mutex
	fail      int
	tries     int
	announced []string
}

func (f *flakyReleases) Announce(_ context.Context, id string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.fail > 0 {
		f.fail--
		return errors.Join(rushgate.ErrUnavailable, errors.New("store down"))
	}
	f.announced = append(f.announced, id)
	return nil
}

func (f *flakyReleases) Listen(ctx context.Context) <-chan rushgate.Released {
	out := make(chan rushgate.Released)
	go func() { <-ctx.Done(); close(out) }()
	return out
}

func (f *flakyReleases) state() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries, append([]string(nil), f.announced...)
}

// TestReleaseAnnouncedOnceTheStoreAnswers: a release whose announcement to the other instances fails
// is announced again in the background until it goes through, so that their offline checks refuse its
// token once the store answers again, rather than until the token expires.
func TestReleaseAnnouncedOnceTheStoreAnswers(t *testing.T) {
	rel := &flakyReleases{fail: 2}
	e := setup(t, func(c *httpapi.Config, _ *room.Store) { c.Releases = rel })
	tok, _ := e.admitOne("sale", `{"capacity": 1}`)
	e.want(e.do("POST", "/v1/rooms/sale/release", tok, ""), 200, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		tries, announced := rel.state()
		if len(announced) == 1 {
			if tries != 3 {
				t.Fatalf("announced after %d tries, want 3", tries)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d tries and no announcement", tries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
