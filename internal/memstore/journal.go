package memstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rushgate/rushgate/internal/room"
)

// The embedded backend keeps its lines in memory. So that a crash (kill -9, a power loss) does not
// send every waiting visitor to the back of a new line, every change to a line is appended to a
// journal: a visitor placed, gone from the line, admitted, collecting its admission, or losing it; and
// so is each one-time thing spent (a challenge's solution, see Spent), which a restart must not forget. The
// records are buffered under the room's lock (a few bytes, no I/O) and written and fsync'd by one
// goroutine at least once a second, like Redis's appendfsync everysec: a crash loses at most the last
// second of line changes. Claims and bids do not go through it; they are committed before they are
// answered (commit.go).
//
// The journal applies to one snapshot of the lines: its first record names the snapshot's generation.
// A start loads the snapshot, replays the journal onto it, cuts a torn or damaged tail (with a warning,
// never a refusal to start), then compacts: it writes the lines as a snapshot of the next generation
// and starts an empty journal for it. A graceful stop compacts the same way. A journal whose generation
// is not the snapshot's was already folded into it (a crash between the two writes) and is ignored.

// Journal record kinds.
const (
	recHeader  = 'H' // generation
	recJoin    = 'J' // room, visitor, pre, draw
	recGone    = 'R' // room, visitor[, idle]: out of the line (left, idle, or admitted: an A follows)
	recAdmit   = 'A' // room, visitor, admission id, expires (ns), at (ns; 0 if no rate window counts it)[, cut (ns): the window's older times dropped]
	recCollect = 'C' // room, visitor, expires (ns)
	recEnd     = 'X' // room, visitor[, lapsed]: the admission ended (released, left, expired; lapsed: uncollected)
	recDelete  = 'D' // room, "": the room was deleted, with its line and admissions
	recSpend   = 'S' // id, minute: a one-time thing used, remembered until the minute ends (see Spent)
)

// maxRecord bounds one record: ids are short, so anything longer is damage.
const maxRecord = 4096

// journal buffers line changes and writes them to its file. Its methods may be called with room
// locks held; none does I/O but flush.
type journal struct {
	mu     sync.Mutex
	buf    []byte
	paused bool // while the journal is replayed, its changes are not journaled again
	nosync bool // --fsync no: written, not fsync'd

	fmu  sync.Mutex // serialises flushes and compaction's swap of the file
	f    *os.File
	size int64 // bytes written to f
}

// record appends one record: a kind, then fields, each a string or an int64.
func (j *journal) record(kind byte, fields ...any) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.paused {
		return
	}
	// Encoded in place behind room for its length and checksum, which follow once it is whole.
	start := len(j.buf)
	j.buf = append(j.buf, make([]byte, 8)...)
	j.buf = append(j.buf, kind)
	for _, f := range fields {
		switch v := f.(type) {
		case string:
			j.buf = binary.AppendUvarint(j.buf, uint64(len(v)))
			j.buf = append(j.buf, v...)
		case int64:
			j.buf = binary.AppendVarint(j.buf, v)
		case bool:
			b := byte(0)
			if v {
				b = 1
			}
			j.buf = append(j.buf, b)
		}
	}
	p := j.buf[start+8:]
	binary.LittleEndian.PutUint32(j.buf[start:], uint32(len(p)))
	binary.LittleEndian.PutUint32(j.buf[start+4:], crc32.ChecksumIEEE(p))
}

// take returns what is buffered and empties the buffer.
func (j *journal) take() []byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	buf := j.buf
	j.buf = nil
	return buf
}

// flush writes what is buffered and fsyncs it.
func (j *journal) flush() error { return j.write(j.take()) }

// write writes buf to the journal's file and fsyncs it. A write that fails (a full disk) is undone,
// so that no torn record hides the ones after it, and buf goes back in front of the buffer, to be
// written at the next flush.
func (j *journal) write(buf []byte) error {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	if len(buf) == 0 || j.f == nil {
		return nil
	}
	if _, err := j.f.Write(buf); err != nil {
		terr := j.f.Truncate(j.size)
		j.mu.Lock()
		j.buf = append(buf, j.buf...)
		j.mu.Unlock()
		return fmt.Errorf("memstore: writing the line journal: %w", errors.Join(err, terr))
	}
	j.size += int64(len(buf))
	if j.nosync {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("memstore: syncing the line journal: %w", err)
	}
	return nil
}

// run flushes the journal, then runs also, every interval until stop is closed, then once more.
// also is where the owner compacts, so that no flush runs meanwhile.
func (j *journal) run(stop <-chan struct{}, every time.Duration, also func() error, warn func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var stopping bool
		select {
		case <-stop:
			stopping = true
		case <-t.C:
		}
		if err := errors.Join(j.flush(), also()); err != nil {
			warn(err)
		}
		if stopping {
			return
		}
	}
}

// jrecord is one journal record read back.
type jrecord struct {
	kind   byte
	fields []byte
}

// str and num read a record's fields in order.
func (e *jrecord) str() (string, bool) {
	n, k := binary.Uvarint(e.fields)
	if k <= 0 || uint64(len(e.fields)-k) < n {
		return "", false
	}
	s := string(e.fields[k : k+int(n)])
	e.fields = e.fields[k+int(n):]
	return s, true
}

