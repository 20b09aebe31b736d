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
// refuses that token too. Only one announced while its listener's buffer is full passes its checks
// until it expires.
type Releases struct{ *conn }

// Announce implements [rushgate.Releases].
func (r Releases) Announce(ctx context.Context, id string, until time.Time) error {
	_, err := r.run(ctx, releaseAnnounceScript, []string{r.keys.releases()}, id, itoa(until.UnixMilli()),
		r.keys.released(), id+" "+strconv.FormatInt(until.Unix(), 10))
	return err
}

// Listen implements [rushgate.Releases]: it subscribes until ctx ends, subscribing again after a
// failure, and on each subscription reads what was announced before it.
func (r Releases) Listen(ctx context.Context) <-chan rushgate.Released {
	out := make(chan rushgate.Released, 256)
	send := func(rel rushgate.Released) {
		select {
		case out <- rel:
		default: // the reader is behind: this one passes checks elsewhere until it expires
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
				r.announced(ctx, out)
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

// announced sends the releases whose tokens have not expired, a page at a time, waiting for the reader
// (a release dropped here would pass the checks); a failure leaves the rest to the next subscription.
func (r Releases) announced(ctx context.Context, out chan<- rushgate.Released) {
	now := "(" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	for offset := int64(0); ; offset += releasesPage {
		m, err := r.do(ctx, r.rdb.B().Zrange().Key(r.keys.releases()).Min(now).Max("+inf").Byscore().
			Limit(offset, releasesPage).Withscores().Build())
		if err != nil {
			return
		}
		scores, _ := m.AsZScores()
		for _, s := range scores {
			select {
			case out <- rushgate.Released{ID: s.Member, Until: time.UnixMilli(int64(s.Score))}:
			case <-ctx.Done():
				return
			}
		}
		if len(scores) < releasesPage {
			return
		}
	}
}

// releasesPage is how many releases one read of the set returns: a big sale's hour of checkouts is a
// few hundred thousand.
const releasesPage = 1000
