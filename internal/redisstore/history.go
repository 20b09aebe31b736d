package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
)

// History keeps per-second samples in one list per entity, in the entity's slot, shared by every
// instance: the script keeps the first sample of each second by Redis's clock.
type History struct{ *conn }

// Sample implements [rushgate.History].
func (h History) Sample(ctx context.Context, entity string, figures []int64) error {
	var b strings.Builder
	for i, f := range figures {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(itoa(f))
	}
	ttl := 2 * rushgate.HistoryKeep
	_, err := h.run(ctx, historyScript, []string{h.keys.history(entity)}, h.now(), b.String(),
		strconv.Itoa(rushgate.HistoryLen), itoa(ttl.Milliseconds()))
	return err
}

// Since implements [rushgate.History]. Samples are a second apart or more, so those after since are
// among the last (now - since) seconds' worth of the list: it reads no more than that.
func (h History) Since(ctx context.Context, entity string, since time.Time) ([]rushgate.Sample, error) {
	now := time.Now()
	if h.clock != nil {
		now = h.clock()
	}
	n := int64(now.Sub(since)/time.Second) + 2
	n = max(1, min(n, int64(rushgate.HistoryLen)))
	m, err := h.do(ctx, h.rdb.B().Lrange().Key(h.keys.history(entity)).Start(-n).Stop(-1).Build())
	if err != nil {
		return nil, err
	}
	rows, _ := m.AsStrSlice()
	out := make([]rushgate.Sample, 0, len(rows))
	for _, row := range rows {
		parts := strings.Split(row, ",")
		sec, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			continue
		}
		s := rushgate.Sample{At: time.Unix(sec, 0).UTC(), Figures: make([]int64, len(parts)-1)}
		if !s.At.After(since) {
			continue
		}
		for i, p := range parts[1:] {
			s.Figures[i], _ = strconv.ParseInt(p, 10, 64)
		}
		out = append(out, s)
	}
	return out, nil
}

// Forget implements [rushgate.History].
func (h History) Forget(ctx context.Context, entity string) error {
	_, err := h.do(ctx, h.rdb.B().Del().Key(h.keys.history(entity)).Build())
	return err
}
