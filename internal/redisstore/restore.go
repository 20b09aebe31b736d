package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
)

// A drop or an auction that Redis lost while the SQL record kept it is put back by its restore script
// (lua/drop_restore.lua, lua/auction_restore.lua) in pieces, then checked whole before it reappears.

// restorePiece is how many claims or events one call of a restore script carries: a few milliseconds
// of Redis's time, so that the restore of a large drop or auction does not hold up everyone else's
// requests. restoreTries bounds the attempts of a restore whose items went missing (a hold that lapsed
// and was taken over). restoreWait bounds how long a restore waits while another restore of the same
// entity holds it: longer than the 10 s after which a dead holder's hold lapses.
const (
	restorePiece = 1000
	restoreTries = 3
	restoreWait  = 15 * time.Second
)

// restoreInPieces runs a restore script (lua/drop_restore.lua, lua/auction_restore.lua): the n items
// (claims or events) restorePiece a call, the first call taking the entity's hold and clearing what an
// earlier attempt left, then the last call with the arguments last. While another restore holds the
// entity it waits, and usually then finds the entity restored (the domain's ErrStarted); a hold lost
// midway (INCOMPLETE) starts it again, up to restoreTries times.
func restoreInPieces(ctx context.Context, c *conn, sc *rueidis.Lua, keys []string, errs *scriptErrors, n int,
	item func(i int) []string, last []string) error {
	token := rushgate.NewRevision()
	waitUntil := time.Now().Add(restoreWait)
	for try := 1; ; {
		err := sendPieces(ctx, c, sc, keys, errs, token, n, item)
		if err == nil {
			err = c.runCode(ctx, sc, keys, errs, append([]string{"last", token}, last...)...)
		}
		switch {
		case errors.Is(err, errRestoreBusy):
			if time.Now().After(waitUntil) {
				return fmt.Errorf("%w: another restore of it is under way", rushgate.ErrUnavailable)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		case errors.Is(err, errIncomplete):
			if try == restoreTries {
				return fmt.Errorf("%w: another restore kept taking it over", rushgate.ErrUnavailable)
			}
			try++
		default:
			return err
		}
	}
}

// sendPieces sends the items of a restore, restorePiece a call, the first marked "first".
func sendPieces(ctx context.Context, c *conn, sc *rueidis.Lua, keys []string, errs *scriptErrors, token string, n int, item func(i int) []string) error {
	step := "first"
	for from := 0; from < n || step == "first"; from += restorePiece {
		args := []string{step, token}
		for i := from; i < min(from+restorePiece, n); i++ {
			args = append(args, item(i)...)
		}
		if err := c.runCode(ctx, sc, keys, errs, args...); err != nil {
			return err
		}
		step = "more"
	}
	return nil
}
