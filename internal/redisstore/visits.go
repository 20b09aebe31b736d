package redisstore

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/redis/rueidis"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/room"
)

// visit is one join or status read in a batch of its room (see batch.go).
type visit struct {
	visitor string
	mode    string // "new", "join", "fenced" or "status", as visit.lua takes it
	arg     string // the origin of a "join", the fence of a "fenced" join, else empty
}

// visited is one visit's answer.
type visited struct {
	status room.Status
	prev   string
	err    error
}

// visit runs a join or status read in the room's next batch; for a join (mode "join") on standalone
// Redis it also returns the other lines the visitor may still be in, space-separated (see point_line in
// lib.lua).
func (s *Rooms) visit(ctx context.Context, id, visitor, mode, arg string) (room.Status, string, error) {
	r, err := s.visits.do(ctx, id, visit{visitor: visitor, mode: mode, arg: arg})
	if err != nil {
		return room.Status{}, "", err
	}
	return r.status, r.prev, r.err
}

// sendVisits runs one batch of a room's visits through the visit script.
func (s *Rooms) sendVisits(ctx context.Context, id string, batch []visit) ([]visited, error) {
	keys := s.keys.room(id)
	args := make([]string, 3, 3+4*len(batch))
	args[0], args[1], args[2] = s.now(), id, lineTTLArg
	for _, c := range batch {
		if c.mode == "join" && !s.cluster {
			keys = append(keys, s.keys.line(c.visitor))
		}
		args = append(args, c.visitor, c.mode, itoa(1+mrand.Int64N(preQueueSpan-1)), c.arg)
	}
	v, err := s.run(ctx, visitScript, keys, args...)
	if s.batched != nil {
		s.batched(len(batch))
	}
	if err != nil {
		return nil, err
	}
	r, _ := v.ToArray()
	switch {
	case len(r) == 1 && integer(r[0]) == -1:
		return nil, room.ErrNotFound
	case len(r) != 3*len(batch):
		return nil, fmt.Errorf("redisstore: visit script answered %d fields for %d visitors", len(r), len(batch))
	}
	out := make([]visited, len(batch))
	for i := range out {
		out[i].status, out[i].prev, out[i].err = visitStatus(r[3*i : 3*i+3])
	}
	return out, nil
}

// errSuperseded refuses a join on Cluster that a later join of the same visitor overtook while it
// stalled (see lua/line.lua): the later join decides where the visitor waits.
var errSuperseded = fmt.Errorf("%w: a later join of this visitor came first", rushgate.ErrUnavailable)

// visitStatus reads one visitor's three fields of the visit script's answer.
func visitStatus(f []rueidis.RedisMessage) (room.Status, string, error) {
	switch integer(f[0]) {
	case 1:
		prev, _ := f[2].ToString()
		return room.Status{State: room.StateWaiting, Position: integer(f[1])}, prev, nil
	case 2:
		aid, _ := f[1].ToString()
		return room.Status{State: room.StateAdmitted, Admission: room.Admission{
			ID: aid, ExpiresAt: time.UnixMilli(integer(f[2])).UTC(), Collected: true,
		}}, "", nil
	case 3:
		return room.Status{}, "", errSuperseded
	case 4:
		return room.Status{}, "", room.ErrClosed
	case 5:
		return room.Status{State: room.StateSoldOut}, "", nil
	case 6:
		return room.Status{}, "", rushgate.ErrSoldOut
	default:
		return room.Status{State: room.StateNone}, "", nil
	}
}
