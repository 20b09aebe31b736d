package memstore

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rushgate/rushgate"
)

// History keeps each entity's samples in memory, for the last [rushgate.HistoryKeep]. The embedded
// backend is one process, so its history needs no sharing; it saves it to a file every minute and at
// its stop, and loads it at its start (see Backend), so that a restart keeps the charts of the hour.
type History struct {
	clock func() time.Time

	mu      sync.Mutex
	samples map[string][]rushgate.Sample // entity -> samples, oldest first
}

// NewHistory returns an empty history; a nil clock means time.Now.
func NewHistory(clock func() time.Time) *History {
	if clock == nil {
		clock = time.Now
	}
	return &History{clock: clock, samples: make(map[string][]rushgate.Sample)}
}

// Sample implements [rushgate.History].
func (h *History) Sample(_ context.Context, entity string, figures []int64) error {
	at := h.clock().UTC().Truncate(time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.samples[entity]
	if n := len(s); n > 0 && !s[n-1].At.Before(at) {
		return nil
	}
	// Old samples go in bulk once they are twice too many, so that each Sample costs O(1) amortized.
	if len(s) >= 2*rushgate.HistoryLen {
		s = slices.Clone(s[len(s)-rushgate.HistoryLen+1:])
	}
	h.samples[entity] = append(s, rushgate.Sample{At: at, Figures: slices.Clone(figures)})
	return nil
}

// Since implements [rushgate.History].
func (h *History) Since(_ context.Context, entity string, since time.Time) ([]rushgate.Sample, error) {
	keep := h.clock().Add(-rushgate.HistoryKeep - time.Minute)
	if since.Before(keep) {
		since = keep
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.samples[entity]
	i, _ := slices.BinarySearchFunc(s, since, func(x rushgate.Sample, t time.Time) int {
		if x.At.After(t) {
			return 1
		}
		return -1
	})
	return slices.Clone(s[i:]), nil
}

// Forget implements [rushgate.History].
func (h *History) Forget(_ context.Context, entity string) error {
	h.mu.Lock()
	delete(h.samples, entity)
	h.mu.Unlock()
	return nil
}

// savedHistory is History's file: for each entity its samples, each the second it was taken (unix)
// followed by its figures, oldest first; gzipped JSON, a few hundred kilobytes for an hour of a dozen
// entities.
type savedHistory map[string][][]int64

// Save writes every entity's samples to w, as Load reads them.
func (h *History) Save(w io.Writer) error {
	h.mu.Lock()
	out := make(savedHistory, len(h.samples))
	for entity, s := range h.samples {
		rows := make([][]int64, len(s))
		for i, x := range s {
			rows[i] = append([]int64{x.At.Unix()}, x.Figures...)
		}
		out[entity] = rows
	}
	h.mu.Unlock()
	z := gzip.NewWriter(w)
	if err := json.NewEncoder(z).Encode(out); err != nil {
		return err
	}
	return z.Close()
}

// Load adds the samples Save wrote to r, but for those older than [rushgate.HistoryKeep], to a history
// that has none of those entities yet. It refuses a file it cannot read whole, and takes nothing from it.
func (h *History) Load(r io.Reader) error {
	z, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var in savedHistory
	if err := json.NewDecoder(io.LimitReader(z, maxHistoryFile)).Decode(&in); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	// Read to the end, where gzip checks what it unzipped against its checksum.
	if _, err := io.Copy(io.Discard, io.LimitReader(z, maxHistoryFile)); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	keep := h.clock().Add(-rushgate.HistoryKeep).Unix()
	loaded := make(map[string][]rushgate.Sample, len(in))
	for entity, rows := range in {
		var s []rushgate.Sample
		last := int64(math.MinInt64)
		for _, row := range rows {
			if len(row) == 0 || row[0] <= last {
				return fmt.Errorf("history: %s: samples out of order", entity)
			}
			last = row[0]
			if row[0] >= keep {
				s = append(s, rushgate.Sample{At: time.Unix(row[0], 0).UTC(), Figures: slices.Clone(row[1:])})
			}
		}
		if len(s) > rushgate.HistoryLen {
			s = s[len(s)-rushgate.HistoryLen:]
		}
		if len(s) > 0 {
			loaded[entity] = s
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for entity, s := range loaded {
		if _, ok := h.samples[entity]; !ok {
			h.samples[entity] = s
		}
	}
	return nil
}

// maxHistoryFile bounds what Load reads unzipped: far above an hour of samples of hundreds of entities,
// far below what would strain the instance's memory.
const maxHistoryFile = 256 << 20
