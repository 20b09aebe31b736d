package drop

import "context"

// Info is what anyone may see of a drop. Its Config leaves the listed codes out: only claims hand them
// out, and every read of a drop (a page's poll, the console's, the history's each second) would
// otherwise carry thousands of them. Listed says how many there are.
type Info struct {
	Config  Config
	Claimed int
	Listed  int
	// Rev is the revision of Config, new at each Put: what a claim checked against a cached config
	// names, so that the store refuses it if the config has changed since.
	Rev string
	// Written numbers the writes of Config (a Put, an Amend, a Restore): the store's clock in
	// milliseconds, and always past the one before, however the clock moves. It orders what a room that
	// follows the drop is told of its stock (see rushgate.Level).
	Written int64
}

// audited is the drop's config as the audit log keeps it: its listed codes by their number, since they
// are the drop's secrets and may be thousands.
func (i Info) audited() any {
	type bare Config
	c := bare(i.Config)
	c.Codes = nil
	return struct {
		bare
		Codes int `json:"codes,omitempty"`
	}{c, i.Listed}
}

// Store holds drops. Claim is one atomic step (a critical section in memory, one script in Redis):
// the checks and the taking of a unit happen together, so no stock is ever handed out twice or past
// its end, however many claims race.
type Store interface {
	// Put creates a drop or replaces it while nothing is claimed; ErrStarted afterwards.
	Put(ctx context.Context, id string, cfg Config) error
	// Restore is Put for a drop the store lost while the durable record kept its claims (Redis
	// restarted without its data): the drop is created holding claims, numbered 1 to n (see
	// [Numbered]), and goes on from the last instead of handing its stock out again. The claims are
	// the record's already and are not recorded again. ErrStarted when the drop has claims.
	Restore(ctx context.Context, id string, cfg Config, claims []Claim) error
	// Delete removes a drop while nothing is claimed; ErrStarted afterwards, ErrNotFound when there is
	// none.
	Delete(ctx context.Context, id string) error
	// Amend changes the drop's title, message, stock, per_visitor and window to cfg's, keeping its
	// claims, if its config is still of revision rev (rushgate.ErrStale otherwise): an operator
	// correcting a drop that has claims, restocking it, letting each visitor claim more, or opening or
	// closing it now. Nothing else of cfg is used. A stock below
	// the claims is refused with ErrBelowClaimed, and any new stock of a drop sold out with ErrSoldOut:
	// its pages, feed and line have told everyone that it is over.
	Amend(ctx context.Context, id, rev string, cfg Config) error
	// Get returns the drop's config without its listed codes, how many it lists, and how much is
	// claimed.
	Get(ctx context.Context, id string) (Info, error)
	// Codes returns the codes the drop's config lists, in the order claims hand them out (none when
	// claims get generated codes): the operator's view of the whole config, which a form edits.
	Codes(ctx context.Context, id string) ([]string, error)
	// Claim takes one unit for visitor. With a non-empty key, a repeat returns the first answer and
	// reports created false. Refusals: ErrNotOpen, ErrSoldOut, *AlreadyClaimedError, ErrNotFound, and
	// rushgate.ErrStale when rev is not empty and no longer the revision of the drop's config (see
	// [Info.Rev]): the visitor was checked against a config since replaced.
	Claim(ctx context.Context, id, rev, visitor, key string) (c Claim, created bool, err error)
	// Claims pages through all claims by sequence number.
	Claims(ctx context.Context, id string, after int64, limit int) ([]Claim, error)
	// List returns up to limit drop ids after the id after, in id order: the admin's list.
	List(ctx context.Context, after string, limit int) ([]string, error)
	// Mine returns a visitor's claims.
	Mine(ctx context.Context, id, visitor string) ([]Claim, error)
}
