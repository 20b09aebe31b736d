package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// Ping implements [room.Pinger] with a write, not a PING: a Redis full at its maxmemory still answers
// PING while it refuses every join, claim and bid, and a health check should say so
// (rushgate.ErrWritesRefused). With Options.Replicas the write waits for them as a claim does, so
// that a health check says when claims and bids go unconfirmed (rushgate.ErrUnconfirmed).
//
// On a Cluster it writes to every master, each in a slot of its own, since one master down stops only
// the rooms, drops and auctions whose slots it serves: a master down or refusing writes while others
// take them, or slots no master serves, is rushgate.ErrPartlyUnavailable, naming them.
func (s *Rooms) Ping(ctx context.Context) error {
	if !s.cluster {
		return s.pingKey(ctx, s.keys.health())
	}
	masters, unserved, err := s.masters(ctx)
	if err != nil {
		return err
	}
	errs := make([]error, len(masters))
	var wg sync.WaitGroup
	for i, m := range masters {
		wg.Go(func() { errs[i] = s.pingKey(ctx, s.healthKey(m.slot)) })
	}
	wg.Wait()
	return judge(masters, errs, unserved)
}

// judge sums up the health checks of a Cluster's masters (errs[i] is masters[i]'s) and the slots no
// master serves: nil when all is well, the first master's error when every master fails (what a
// standalone Redis would say), rushgate.ErrPartlyUnavailable naming the masters that fail while others
// answer, and rushgate.ErrUnconfirmed naming those whose replicas lag while every master answers.
func judge(masters []master, errs []error, unserved int) error {
	var down, behind []string
	var first error
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, rushgate.ErrUnconfirmed):
			behind = append(behind, masters[i].addr)
		default:
			down = append(down, masters[i].addr+": "+strings.TrimPrefix(err.Error(), rushgate.ErrUnavailable.Error()+": "))
			if first == nil {
				first = err
			}
		}
	}
	var parts []string
	if len(down) > 0 {
		if len(down) == len(masters) {
			return first
		}
		parts = append(parts, fmt.Sprintf("%d of %d masters: %s", len(down), len(masters), strings.Join(down, "; ")))
	}
	if unserved > 0 {
		parts = append(parts, strconv.Itoa(unserved)+" slots served by no master")
	}
	switch {
	case len(parts) > 0:
		return fmt.Errorf("%w: %s", rushgate.ErrPartlyUnavailable, strings.Join(parts, "; "))
	case len(behind) > 0:
		return fmt.Errorf("%w: %s", rushgate.ErrUnconfirmed, strings.Join(behind, ", "))
	}
	return nil
}

// pingKey writes the health key key, expiring a minute later, and with Options.Replicas waits for them.
func (s *Rooms) pingKey(ctx context.Context, key string) error {
	set := s.rdb.B().Set().Key(key).Value(strconv.FormatInt(time.Now().UnixMilli(), 10)).Px(time.Minute).Build()
	if s.replicas == 0 {
		_, err := s.do(ctx, set)
		return err
	}
	return s.confirm(ctx, set, key)
}

// healthKey returns keys.healthIn(slot), found once per slot.
func (s *Rooms) healthKey(slot uint16) string {
	if k, ok := s.healthKeys.Load(slot); ok {
		return k.(string)
	}
	k := s.keys.healthIn(slot)
	s.healthKeys.Store(slot, k)
	return k
}

// master is a Cluster master as CLUSTER SLOTS names it, with the first slot it serves.
type master struct {
	addr string
	slot uint16
}

// masters asks the Cluster's nodes, one after another until one answers, which masters serve its
// slots, and how many slots none serves. Every node failing is the error of the last.
func (s *Rooms) masters(ctx context.Context) (_ []master, unserved int, _ error) {
	nodes := s.rdb.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	err := rushgate.ErrUnavailable
	for _, addr := range addrs {
		node := nodes[addr]
		nctx, cancel := context.WithTimeout(ctx, s.timeout)
		ranges, e := node.Do(nctx, node.B().ClusterSlots().Build()).ToArray()
		cancel()
		if e != nil {
			err = mapError(e)
			continue
		}
		first := map[string]uint16{}
		served := 0
		for _, r := range ranges {
			f, _ := r.ToArray()
			if len(f) < 3 {
				continue
			}
			lo, _ := f[0].AsInt64()
			hi, _ := f[1].AsInt64()
			m, _ := f[2].ToArray()
			if len(m) < 2 {
				continue
			}
			ip, _ := m[0].ToString()
			port, _ := m[1].AsInt64()
			owner := ip + ":" + strconv.FormatInt(port, 10)
			if at, ok := first[owner]; !ok || uint16(lo) < at {
				first[owner] = uint16(lo)
			}
			served += int(hi-lo) + 1
		}
		if len(first) == 0 {
			err = fmt.Errorf("%w: %s serves no slots (CLUSTER SLOTS)", rushgate.ErrUnavailable, addr)
			continue
		}
		out := make([]master, 0, len(first))
		for owner, slot := range first {
			out = append(out, master{owner, slot})
		}
		slices.SortFunc(out, func(a, b master) int { return strings.Compare(a.addr, b.addr) })
		return out, clusterSlots - served, nil
	}
	return nil, 0, err
}