func (e *jrecord) num() (int64, bool) {
	v, k := binary.Varint(e.fields)
	if k <= 0 {
		return 0, false
	}
	e.fields = e.fields[k:]
	return v, true
}

func (e *jrecord) flag() (bool, bool) {
	if len(e.fields) == 0 {
		return false, false
	}
	b := e.fields[0]
	e.fields = e.fields[1:]
	return b == 1, b <= 1
}

// errTorn marks the end of the good part of a journal.
var errTorn = errors.New("memstore: the line journal ends in a torn or damaged record")

// readJournal calls apply for each good record of r and returns how many bytes they take; a record
// cut short or failing its checksum ends the good part with errTorn.
func readJournal(r io.Reader, apply func(jrecord) error) (int64, error) {
	br := bufio.NewReader(r)
	var good int64
	var head [8]byte
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return good, nil
			}
			return good, errTorn
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n == 0 || n > maxRecord {
			return good, errTorn
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil || crc32.ChecksumIEEE(p) != binary.LittleEndian.Uint32(head[4:]) {
			return good, errTorn
		}
		if err := apply(jrecord{kind: p[0], fields: p[1:]}); err != nil {
			return good, err
		}
		good += 8 + int64(n)
	}
}

// replay applies the records of a journal for the rooms' snapshot generation, read from r, and returns
// how many bytes of r are good. A journal of another generation changes nothing: the snapshot holds
// it already. Records of rooms that are gone are skipped; every record is applied as it was first made,
// so the lines end as they were when the last good record was written.
func (s *Rooms) replay(r io.Reader) (int64, error) {
	now := unixNano(s.clock())
	header := true
	errOther := errors.New("another generation")
	good, err := readJournal(r, func(e jrecord) error {
		if header {
			header = false
			gen, ok := e.num()
			if e.kind != recHeader || !ok {
				return errTorn
			}
			if gen != s.gen {
				return errOther
			}
			return nil
		}
		s.apply(e, now)
		return nil
	})
	switch {
	case errors.Is(err, errOther):
		return 0, nil
	case header && err == nil: // empty
		return 0, nil
	}
	return good, err
}

// apply applies one line change; a record that does not parse is skipped.
func (s *Rooms) apply(e jrecord, now int64) {
	if e.kind == recSpend {
		id, ok1 := e.str()
		m, ok2 := e.num()
		if ok1 && ok2 && s.spent != nil {
			s.spent.load(id, m)
		}
		return
	}
	id, ok1 := e.str()
	visitor, ok2 := e.str()
	if !ok1 || !ok2 {
		return
	}
	rs, err := s.lookup(id)
	if err != nil {
		return
	}
	k := keyOf(visitor)
	var prev place
	var moved bool
	rs.mu.Lock()
	switch e.kind {
	case recJoin:
		pre, ok := e.flag()
		draw, ok2 := e.num()
		if _, in := rs.waiting.find(&k); ok && ok2 && !in {
			rs.joinedTotal++
			_, prev, moved = rs.waiting.add(visitor, &k, now, pre, draw)
		}
	case recGone:
		// The flags came later: a journal written before them counts no idle waiter or lapsed
		// admission, as it did.
		if rs.leaveLine(visitor) {
			if idle, ok := e.flag(); ok && idle {
				rs.idleTotal++
			}
		}
	case recAdmit:
		aid, ok := e.str()
		exp, ok2 := e.num()
		at, ok3 := e.num()
		if ok && ok2 && ok3 {
			rs.leaveLine(visitor)
			rs.admissions[visitor] = &room.Admission{ID: aid, ExpiresAt: time.Unix(0, exp).UTC()}
			rs.active.Add(visitor, exp)
			rs.admittedTotal++
			// The next admission's id follows the last one's, never repeats it: ids are tokens' jti.
			if n, ok := strings.CutPrefix(aid, rs.epoch+"."); ok {
				if seq, err := strconv.ParseInt(n, 10, 64); err == nil {
					rs.admissionSeq = max(rs.admissionSeq, seq)
				}
			}
			if at > 0 { // it counted toward the rate the room had then, whatever its config now
				if cut, ok := e.num(); ok { // written since the grant drops what no longer counts
					rs.window = after(rs.window, cut)
				}
				rs.window = append(rs.window, at)
			}
		}
	case recCollect:
		exp, ok := e.num()
		if a := rs.admissions[visitor]; a != nil && ok {
			a.Collected, a.ExpiresAt = true, time.Unix(0, exp).UTC()
			rs.active.Add(visitor, exp)
		}
	case recEnd:
		if rs.endAdmission(visitor, false) {
			if lapsed, ok := e.flag(); ok && lapsed {
				rs.graceTotal++
			}
		}
	case recDelete: // what follows is of the room created again under the id, which starts as new
		rs.waiting.forget()
		rs.waiting = newLine(s.waiting, rs.serial)
		rs.active, rs.admissions, rs.window = newZset(), make(map[string]*room.Admission), nil
		rs.epoch, rs.admissionSeq = newEpoch(), 0
		rs.admittedTotal, rs.joinedTotal, rs.idleTotal, rs.graceTotal = 0, 0, 0, 0
	}
	rs.mu.Unlock()
	if moved {
		s.leaveMoved(prev, &k, visitor)
	}
}
