// Package room is the waiting-room domain: a room's config, the [Store] interface every backend
// implements with one atomic step per operation, and the [Service] that runs on it.
//
// A room lets visitors in by capacity (at most N admitted at once) and/or by rate (at most N per
// sliding window), in strict arrival order: the order comes from a per-room sequence assigned at
// join, never from clocks, and arrivals before the opening are shuffled so that arriving a
// millisecond early buys nothing. An admission must be collected within its grace window and then
// lasts for the session; a waiting visitor who shows no presence for the idle timeout leaves the
// line. A visitor waits in one line at a time and moves between lines only when it asks to.
//
// The Service runs one gate loop per room, which admits continuously (woken by releases and by a
// timer for the next expiry, rate-window slide, idle deadline or opening), estimates waits, and
// fans changes out to this instance's event streams through a hub: one subscription per room, a
// personal push for a visitor's own change, a broadcast for room-wide movement.
package room
