package drop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rushgate/rushgate"
)

// Summary is a drop as the operator's list shows it.
type Summary struct {
	ID     string `json:"id"`
	Config Config `json:"config"`
	// Listed is how many codes the config lists, whether Config shows them or not.
	Listed    int    `json:"listed"`
	Claimed   int    `json:"claimed"`
	Remaining int    `json:"remaining"`
	Status    Status `json:"status"`
	// Redeemed is how many of its codes were used at checkouts (see [Service.Redeem]); a drop's own
	// summary has it once the drop has claims, the list does not (nil), nor does a summary read while
	// the record fails.
	Redeemed *int `json:"redeemed,omitempty"`
	// FollowedBy is the room that follows the drop's stock, which keeps the drop from being deleted or
	// moved from behind it (ErrFollowed); only a drop's own summary says it, and not while the room's
	// store cannot tell.
	FollowedBy string `json:"followed_by,omitempty"`
}

// Summarize is what the operator's list and the drop's own page show of info at now.
func Summarize(id string, info Info, now time.Time) Summary {
	return Summary{ID: id, Config: info.Config, Listed: info.Listed, Claimed: info.Claimed, Remaining: max(0, info.Config.Stock-info.Claimed), Status: info.Status(now)}
}

// Summary returns one drop as the operator's list shows it, with its whole config when codes is set:
// the listed codes too, which the list leaves out, and which a form that replaces the config must send
// again.
func (s *Service) Summary(ctx context.Context, id string, codes bool) (Summary, error) {
	info, err := s.store.Get(ctx, id)
	if err == nil && codes && info.Listed > 0 {
		info.Config.Codes, err = s.store.Codes(ctx, id)
	}
	if err != nil {
		return Summary{}, err
	}
	sum := Summarize(id, info, s.clock())
	if room := info.Config.Room; room != "" && s.gate != nil {
		if follows, err := s.gate.Follows(ctx, room, id); err == nil && follows {
			sum.FollowedBy = room
		}
	}
	if s.redemptions != nil && info.Claimed > 0 {
		// The count is the record's; while it fails, the rest of the summary still comes.
		if n, err := s.redemptions.CountRedeemed(ctx, id); err == nil {
			sum.Redeemed = &n
		}
	}
	return sum, nil
}

// List returns up to limit drops after the id after, in id order, and those it could not read; fewer
// only at the end of the list (see [rushgate.Page]).
func (s *Service) List(ctx context.Context, after string, limit int) (rushgate.Listed[Summary], error) {
	return rushgate.Page(ctx, after, limit, s.store.List, func(ctx context.Context, id string) (Summary, error) {
		info, err := s.store.Get(ctx, id)
		return Summarize(id, info, s.clock()), err
	}, ErrNotFound)
}

// OpenNow opens the drop at once, also one closed before: claims are taken from now on.
func (s *Service) OpenNow(ctx context.Context, id string) error {
	return s.schedule(ctx, id, rushgate.ActionOpen, func(c *Config, now time.Time) {
		c.OpensAt = now
		if c.ClosesAt != nil && !c.ClosesAt.After(now) {
			c.ClosesAt = nil
		}
	})
}

// CloseNow closes the drop at once, keeping its claims: no claim is taken from now on.
func (s *Service) CloseNow(ctx context.Context, id string) error {
	return s.schedule(ctx, id, rushgate.ActionClose, func(c *Config, now time.Time) {
		c.ClosesAt = &now
		if !c.OpensAt.Before(now) {
			c.OpensAt = now.Add(-time.Millisecond)
		}
	})
}

// schedule moves the drop's window as move says, against the config it read (again, if another
// change came first), and audits it.
func (s *Service) schedule(ctx context.Context, id, action string, move func(c *Config, now time.Time)) error {
	defer s.changed(id)
	for range 3 {
		info, err := s.store.Get(ctx, id)
		if err != nil {
			return err
		}
		c := info.Config
		move(&c, s.clock().UTC().Truncate(time.Millisecond))
		err = s.store.Amend(ctx, id, info.Rev, c)
		if errors.Is(err, rushgate.ErrStale) {
			continue
		}
		if err != nil {
			return err
		}
		rushgate.Audited(ctx, s.audit, s.log, rushgate.Entry{At: s.clock().UTC(), Kind: "drop", ID: id, Action: action,
			Changes: rushgate.Diff(info.Config, c)})
		s.restocked(ctx, id, c.Room) // a room that follows the drop stops admitting, or admits again, at once
		return nil
	}
	return rushgate.ErrUnavailable
}

// Point is one second of a drop's history.
type Point struct {
	At        time.Time `json:"t"`
	Claims    float64   `json:"claims"` // per second
	Claimed   int64     `json:"claimed"`
	Remaining int64     `json:"remaining"`
}

const (
	figClaimed = iota
	figRemaining
)

func entity(id string) string { return "drop:" + id }

