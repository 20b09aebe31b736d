package memstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/record"
	"github.com/rushgate/rushgate/internal/storetest"
)

// sampled gives b's history a clock ten minutes back that moves a second a sample, and takes n
// samples of entity, the figures of sample i being {i, 2i}.
func sampled(t *testing.T, b *Backend, c *storetest.Clock, entity string, n int) {
	t.Helper()
	b.history.clock = c.Now
	for i := range n {
		if err := b.history.Sample(context.Background(), entity, []int64{int64(i), int64(2 * i)}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
}

func since(t *testing.T, b *Backend, entity string) []rushgate.Sample {
	t.Helper()
	s, err := b.history.Since(context.Background(), entity, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHistoryOutlivesARestart: the charts of the last hour survive a stop and a start, and a crash
// keeps what the last save had (the writer saves every minute).
func TestHistoryOutlivesARestart(t *testing.T) {
	dir, db, b := journalFixture(t)
	c := storetest.NewClock(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	sampled(t, b, c, "room:r", 120)
	sampled(t, b, c, "drop:d", 30)
	room, drop := since(t, b, "room:r"), since(t, b, "drop:d")
	if len(room) != 120 || len(drop) != 30 {
		t.Fatalf("sampled %d and %d", len(room), len(drop))
	}
	b.Close()

	b2, err := Open(context.Background(), db, dir, record.FsyncAlways, b.log)
	if err != nil {
		t.Fatal(err)
	}
	if got := since(t, b2, "room:r"); !reflect.DeepEqual(got, room) {
		t.Fatalf("after a restart the room's history is %d samples (first %v), want %d (first %v)", len(got), got[:min(1, len(got))], len(room), room[0])
	}
	if got := since(t, b2, "drop:d"); !reflect.DeepEqual(got, drop) {
		t.Fatalf("after a restart the drop's history is %v, want %v", got, drop)
	}

	// A crash keeps what the last save had, not what came after it.
	b2.saveHistory()
	sampled(t, b2, c, "auction:a", 5)
	b3 := reopen(t, dir, db, b2)
	if got := since(t, b3, "room:r"); len(got) != 120 {
		t.Fatalf("after a crash the room's history is %d samples, want 120", len(got))
	}
	if got := since(t, b3, "auction:a"); len(got) != 0 {
		t.Fatalf("after a crash the history has samples taken after its last save: %v", got)
	}
}

// TestHistoryFileDamaged: a history file that cannot be read is set aside and the instance starts with
// empty charts, rather than not at all.
func TestHistoryFileDamaged(t *testing.T) {
	dir, db, b := journalFixture(t)
	crash(b)
	path := filepath.Join(dir, HistoryFile)
	if err := os.WriteFile(path, []byte("not gzip at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(context.Background(), db, dir, record.FsyncAlways, b.log)
	if err != nil {
		t.Fatalf("a damaged history kept the backend from opening: %v", err)
	}
	t.Cleanup(func() { crash(b2) })
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatalf("the damaged file was not set aside: %v", err)
	}
	if got := since(t, b2, "room:r"); len(got) != 0 {
		t.Fatalf("history from a damaged file: %v", got)
	}
}

// TestHistoryLoadKeepsTheHour: samples older than the hour kept are left behind, and a file whose
// samples are out of order is refused whole.
func TestHistoryLoadKeepsTheHour(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	h := NewHistory(func() time.Time { return now })
	file := func(rows [][]int64) *bytes.Buffer {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		if err := json.NewEncoder(z).Encode(savedHistory{"room:r": rows}); err != nil {
			t.Fatal(err)
		}
		z.Close()
		return &b
	}
	hourAgo := now.Add(-rushgate.HistoryKeep).Unix()
	if err := h.Load(file([][]int64{{hourAgo - 1, 1}, {hourAgo, 2}, {now.Unix(), 3}})); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Since(context.Background(), "room:r", time.Time{})
	if len(got) != 2 || got[0].Figures[0] != 2 || got[1].Figures[0] != 3 {
		t.Fatalf("loaded %v, want the samples of the last hour", got)
	}
	h = NewHistory(func() time.Time { return now })
	if err := h.Load(file([][]int64{{now.Unix(), 1}, {now.Unix() - 5, 2}})); err == nil {
		t.Fatal("samples out of order loaded")
	}
	if got, _ := h.Since(context.Background(), "room:r", time.Time{}); len(got) != 0 {
		t.Fatalf("a refused file left samples: %v", got)
	}
}

// FuzzHistoryLoad: whatever a history file holds, Load neither panics nor keeps part of a file it
// refuses, and what it keeps it saves and loads again unchanged.
func FuzzHistoryLoad(f *testing.F) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	h := NewHistory(func() time.Time { return now })
	for i := range 3 {
		_ = h.Sample(context.Background(), "room:r", []int64{int64(i), -int64(i)})
		now = now.Add(time.Second)
	}
	var seed bytes.Buffer
	if err := h.Save(&seed); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		h := NewHistory(func() time.Time { return now })
		if err := h.Load(bytes.NewReader(b)); err != nil {
			if len(h.samples) != 0 {
				t.Fatalf("a refused file left samples: %v", h.samples)
			}
			return
		}
		var again bytes.Buffer
		if err := h.Save(&again); err != nil {
			t.Fatal(err)
		}
		h2 := NewHistory(func() time.Time { return now })
		if err := h2.Load(&again); err != nil {
			t.Fatalf("a saved history does not load: %v", err)
		}
		if !reflect.DeepEqual(h.samples, h2.samples) {
			t.Fatalf("saved and loaded again: %v, want %v", h2.samples, h.samples)
		}
	})
}

// TestHistoryLoadChecksTheFile: a file whose samples read well but whose checksum does not match (a
// flipped bit in its end) is refused.
func TestHistoryLoadChecksTheFile(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	h := NewHistory(func() time.Time { return now })
	_ = h.Sample(context.Background(), "room:r", []int64{1, 2})
	var b bytes.Buffer
	if err := h.Save(&b); err != nil {
		t.Fatal(err)
	}
	file := b.Bytes()
	file[len(file)-5] ^= 1 // in the CRC-32 of gzip's trailer
	if err := NewHistory(func() time.Time { return now }).Load(bytes.NewReader(file)); err == nil {
		t.Fatal("a file with a wrong checksum loaded")
	}
}
