package rushgate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// ErrStale refuses a step that named a revision of a drop's or an auction's config other than the one
// the store holds: the config was replaced since the caller read it. Nothing was changed; the caller
// reads the config again and decides anew.
var ErrStale = errors.New("rushgate: the config changed since it was read")

// NewRevision returns a fresh revision to store with a config. It is random rather than counted, so
// that a config deleted and created again under the same id never repeats an old revision.
func NewRevision() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Configs caches the configs of drops or auctions with the revision each was read at. A claim or a bid
// is checked against the cached config and names its revision to the store, which refuses it with
// ErrStale if the config has changed since; the rules are thus checked without a read per request and
// never against an outdated config. The zero value is empty and ready.
type Configs[C any] struct {
	mu sync.Mutex
	m  map[string]revised[C]
}

type revised[C any] struct {
	rev string
	cfg C
}

// maxConfigs bounds a cache. Past it an arbitrary entry makes room, which costs only a read later.
const maxConfigs = 4096

// Get returns the cached config of id and its revision.
func (c *Configs[C]) Get(id string) (cfg C, rev string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[id]
	return r.cfg, r.rev, ok
}

// Put caches cfg as id's config at revision rev.
func (c *Configs[C]) Put(id, rev string, cfg C) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]revised[C])
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= maxConfigs {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = revised[C]{rev: rev, cfg: cfg}
}

// Forget drops id's config, after it was deleted or found stale.
func (c *Configs[C]) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// staleTries bounds how often Run reads a config again because the store found it stale: more than a
// replacement or two in one request's time is not a race but a loop.
const staleTries = 3

// Run calls step with id's config and its revision: the cached one, or one read with read when none is
// cached or step found the cached one stale (ErrStale). A config deleted after it was cached needs no
// care: the store answers not found, and one created again has a new revision.
func (c *Configs[C]) Run(id string, read func() (C, string, error), step func(cfg C, rev string) error) error {
	for try := 1; ; try++ {
		cfg, rev, ok := c.Get(id)
		if !ok {
			var err error
			if cfg, rev, err = read(); err != nil {
				return err
			}
			c.Put(id, rev, cfg)
		}
		err := step(cfg, rev)
		if !errors.Is(err, ErrStale) {
			return err
		}
		c.Forget(id)
		if try == staleTries {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
}
