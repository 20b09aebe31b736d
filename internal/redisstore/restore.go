package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
)

// A drop or an auction that Redis lost while the SQL record kept it is put back by its restore script
// (lua/drop_restore.lua, lua/auction_restore.lua) in pieces, then checked whole before it reappears.

// restorePiece is how many claims or events one call of a restore script carries: a few milliseconds
// of Redis's time, so that the restore of a large drop or auction does not hold up everyone else's
// requests. restoreTries bounds the attempts of a restore that another restore of the same entity
// keeps clearing.
const (
	restorePiece = 1000
	restoreTries = 3
)

// restoreInPieces runs a restore script (lua/drop_restore.lua, lua/auction_restore.lua): the n items
// (claims or events) restorePiece a call, the first call clearing what an earlier attempt left, then
// the last call with the arguments last, which answers INCOMPLETE if another restore cleared items
// meanwhile; then it starts again, up to restoreTries times.
func restoreInPieces(ctx context.Context, c *conn, sc *rueidis.Lua, keys []string, errs *scriptErrors, n int,
	item func(i int) []string, last []string) error {
	for try := 1; ; try++ {
		err := sendPieces(ctx, c, sc, keys, errs, n, item)
		if err == nil {
			err = c.runCode(ctx, sc, keys, errs, last...)
		}
		if !errors.Is(err, errIncomplete) {
			return err
		}
		if try == restoreTries {
			return fmt.Errorf("%w: another restore kept clearing this one's items", rushgate.ErrUnavailable)
		}
	}
}

// sendPieces sends the items of a restore, restorePiece a call, the first marked "first".
func sendPieces(ctx context.Context, c *conn, sc *rueidis.Lua, keys []string, errs *scriptErrors, n int, item func(i int) []string) error {
	step := "first"
	for from := 0; from < n || step == "first"; from += restorePiece {
		args := []string{step}
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
