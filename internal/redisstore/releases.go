package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
)

// Releases announces admissions ended early on one pub/sub channel that every instance listens to,
// and keeps them in a sorted set until their tokens expire (lua/released.lua): a listener reads the
// set each time it subscribes, so that an instance started, or connected again, after an announcement
// refuses that token too.
type Releases struct{ *conn }

// Announce implements [rushgate.Releases].
func (r Releases) Announce(ctx context.Context, id string, until time.Time) error {
	_, err := r.run(ctx, releasedScript, []string{r.keys.releases()}, id, itoa(until.UnixMilli()),
		r.keys.released(), id+" "+strconv.FormatInt(until.Unix(), 10))
	return err
}

// Listen implements [rushgate.Releases]: it subscribes until ctx ends, subscribing again after a
// failure, and on each subscription reads what was announced before it.
func (r Releases) Listen(ctx context.Context) <-chan rushgate.Released {
	out := make(chan rushgate.Released, 256)
	send := func(rel rushgate.Released) {
		select { // waits for the reader rather than drop one, which would pass the checks
		case out <- rel:
		case <-ctx.Done():
		}
	}
	subscribed := make(chan struct{}, 1)
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" { // the hook may not call Redis: the reader below does
			select {
			case subscribed <- struct{}{}:
			default:
			}
		}
	})
	var reading sync.WaitGroup
	reading.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-subscribed:
				r.announced(ctx, send)
			}
		}
	})
	go func() {
		defer close(out)
		defer reading.Wait()
		for ctx.Err() == nil {
			_ = r.rdb.Receive(hooked, r.rdb.B().Subscribe().Channel(r.keys.released()).Build(), func(m rueidis.PubSubMessage) {
				id, until, ok := strings.Cut(m.Message, " ")
				sec, err := strconv.ParseInt(until, 10, 64)
				if ok && err == nil {
					send(rushgate.Released{ID: id, Until: time.Unix(sec, 0)})
				}
			})
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return out
}

// announced sends the releases whose tokens have not expired, a page at a time; a failure leaves the
// rest to the next subscription.
func (r Releases) announced(ctx context.Context, send func(rushgate.Released)) {
	now := "(" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	for offset := int64(0); ; offset += releasesPage {
		m, err := r.do(ctx, r.rdb.B().Zrange().Key(r.keys.releases()).Min(now).Max("+inf").Byscore().
			Limit(offset, releasesPage).Withscores().Build())
		if err != nil {
			return
		}
		scores, _ := m.AsZScores()
		for _, s := range scores {
			send(rushgate.Released{ID: s.Member, Until: time.UnixMilli(int64(s.Score))})
		}
		if len(scores) < releasesPage || ctx.Err() != nil {
			return
		}
	}
}

// releasesPage is how many releases one read of the set returns: a big sale's hour of checkouts is a
// few hundred thousand.
const releasesPage = 1000
