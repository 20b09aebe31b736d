package room

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rushgate/rushgate"
)

// Summary is a room as the operator's list shows it: its config and live counts.
type Summary struct {
	ID     string `json:"id"`
	Config Config `json:"config"`
	Stats  Stats  `json:"stats"`
}

// List returns up to limit rooms after the id after, in id order, and those it could not read; fewer
// only at the end of the list (see [rushgate.Page]). A room deleted while the list is read is left out.
func (s *Service) List(ctx context.Context, after string, limit int) (rushgate.Listed[Summary], error) {
	ids, err := s.store.Rooms(ctx)
	if err != nil {
		return rushgate.Listed[Summary]{}, err
	}
	slices.Sort(ids)
	list := func(_ context.Context, after string, limit int) ([]string, error) {
		i, found := slices.BinarySearch(ids, after)
		if found {
			i++
		}
		return ids[i:min(len(ids), i+limit)], nil
	}
	return rushgate.Page(ctx, after, limit, list, func(ctx context.Context, id string) (Summary, error) {
		cfg, st, err := s.Get(ctx, id)
		return Summary{ID: id, Config: cfg, Stats: st}, err
	}, ErrNotFound)
}

// Point is one second of a room's history: its counts, its rates per second, and the wait a visitor
// joining at the back would be told.
type Point struct {
	At            time.Time `json:"t"`
	Waiting       int64     `json:"waiting"`
	Active        int64     `json:"active"`
	Joins         float64   `json:"joins"`
	Admissions    float64   `json:"admissions"`
	IdleExpiries  float64   `json:"idle_expiries"`
	GraceExpiries float64   `json:"grace_expiries"`
	// ETABack is the wait at the back of the line in seconds, as a visitor joining there is told: the
	// line's length over its pace in the window before (see windowOf), or what the config sets.
	ETABack float64 `json:"eta_back"`
	// ETABackBound says ETABack is the most that wait can be, as visitors are told (View.ETAUpperBound):
	// the capacity bounds the pace, and the line did not move in the window before or moved slower.
	ETABackBound bool `json:"eta_back_bound,omitempty"`
}

// The figures of a room's samples, in order.
const (
	figWaiting = iota
	figActive
	figJoined
	figAdmitted
	figIdle
	figGrace
	// figFree is how many slots the room's last step on the sampling instance left free (Tick.Free),
	// -1 when that instance has not stepped the room: what the console's waits replay, since a room
	// that follows a drop has no more free slots than the drop has units, which the history does not
	// keep. Samples of older versions end before it.
	figFree
)

func entity(id string) string { return "room:" + id }

// freeSlots returns how many slots the room's last step on this instance left free, -1 when this
// instance has not stepped it.
func (s *Service) freeSlots(id string) int64 {
	s.mu.Lock()
	g := s.gates[id]
	s.mu.Unlock()
	if g == nil {
		return -1
	}
	return g.eta.freeSlots()
}

// Sample offers every room's counts to the history: one read per room a second, and one a minute per
// room with nobody in line or admitted (see [rushgate.Seen]). Start runs it every second; tests call
// it to take a sample when they choose.
func (s *Service) Sample(ctx context.Context) {
	ids, err := s.store.Rooms(ctx)
	if err != nil {
		return
	}
	now := s.opts.Clock()
	for _, id := range ids {
		if !s.seen.Due(id, now) {
			continue
		}
		st, err := s.store.Stats(ctx, id)
		if err != nil {
			continue
		}
		// Nobody in line and nobody admitted: nothing moves until a join, which wakes the room.
		s.seen.Saw(id, struct{}{}, st.Waiting == 0 && st.Active == 0, now)
		figs := []int64{st.Waiting, st.Active, st.JoinedTotal, st.AdmittedTotal, st.IdleTotal, st.GraceTotal, s.freeSlots(id)}
		if err := s.opts.History.Sample(ctx, entity(id), figs); err != nil && ctx.Err() == nil {
			s.log.Warn("room: history sample", "room", id, "err", err)
		}
	}
}

// History returns the room's points after since; ErrNotFound for an unknown room.
func (s *Service) History(ctx context.Context, id string, since time.Time) ([]Point, error) {
	cfg, err := s.store.Room(ctx, id)
	if err != nil {
		return nil, err
	}
	out := []Point{}
	if s.opts.History == nil {
		return out, nil
	}
	// The pace's window more than asked, for the rates and the ETA of the first points.
	samples, err := s.opts.History.Since(ctx, entity(id), since.Add(-windowOf(cfg)-time.Second))
	if err != nil {
		return nil, err
	}
	// The line as visitors' ETAs saw it: the samples replayed into an estimator as they came.
	var eta estimator
	eta.configure(cfg)
	seen := 0
	rushgate.EachPair(samples, since, figGrace+1, func(i int, prev, cur rushgate.Sample) {
		for ; seen <= i; seen++ {
			hs := samples[seen]
			var total int64
			var lined bool
			if len(hs.Figures) > max(figAdmitted, figWaiting) { // else a sample of an older version: no line
				total, lined = hs.Figures[figAdmitted], hs.Figures[figWaiting] > 0
			}
			eta.observe(hs.At, total, lined)
			switch {
			case len(hs.Figures) > figFree && hs.Figures[figFree] >= 0:
				eta.seat(hs.Figures[figFree])
			case len(hs.Figures) > figActive && cfg.Capacity > 0:
				// Not known to the sample: the capacity's free slots, as many or more than were.
				eta.seat(max(0, int64(cfg.Capacity)-hs.Figures[figActive]))
			}
		}
		p := Point{
			At: cur.At, Waiting: cur.Figures[figWaiting], Active: cur.Figures[figActive],
			Joins:         rushgate.PerSecond(prev, cur, figJoined),
			Admissions:    rushgate.PerSecond(prev, cur, figAdmitted),
			IdleExpiries:  rushgate.PerSecond(prev, cur, figIdle),
			GraceExpiries: rushgate.PerSecond(prev, cur, figGrace),
		}
		if p.Waiting > 0 {
			d, bound := eta.estimate(cur.At, p.Waiting, cfg)
			p.ETABack, p.ETABackBound = d.Seconds(), bound
		}
		out = append(out, p)
	})
	return out, nil
}

// Patch changes the fields of a room's config that patch names, as a JSON merge patch (RFC 7396: a null
// removes a field, so that a room can drop its rate, and an object merges into the one it names, so
// that {"page": {"message": ...}} keeps the page's title and logo), keeping the rest: an operator's
// pause, or a new capacity, without restating the whole config. The result is validated as a whole
// config is.
func (s *Service) Patch(ctx context.Context, id string, patch []byte) (Config, error) {
	old, err := s.store.Room(ctx, id)
	if err != nil {
		return Config{}, err
	}
	merged, err := rushgate.MergePatch(old, patch)
	if de, ok := errors.AsType[*rushgate.DecodeError](err); ok {
		return Config{}, &ConfigError{Field: de.Field, Reason: de.Reason}
	}
	if err != nil {
		return Config{}, err
	}
	cfg, err := DecodeConfig(merged)
	if err != nil {
		return Config{}, err
	}
	return cfg, s.Put(ctx, id, cfg)
}
