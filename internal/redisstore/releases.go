package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
)

// Releases announces admissions ended early on one pub/sub channel that every instance listens to.
// A listener that is not connected when one is announced misses it; its tokens then pass offline checks
// there until they expire, as they would without this.
type Releases struct{ *conn }

// Announce implements [rushgate.Releases].
func (r Releases) Announce(ctx context.Context, id string, until time.Time) error {
	_, err := r.do(ctx, r.rdb.B().Publish().Channel(r.keys.released()).Message(id+" "+strconv.FormatInt(until.Unix(), 10)).Build())
	return err
}

// Listen implements [rushgate.Releases]: it subscribes until ctx ends, subscribing again after a
// failure.
func (r Releases) Listen(ctx context.Context) <-chan rushgate.Released {
	out := make(chan rushgate.Released, 256)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			_ = r.rdb.Receive(ctx, r.rdb.B().Subscribe().Channel(r.keys.released()).Build(), func(m rueidis.PubSubMessage) {
				id, until, ok := strings.Cut(m.Message, " ")
				sec, err := strconv.ParseInt(until, 10, 64)
				if !ok || err != nil {
					return
				}
				select {
				case out <- rushgate.Released{ID: id, Until: time.Unix(sec, 0)}:
				default: // the reader is behind: this one passes checks elsewhere until it expires
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