// over reports whether the drop's figures have stopped at now: sold out, or closed for a few seconds
// (the store may judge its window by a clock a little behind this one).
func (i Info) over(now time.Time) bool {
	c := i.Config
	return i.Claimed >= c.Stock || (c.ClosesAt != nil && now.Sub(*c.ClosesAt) > 5*time.Second)
}

// Sample offers every drop's figures to the history, one read per drop, and one a minute per drop that
// is over (see [rushgate.Seen]), and tells the room behind each drop that takes claims its stock. Start
// runs it every second; tests call it to take a sample when they choose.
func (s *Service) Sample(ctx context.Context) {
	now := s.clock()
	rushgate.EachID(ctx, s.store.List, func(id string) {
		if !s.seen.Due(id, now) {
			return
		}
		info, err := s.store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			s.seen.Forget(id) // deleted on another instance
			s.told.Delete(id)
		}
		if err != nil {
			return
		}
		sum := Summarize(id, info, now)
		sum.Config.Codes = nil // their number is in Listed; a drop may list thousands
		over := info.over(now)
		s.seen.Saw(id, sum, over, now)
		if over && s.ended != nil {
			s.tell(ctx, id, info)
		}
		if info.Config.Room != "" && s.gate != nil && sum.Remaining > 0 {
			// The room that follows the drop hears its stock again: news only to a room that missed a
			// restock (an instance stopped between the drop's change and the room's). Read before a
			// change that the room heard of meanwhile, it is of an earlier write, and changes nothing.
			if err := s.gate.Restock(ctx, info.Config.Room, id, info.Level()); err != nil && ctx.Err() == nil {
				s.log.Warn("drop: telling its room the stock", "drop", id, "room", info.Config.Room, "err", err)
			}
		}
		if s.history == nil {
			return
		}
		figs := []int64{int64(sum.Claimed), int64(sum.Remaining)}
		if err := s.history.Sample(ctx, entity(id), figs); err != nil && ctx.Err() == nil {
			s.log.Warn("drop: history sample", "drop", id, "err", err)
		}
	})
}

// tell tells Ended of the end of a drop that is over, once per end on this instance: a drop over is
// read once a minute, and its end was told at the first.
func (s *Service) tell(ctx context.Context, id string, info Info) {
	status, at := StatusSoldOut, time.Time{}
	if info.Claimed >= info.Config.Stock {
		last, err := s.store.Claims(ctx, id, int64(info.Claimed-1), 1)
		if err != nil {
			return // the next read tries again
		}
		if len(last) == 0 {
			// The last claim is not durable yet (the embedded backend lists only claims committed, and
			// a failed commit undoes the others): read the drop again in a second, not a minute.
			s.seen.Wake(id)
			return
		}
		at = last[0].ClaimedAt
	} else {
		status, at = StatusClosed, *info.Config.ClosesAt
	}
	key := string(status) + "." + at.UTC().Format(time.RFC3339Nano)
	if told, ok := s.told.Load(id); ok && told == key {
		return
	}
	if err := s.ended.QueueDropEnded(ctx, id, info.Config, status, info.Claimed, at); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("drop: its end not told yet; tried again at its next read", "drop", id, "err", err)
		}
		return
	}
	s.told.Store(id, key)
}

// Latest calls fn with each drop as the sampler last read it, a second ago for a drop that takes
// claims and up to a minute for one sold out or closed, leaving out drops over for longer than
// [rushgate.SeenKeep]: what the metrics report, at no cost to the store however many drops there are.
func (s *Service) Latest(fn func(Summary)) {
	s.seen.Each(s.clock(), func(_ string, d Summary) { fn(d) })
}

// History returns the drop's points after since; ErrNotFound for an unknown drop.
func (s *Service) History(ctx context.Context, id string, since time.Time) ([]Point, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return nil, err
	}
	return rushgate.Points(ctx, s.history, entity(id), since, figRemaining+1, func(prev, cur rushgate.Sample) Point {
		return Point{At: cur.At, Claims: rushgate.PerSecond(prev, cur, figClaimed), Claimed: cur.Figures[figClaimed],
			Remaining: cur.Figures[figRemaining]}
	})
}

// StockOf is the stock that rooms follow, read from drops: a drop's units left, refused for a room the
// drop does not sit behind.
func StockOf(store Store) rushgate.Stock { return stock{store} }

type stock struct{ store Store }

func (s stock) Remaining(ctx context.Context, drop, room string) (rushgate.Level, error) {
	info, err := s.store.Get(ctx, drop)
	if err != nil {
		return rushgate.Level{}, err
	}
	if info.Config.Room != room {
		return rushgate.Level{}, fmt.Errorf("drop %s does not sit behind room %s: set the drop's room first", drop, room)
	}
	return info.Level(), nil
}

// Level is the drop's stock as a room that follows it hears of it.
func (i Info) Level() rushgate.Level {
	l := rushgate.Level{Stock: i.Config.Stock, Left: max(0, i.Config.Stock-i.Claimed), Written: i.Written, Opens: i.Config.OpensAt}
	if i.Config.ClosesAt != nil {
		l.Closes = *i.Config.ClosesAt
	}
	return l
}
