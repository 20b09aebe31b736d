package room

import (
	"context"
	"time"

	"github.com/rushgate/rushgate"
)

// A room that follows a drop's stock (Config.Drop) lets its line in to claim from that drop, so once
// the drop stops taking claims (its closes_at passed, or its operator closed it) the room lets nobody
// in: whoever it admitted would find the sale closed, however many units are left. The line keeps its
// places, since the drop may open again, and its visitors are told (View.DropClosed).
//
// The gate decides this itself rather than the store's atomic step: no claim depends on it (the drop
// refuses every claim after its close in its own step), and the room hears of the drop's closing the
// way it hears of its stock, from the drop's service (see rushgate.Gatekeeper.Restock), at each change
// and each second while the drop takes claims. So an instance that has not heard yet, one started since,
// may let visitors in for about a second after the close.

// sale is what a gate heard of the drop its room follows: when it stops taking claims, as of the
// latest write of the drop's config heard, so that a level read before a change and told after it
// changes nothing.
type sale struct {
	drop    string
	closes  time.Time // zero: it has no end
	written int64
	heard   bool
	asked   time.Time // when the gate last asked the drop itself, having heard nothing
}

// hear takes a level of drop's stock that the room was told.
func (g *gate) hear(drop string, l rushgate.Level) {
	g.saleMu.Lock()
	if g.sale.heard && g.sale.drop == drop && l.Written < g.sale.written {
		g.saleMu.Unlock()
		return
	}
	changed := !g.sale.heard || g.sale.drop != drop || !g.sale.closes.Equal(l.Closes)
	g.sale = sale{drop: drop, closes: l.Closes, written: l.Written, heard: true}
	g.saleMu.Unlock()
	if changed {
		g.wake() // reopened: the line may move at once; closed: its waiting visitors are told
	}
}

// dropClosed reports whether the drop that cfg follows takes no claims at now, as far as the gate
// heard. A gate that has heard nothing of it asks the drop, at most once a second.
func (g *gate) dropClosed(ctx context.Context, cfg Config, now time.Time) bool {
	if cfg.Drop == "" {
		return false
	}
	g.saleMu.Lock()
	ask := (!g.sale.heard || g.sale.drop != cfg.Drop) && g.s.opts.Stock != nil && time.Since(g.sale.asked) >= time.Second
	if ask {
		g.sale.asked = time.Now()
	}
	g.saleMu.Unlock()
	if ask {
		if l, err := g.s.opts.Stock.Remaining(ctx, cfg.Drop, g.id); err == nil {
			g.hear(cfg.Drop, l)
		}
	}
	return g.heardClosed(cfg, now)
}

// heardClosed is dropClosed without asking: what a visitor's view says, which must not wait on the drop.
func (g *gate) heardClosed(cfg Config, now time.Time) bool {
	g.saleMu.Lock()
	s := g.sale
	g.saleMu.Unlock()
	return cfg.Drop != "" && s.heard && s.drop == cfg.Drop && !s.closes.IsZero() && !now.Before(s.closes)
}

// closes returns when the drop that cfg follows stops taking claims, if the gate heard of a closing
// still to come: the gate's step is due then, to tell the line.
func (g *gate) closes(cfg Config, now time.Time) (time.Time, bool) {
	g.saleMu.Lock()
	s := g.sale
	g.saleMu.Unlock()
	return s.closes, cfg.Drop != "" && s.heard && s.drop == cfg.Drop && s.closes.After(now)
}

// closedTick is the gate's step while the drop its room follows takes no claims: it admits nobody and
// expires nothing (the next step after a reopening does), tells the line once when it finds the drop
// closed, and notes the time as one when the line could not move, so the pace after a reopening is not
// taken for slow.
func (g *gate) closedTick(now time.Time) Tick {
	if !g.closedSeen.Swap(true) {
		g.hub.broadcast()
	}
	if g.stepped.Load() {
		g.eta.observe(now, g.admitted.Load(), false)
	}
	return Tick{}
}
