package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// Observer is told about admission events, so that metrics live outside the domain.
type Observer interface {
	Joined(room string)
	Admitted(room string, n int)
	Released(room string)
	Expired(room string, sessions, idle int)
	// Gone is told that the room was deleted, on this instance or, once its gate finds it gone, on
	// another, so that what was counted of it can go too.
	Gone(room string)
}

type nopObserver struct{}

func (nopObserver) Joined(string)            {}
func (nopObserver) Admitted(string, int)     {}
func (nopObserver) Released(string)          {}
func (nopObserver) Expired(string, int, int) {}
func (nopObserver) Gone(string)              {}

// Options configure a [Service].
type Options struct {
	// Clock is the service's notion of now, used for ETAs and pacing; nil means time.Now.
	Clock func() time.Time
	// Observer receives admission events; nil discards them.
	Observer Observer
	// Logger receives errors from background work; nil means slog.Default().
	Logger *slog.Logger
	// Manual disables the background gate loops, for tests that drive [Service.Tick] themselves.
	Manual bool
	// Batch is the most visitors one admission step lets in; 0 means 500. It bounds the time a step
	// holds the store so that joins are never stalled behind a huge admission.
	Batch int
	// Poll is how often a gate runs when nothing wakes it, which catches changes made by other
	// instances; 0 means one second.
	Poll time.Duration
	// History, when set, receives every room's counts each second (unless Manual) and serves
	// [Service.History].
	History rushgate.History
	// Audit, when set, records every change of a room's config.
	Audit rushgate.Audit
	// Stock answers for the drops rooms follow (Config.Drop); a room naming a drop needs it.
	Stock rushgate.Stock
}

// View is what a visitor is shown: its status plus an estimate of the wait.
type View struct {
	Status
	// ETA is the estimated wait until admission, from the admission rate observed recently.
	ETA time.Duration
	// ETAUpperBound says ETA is the most the wait can be rather than an estimate: the room has not yet
	// seen its line move, and its capacity bounds the pace, so ETA assumes that every admitted visitor
	// collects at the end of the grace and stays the whole session_ttl (under the config as it is: a
	// pause or a smaller capacity lengthens it). Once the line moves, ETA follows its pace, usually far
	// shorter.
	ETAUpperBound bool
	// Paused says the room admits nobody until its operator acts (see [Config.Stopped]): paused, or
	// queueing all with no opening set. The line keeps its order, and ETA counts from the resume,
	// whenever that comes.
	Paused bool
	// DropClosed says the drop the room follows (Config.Drop) takes no claims now: closed at its end or
	// by its operator. The room lets nobody in meanwhile, since there would be nothing to claim, and the
	// line keeps its order in case the drop opens again.
	DropClosed bool
	// DropOpensAt is the opening of the drop the room follows while it is still to come (zero
	// otherwise): the room lets nobody in until then, since there would be nothing to claim yet. The
	// line keeps its order, and ETA counts from the opening.
	DropOpensAt time.Time
	// OpensAt is the room's opening while it is still to come (zero otherwise): until then every
	// arrival's place is drawn at random among the others', so Position is no order yet, and a visitor
	// gains nothing by coming early.
	OpensAt time.Time
	// Message is the room's word to its line (page.message): what an operator tells a waiting crowd
	// ("the standing tickets are gone"), or a sold-out one ("a second batch at 18:00"), which a change
	// brings to every such page at once.
	Message string
}

// Service runs rooms on a [Store]: it keeps one gate loop per room that admits visitors as slots and
// rate allow, estimates waits, and pushes changes to subscribed visitors. It owns every goroutine it
// starts; [Service.Stop] ends them.
type Service struct {
	store Store
	opts  Options
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	gates map[string]*gate

	configs  sync.Map                // room -> cachedConfig, for the checks of joins (see guard.go)
	pressure sync.Map                // room -> *pressure, for challenges that follow it
	seen     rushgate.Seen[struct{}] // which rooms the sampler found empty
}

// NewService returns a service over store; call Start to run its gates.
func NewService(store Store, opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{store: store, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, gates: make(map[string]*gate)}
}

// Start starts a gate for every room the store already holds.
func (s *Service) Start(ctx context.Context) error {
	ids, err := s.store.Rooms(ctx)
	if err != nil {
		return fmt.Errorf("room: list rooms: %w", err)
	}
	for _, id := range ids {
		s.gate(id)
	}
	if s.opts.History != nil && !s.opts.Manual {
		s.wg.Go(func() { rushgate.Sampled(s.ctx, s.Sample) })
	}
	return nil
}

