package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/auction"
	"github.com/rushgate/rushgate/internal/drop"
)

// Result codes of the auction and drop scripts. lua/auction_lib.lua names them; the drop scripts use
// the same numbers, with meanings of their own for 2 to 4.
const (
	codeOK int64 = iota
	codeNotFound
	codeNotStarted // an auction not started yet; a drop not open
	codeClosed     // an auction closed; a drop sold out
	codeTooLow     // a bid too low (the minimum follows); a drop already claimed by the visitor (the claims follow)
	codeBuyNowGone
	codeStarted // a replace or delete refused: there are bids, a sale or claims
	codeStale   // the config changed since the caller read it
	// codeIncomplete is a restore that found claims or events missing at its end, or its hold of the
	// drop or auction taken over by another restore (lua/drop_restore.lua, lua/auction_restore.lua).
	codeIncomplete
	codeBusy // a restore refused: another restore of the same drop or auction holds it
)

// scriptErrors is a domain's error for each result code. Its err method is the one place where a
// script's result code becomes an error.
type scriptErrors [codeBusy + 1]error

var (
	auctionErrors = scriptErrors{codeNotFound: auction.ErrNotFound, codeNotStarted: auction.ErrNotStarted,
		codeClosed: auction.ErrClosed, codeTooLow: auction.ErrTooLow, codeBuyNowGone: auction.ErrBuyNowGone,
		codeStarted: auction.ErrStarted, codeStale: rushgate.ErrStale, codeIncomplete: errIncomplete, codeBusy: errRestoreBusy}
	dropErrors = scriptErrors{codeNotFound: drop.ErrNotFound, codeNotStarted: drop.ErrNotOpen,
		codeClosed: drop.ErrSoldOut, codeTooLow: errAlreadyClaimed, codeStarted: drop.ErrStarted, codeStale: rushgate.ErrStale,
		codeIncomplete: errIncomplete, codeBusy: errRestoreBusy}
	// amendErrors are lua/drop_amend.lua's: its code 4 is a stock below the claims.
	amendErrors = scriptErrors{codeNotFound: drop.ErrNotFound, codeClosed: drop.ErrSoldOut, codeTooLow: drop.ErrBelowClaimed,
		codeStale: rushgate.ErrStale}
)

// errAlreadyClaimed stands for the claim script's code 4 until the claim path turns it into a
// *drop.AlreadyClaimedError carrying the visitor's claims.
var errAlreadyClaimed = errors.New("redisstore: already claimed")

// errIncomplete stands for the restore scripts' code 8: the restore starts again.
var errIncomplete = errors.New("redisstore: the restore found items missing")

// errRestoreBusy stands for the restore scripts' code 9: the restore waits for the one that holds the
// drop or auction.
var errRestoreBusy = errors.New("redisstore: another restore holds it")

// err returns the error for code: nil for codeOK, and an error naming the code for one that no script
// of the domain returns.
func (e *scriptErrors) err(code int64) error {
	if code == codeOK {
		return nil
	}
	if code < 0 || code >= int64(len(e)) || e[code] == nil {
		return fmt.Errorf("redisstore: unknown script result %d", code)
	}
	return e[code]
}

// runCode runs a script that answers with a result code, alone or first in an array, and returns the
// domain's error for it.
func (c *conn) runCode(ctx context.Context, sc *rueidis.Lua, keys []string, errs *scriptErrors, args ...string) error {
	v, err := c.run(ctx, sc, keys, args...)
	if err != nil {
		return err
	}
	if arr, aerr := v.ToArray(); aerr == nil && len(arr) > 0 {
		v = arr[0]
	}
	return errs.err(integer(v))
}