// Stop ends every gate and push loop and closes all subscriptions, then waits for them. It is
// idempotent.
func (s *Service) Stop() {
	s.cancel()
	s.mu.Lock()
	for _, g := range s.gates {
		g.hub.closeAll()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// gate returns the room's gate, starting it on first use. Rooms created by another instance get a gate
// here the first time a visitor of this instance touches them.
func (s *Service) gate(id string) *gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.gates[id]; ok {
		return g
	}
	g := newGate(s, id)
	s.gates[id] = g
	if !s.opts.Manual && s.ctx.Err() == nil {
		g.start(s.ctx, &s.wg)
	}
	return g
}

func (s *Service) dropGate(id string) {
	s.mu.Lock()
	g, ok := s.gates[id]
	delete(s.gates, id)
	s.mu.Unlock()
	if ok {
		g.stop()
	}
}

// Put creates or replaces a room and wakes its gate so that a raised capacity takes effect at once.
// The change goes to the audit log with the fields it changed.
func (s *Service) Put(ctx context.Context, id string, cfg Config) error {
	old, err := s.store.Room(ctx, id)
	created := errors.Is(err, ErrNotFound)
	if err != nil && !created {
		return err
	}
	// A room starts following a drop with the units the drop has left; it stops with -1.
	relink, level := cfg.Drop != old.Drop || created, rushgate.Level{Left: -1}
	if relink && cfg.Drop != "" {
		if level, err = s.remaining(ctx, id, cfg.Drop); err != nil {
			return err
		}
	}
	if err := s.store.PutRoom(ctx, id, cfg); err != nil {
		return err
	}
	if relink {
		if err := s.store.SetUnits(ctx, id, cfg.Drop, level); err != nil {
			return err
		}
	}
	if relink && cfg.Drop != "" {
		// The drop read again, now that the link is written: one deleted or moved from behind the room
		// in between was not seen above, and the drop's service, which checks its rooms after its own
		// write, may have checked before this one. Of the two, at least one sees the other.
		if _, err := s.remaining(ctx, id, cfg.Drop); err != nil && !errors.Is(err, rushgate.ErrUnavailable) {
			s.unlink(context.WithoutCancel(ctx), id, old, created)
			return err
		}
	}
	s.configs.Store(id, &cachedConfig{cfg: cfg, at: time.Now()}) // this instance's joins see it at once
	s.seen.Wake(id)
	g := s.gate(id)
	g.setConfig(cfg)
	g.wake()
	if relink || old.Stopped() != cfg.Stopped() || !rushgate.SameTime(old.OpensAt, cfg.OpensAt) || old.message() != cfg.message() {
		// The line's visitors learn at once that it stopped, goes again, opens at another time, is told
		// something new, or follows another drop's stock (sold out or not).
		g.hub.refreshAll()
	}
	e := rushgate.Entry{At: s.opts.Clock().UTC(), Kind: "room", ID: id, Action: rushgate.ActionUpdate, Changes: rushgate.Diff(old, cfg)}
	if created {
		e.Action, e.Changes = rushgate.ActionCreate, rushgate.Diff(nil, cfg)
	}
	rushgate.Audited(ctx, s.opts.Audit, s.log, e)
	return nil
}

// Stats returns a room's counts, for what needs them without the config: the metrics, one read per
// room at each scrape.
func (s *Service) Stats(ctx context.Context, id string) (Stats, error) { return s.store.Stats(ctx, id) }

// Get returns a room's config and counts.
func (s *Service) Get(ctx context.Context, id string) (Config, Stats, error) {
	cfg, err := s.store.Room(ctx, id)
	if err != nil {
		return Config{}, Stats{}, err
	}
	st, err := s.store.Stats(ctx, id)
	return cfg, st, err
}

// Delete removes a room, stops its gate and tells its subscribers they are no longer in it.
func (s *Service) Delete(ctx context.Context, id string) error {
	old, err := s.store.Room(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteRoom(ctx, id); err != nil {
		return err
	}
	s.dropGate(id)
	s.configs.Delete(id)
	s.seen.Forget(id)
	s.opts.Observer.Gone(id)
	if s.opts.History != nil {
		_ = s.opts.History.Forget(context.WithoutCancel(ctx), entity(id))
	}
	rushgate.Audited(ctx, s.opts.Audit, s.log, rushgate.Entry{At: s.opts.Clock().UTC(), Kind: "room", ID: id, Action: rushgate.ActionDelete, Changes: rushgate.Diff(old, nil)})
	return nil
}

// Join puts a visitor in line (or returns its place) and wakes the gate, which may admit it at once.
//
// With an invite code the join first takes the code, and gives it back if the join fails, so that a
// code is spent only on a place taken.
func (s *Service) Join(ctx context.Context, id string, e Entrant) (View, error) {
	s.pressed(id)
	s.seen.Wake(id) // an empty room's figures move again
	if e.Invite != "" {
		taken, err := s.store.TakeInvite(ctx, id, e.Invite)
		if err != nil {
			return View{}, err
		}
		if !taken {
			return View{}, ErrInviteInvalid
		}
	}
	st, err := s.store.Join(ctx, id, e)
	if err != nil {
		if e.Invite != "" {
			if rerr := s.store.ReturnInvite(context.WithoutCancel(ctx), id, e.Invite); rerr != nil {
				s.log.Warn("room: an invite code of a failed join is lost", "room", id, "err", rerr)
			}
		}
		return View{}, err
	}
	g := s.gate(id)
	g.wakeIfStill() // the room was empty: what comes due now, its loop must see
	s.opts.Observer.Joined(id)
	// A visitor who joins again (after leaving, or after the place lapsed) may still hold an event
	// stream that read "not in line": it must read again, not wait for the room's next movement.
	g.hub.notify(e.Visitor)
	if st.State == StateWaiting && st.Position <= int64(s.opts.Batch) && !s.opts.Manual {
		// Near the front a slot may be free right now: run the step here rather than make the visitor
		// poll for an admission it could have had with this answer. Far back the step cannot reach
		// this visitor, so the join neither runs it nor wakes the gate: only a release, an expiry or
		// the clock can make room, and those wake the gate themselves. The standing is read again
		// after the step whatever it admitted: another step (another join's, the gate's, another
		// instance's) may have let the visitor in meanwhile, and then this one lets in nobody. The
		// read also collects the admission, as the visitor is shown it in this answer.
		t, err := g.tick(ctx)
		if err != nil || t.More {
			g.wake() // its loop retries a failed step, and goes on at once after one that stopped at a limit
		}
		if err == nil {
			if again, err := s.store.Status(ctx, id, e.Visitor); err == nil {
				st = again
			}
		}
	}
	return g.view(ctx, st), nil
}

// Status returns the visitor's view; polling it counts as presence.
func (s *Service) Status(ctx context.Context, id, visitor string) (View, error) {
	st, err := s.store.Status(ctx, id, visitor)
	if err != nil {
		return View{}, err
	}
	return s.gate(id).view(ctx, st), nil
}

// Leave takes the visitor out of the room, freeing its slot if admitted.
func (s *Service) Leave(ctx context.Context, id, visitor string) error {
	left, err := s.store.Leave(ctx, id, visitor)
	if err != nil {
		return err
	}
	if left {
		g := s.gate(id)
		g.wake()
		g.hub.notify(visitor)
	}
	return nil
}

// unlink takes back a link Put wrote to a drop that left meanwhile: the room is again as it was
// (deleted if Put created it), following the drop it followed before, if any, at that drop's level.
func (s *Service) unlink(ctx context.Context, id string, old Config, created bool) {
	err := func() error {
		if created {
			return s.store.DeleteRoom(ctx, id)
		}
		if err := s.store.PutRoom(ctx, id, old); err != nil {
			return err
		}
		level := rushgate.Level{Left: -1}
		if old.Drop != "" {
			var err error
			if level, err = s.remaining(ctx, id, old.Drop); err != nil {
				return err
			}
		}
		return s.store.SetUnits(ctx, id, old.Drop, level)
	}()
	if err != nil {
		s.log.ErrorContext(ctx, "a refused link to a drop is left in place", "room", id, "drop", old.Drop, "err", err)
	}
}

// remaining returns the units left of the drop a room is to follow, refusing a drop that does not exist
// or does not sit behind the room as a config error.
func (s *Service) remaining(ctx context.Context, id, drop string) (rushgate.Level, error) {
	if s.opts.Stock == nil {
		return rushgate.Level{}, &ConfigError{"drop", "this server runs no drops"}
	}
	l, err := s.opts.Stock.Remaining(ctx, drop, id)
	if err != nil && !errors.Is(err, rushgate.ErrUnavailable) {
		return rushgate.Level{}, &ConfigError{"drop", err.Error()}
	}
	return l, err
}

// AddInvites adds invite codes to a room's list and reports how many were new.
func (s *Service) AddInvites(ctx context.Context, id string, codes []string) (int, error) {
	for _, c := range codes {
		if c == "" || len(c) > MaxInviteLen {
			return 0, &ConfigError{"codes", fmt.Sprintf("codes are 1-%d bytes", MaxInviteLen)}
		}
	}
	n, err := s.store.AddInvites(ctx, id, codes)
	if err == nil {
		rushgate.Audited(ctx, s.opts.Audit, s.log, rushgate.Entry{At: s.opts.Clock().UTC(), Kind: "room", ID: id, Action: rushgate.ActionInvites,
			Changes: []rushgate.Change{{Field: "invites", Old: json.RawMessage("null"), New: json.RawMessage(strconv.Itoa(n))}}})
	}
	return n, err
}

// Hold implements [rushgate.Gatekeeper].
func (s *Service) Hold(ctx context.Context, id, drop, visitor, admissionID string) (bool, error) {
	held, err := s.store.Hold(ctx, id, drop, visitor, admissionID)
	if errors.Is(err, ErrNotAdmitted) || errors.Is(err, ErrNotFound) {
		return false, rushgate.ErrAdmissionRequired
	}
	return held, err
}

// Unhold implements [rushgate.Gatekeeper]; the freed unit may admit the next visitor at once.
func (s *Service) Unhold(ctx context.Context, id, drop string) error {
	if err := s.store.Unhold(ctx, id, drop); err != nil {
		return err
	}
	s.gate(id).wake()
	return nil
}

// Restock implements [rushgate.Gatekeeper]. A room that follows another drop, or none, keeps its count:
// a drop's units are the room's only while it follows that drop. The config read at most about a
// second ago (see [Service.Config]) spares the store the steps of drops the room does not follow; the
// store checks again, with its config as it stands, in the same step as the change, since a room
// linked to another drop meanwhile had its count set then and must not take this one's.
func (s *Service) Restock(ctx context.Context, id, drop string, l rushgate.Level) error {
	cfg, err := s.Config(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && cfg.Drop != drop) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.Left <= 0 {
		return s.SoldOut(ctx, id, drop)
	}
	news, err := s.store.Restock(ctx, id, drop, l)
	window := [2]int64{msOr0(l.Opens), msOr0(l.Closes)}
	if g := s.gate(id); news || g.window.Swap(window) != window {
		// New units may admit the next visitors at once, and a drop opened, closed or opened again
		// changes what the line is told.
		g.wake()
	}
	return err
}

// Follows implements [rushgate.Gatekeeper], from the room's config as the store holds it, not as it
// was cached: it guards a drop's deletion, which a room linked a moment ago must stop.
func (s *Service) Follows(ctx context.Context, room, drop string) (bool, error) {
	cfg, err := s.store.Room(ctx, room)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && cfg.Drop == drop, err
}

// SoldOut implements [rushgate.Gatekeeper]: a room that follows drop stops admitting, and its waiting
// visitors' streams say sold_out at once.
func (s *Service) SoldOut(ctx context.Context, id, drop string) error {
	if err := s.store.SoldOut(ctx, id, drop); err != nil {
		return err
	}
	s.gate(id).hub.refreshAll()
	return nil
}

// Release ends an admission early so the next visitor can be admitted at once.
func (s *Service) Release(ctx context.Context, id, visitor, admissionID string) error {
	if err := s.store.Release(ctx, id, visitor, admissionID); err != nil {
		return err
	}
	s.opts.Observer.Released(id)
	g := s.gate(id)
	g.wake()
	g.hub.notify(visitor)
	return nil
}

// Active reports whether an admission is still live, for online verification.
func (s *Service) Active(ctx context.Context, id, visitor, admissionID string) (bool, error) {
	return s.store.Active(ctx, id, visitor, admissionID)
}

// Rooms lists the rooms.
func (s *Service) Rooms(ctx context.Context) ([]string, error) { return s.store.Rooms(ctx) }

// Tick runs one admission step for a room and pushes its outcome to subscribers. The gate loops call
// it; tests running a Manual service call it directly.
func (s *Service) Tick(ctx context.Context, id string) (Tick, error) {
	return s.gate(id).tick(ctx)
}

// Subscribe registers a visitor for pushed updates about a room. The caller must Close the
// subscription.
func (s *Service) Subscribe(ctx context.Context, id, visitor string) (*Subscription, error) {
	if _, err := s.store.Room(ctx, id); err != nil {
		return nil, err
	}
	return s.gate(id).hub.subscribe(visitor), nil
}

// Broadcast tells every subscriber of the room to refresh its view; the push loop does it every
// second after changes, and Manual tests call it by hand.
func (s *Service) Broadcast(id string) { s.gate(id).hub.broadcast() }

// Watcher is implemented by stores that several instances share. Watch reports, until ctx ends, the
// visitors whose state any instance changed, so that this instance can push to their streams at once
// rather than at its next paced refresh; Everyone stands for all of the room's visitors. The channel is
// closed when ctx ends or the watch fails.
type Watcher interface {
	Watch(ctx context.Context, id string) <-chan []string
}

// Everyone is the visitor a Watcher reports when every visitor of the room changed at once (it sold
// out); it is not a valid visitor id.
const Everyone = "*"

// Pinger is implemented by stores that can be unreachable, so that health checks can ask them.
type Pinger interface {
	// Ping returns an error wrapping rushgate.ErrUnavailable when the backend does not answer, and
	// rushgate.ErrWritesRefused when it answers but refuses writes.
	Ping(ctx context.Context) error
}

// Ready reports whether the store answers, for health checks. An in-process store is always ready.
func (s *Service) Ready(ctx context.Context) error {
	if p, ok := s.store.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// msOr0 is t in Unix milliseconds, 0 for the zero time (none).
func msOr0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
