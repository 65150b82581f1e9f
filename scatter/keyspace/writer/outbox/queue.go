package outbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// segment is the in-memory summary of one segment file.
type segment struct {
	path  string
	first uint64 // Seq of its first record
	count uint64 // records in it
	size  int64  // bytes: the end of its last record
	base  int64  // logical position of its first record (see queue.endL)
	marks []mark // an index: every markStride bytes, from the first record
}

// last is the Seq of the segment's last record (first-1 when empty).
func (s *segment) last() uint64 { return s.first + s.count - 1 }

// pos is the logical position of offset off of s: positions run on
// across segments, counting record bytes only.
func (s *segment) pos(off int64) int64 { return s.base + off - segHeaderSize }

func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, segSuffix) }

// queue is one destination's queue: a directory of segment files and an
// ack file.
//
// Lock order: syncMu, then mu. Files are closed only with both held, so
// a sync that has released mu to fsync a file can count on it staying
// open.
type queue struct {
	o      *Outbox
	name   string
	dir    string
	stream uint64 // the queue's stream id: its own, or the outbox's (a queue of before)

	// syncMu serializes syncs, ack writes, segment deletions and the
	// closing of files.
	syncMu  sync.Mutex
	ackf    *os.File // under syncMu
	ackSlot int      // the slot holding the persisted ack, -1 if none

	mu       sync.Mutex
	closed   bool
	gone     bool // removed: out of the outbox's map, its directory deleted
	segs     []*segment
	w        *os.File   // the last segment's file, open while segs is not empty
	wDirty   bool       // w was written since its last fsync
	dirDirty bool       // files were created in dir since its last fsync
	retired  []*os.File // earlier segments' files, fsynced, for syncMu holders to close
	rseg     *segment   // the sealed segment rf reads
	rf       *os.File
	cur      mark     // where record cur.seq starts in curSeg (a read cursor)
	curSeg   *segment //
	head     uint64   // last Seq appended
	acked    uint64   // last Seq acknowledged
	persist  uint64   // last Seq acknowledged in the ack file
	endL     int64    // logical position after the last record
	ackL     int64    // logical position of record acked+1
	oldest   uint64   // epoch of record acked+1
	notify   chan struct{}
	buf      []byte
}

func newQueue(o *Outbox, name, dir string, stream uint64) *queue {
	return &queue{o: o, name: name, dir: dir, stream: stream, ackSlot: -1, notify: make(chan struct{})}
}

// loadQueue reads a queue directory at Open. A queue without a stream
// file of its own was made before queues had one: its records are
// numbered in the outbox's stream. One that such an outbox removed (its
// marker file, no segments) comes back with gone set, for Open to delete.
func (o *Outbox) loadQueue(name, dir string) (_ *queue, err error) {
	stream, err := readStream(filepath.Join(dir, streamFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		stream = o.stream
	case err != nil:
		return nil, err
	}
	q := newQueue(o, name, dir, stream)
	defer func() {
		if err != nil {
			q.closeFiles()
		}
	}()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: open queue %q: %w", name, err)
	}
	var firsts []uint64
	marker := false
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == ackFile:
			f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR, 0)
			if err != nil {
				return nil, fmt.Errorf("outbox: open queue %q: %w", name, err)
			}
			q.ackf = f
			b := make([]byte, ackSlot1+ackSlotSize)
			k, err := f.ReadAt(b, 0)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("outbox: read %s: %w", filepath.Join(dir, n), err)
			}
			q.persist, q.ackSlot = decodeAck(b[:k])
		case n == removedFile:
			marker = true
		case strings.HasSuffix(n, segSuffix):
			first, err := strconv.ParseUint(strings.TrimSuffix(n, segSuffix), 10, 64)
			if err != nil || first == 0 {
				return nil, fmt.Errorf("%w: %s: not a segment name", ErrCorrupt, filepath.Join(dir, n))
			}
			firsts = append(firsts, first)
		}
	}
	slices.Sort(firsts)
	q.acked = q.persist
	q.head = q.persist
	for i, first := range firsts {
		path := filepath.Join(dir, segName(first))
		if i+1 < len(firsts) && firsts[i+1] <= q.acked+1 {
			// Every record in it is acknowledged: a deletion a kill
			// interrupted.
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("outbox: open queue %q: %w", name, err)
			}
			continue
		}
		s, err := q.loadSegment(path, first, i == len(firsts)-1)
		if err != nil {
			return nil, err
		}
		if n := len(q.segs); n > 0 && q.segs[n-1].last()+1 != s.first {
			return nil, fmt.Errorf("%w: %s: records %d to %d missing before it", ErrCorrupt, path, q.segs[n-1].last()+1, s.first-1)
		}
		if n := len(q.segs); n > 0 {
			s.base = q.segs[n-1].pos(q.segs[n-1].size)
		}
		q.segs = append(q.segs, s)
	}
	if len(q.segs) > 0 && q.segs[0].first > q.acked+1 {
		return nil, fmt.Errorf("%w: %s: records %d to %d missing before it (acknowledged through %d)", ErrCorrupt, q.segs[0].path, q.acked+1, q.segs[0].first-1, q.acked)
	}
	if n := len(q.segs); n > 0 {
		last := q.segs[n-1]
		q.head = max(q.head, last.last())
		q.endL = last.pos(last.size)
		q.w, err = os.OpenFile(last.path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("outbox: open queue %q: %w", name, err)
		}
	}
	if err := q.dropAcked(true); err != nil {
		return nil, err
	}
	if err := q.setAckPos(); err != nil {
		return nil, err
	}
	if marker {
		if len(q.segs) == 0 {
			q.closeFiles()
			q.gone = true
		} else if err := os.Remove(filepath.Join(dir, removedFile)); err != nil {
			return nil, fmt.Errorf("outbox: open queue %q: %w", name, err)
		}
	}
	return q, nil
}

// loadSegment scans one segment file at Open; in the last segment, it
// truncates a torn tail.
func (q *queue) loadSegment(path string, first uint64, last bool) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("outbox: open queue %q: %w", q.name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("outbox: open queue %q: %w", q.name, err)
	}
	sc, err := scanSegment(f, fi.Size(), path, markStride)
	if err != nil {
		return nil, err
	}
	if sc.end > 0 && sc.first != first {
		return nil, fmt.Errorf("%w: %s: header says first seq %d", ErrCorrupt, path, sc.first)
	}
	if sc.torn {
		if !last {
			return nil, fmt.Errorf("%w: %s: record cut short at offset %d in a segment that is not the last", ErrCorrupt, path, sc.end)
		}
		q.o.cfg.log.Warn("outbox: truncating a torn tail", "file", path, "offset", sc.end, "dropped", fi.Size()-sc.end)
		if sc.end == 0 {
			if _, err := f.WriteAt(encodeSegHeader(first), 0); err != nil {
				return nil, fmt.Errorf("outbox: repair %s: %w", path, err)
			}
			sc.end = segHeaderSize
		}
		if err := f.Truncate(sc.end); err != nil {
			return nil, fmt.Errorf("outbox: truncate %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("outbox: truncate %s: %w", path, err)
		}
	}
	return &segment{path: path, first: first, count: sc.count, size: sc.end, marks: sc.marks}, nil
}

func (q *queue) append(epoch uint64, payload []byte) (uint64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.gone:
		return 0, errGone
	case q.closed:
		return 0, ErrClosed
	}
	n := int64(recHeaderSize + len(payload))
	if len(q.segs) == 0 || (q.segs[len(q.segs)-1].count > 0 && q.segs[len(q.segs)-1].size+n > q.o.cfg.segSize) {
		if err := q.roll(); err != nil {
			return 0, err
		}
	}
	s := q.segs[len(q.segs)-1]
	seq := q.head + 1
	var err error
	if n <= 1<<20 {
		q.buf = appendRecord(q.buf[:0], seq, epoch, payload)
		_, err = q.w.WriteAt(q.buf, s.size)
	} else {
		var h [recHeaderSize]byte
		putRecHeader(h[:], seq, epoch, payload)
		if _, err = q.w.WriteAt(h[:], s.size); err == nil {
			_, err = q.w.WriteAt(payload, s.size+recHeaderSize)
		}
	}
	if err != nil {
		// Cut what was written, so that the next record follows the
		// last whole one.
		_ = q.w.Truncate(s.size)
		return 0, fmt.Errorf("outbox: append to %s: %w", s.path, err)
	}
	if len(s.marks) == 0 || s.size-s.marks[len(s.marks)-1].off >= markStride {
		s.marks = append(s.marks, mark{seq: seq, off: s.size})
	}
	s.size += n
	s.count++
	q.endL += n
	if q.acked == q.head {
		q.oldest = epoch
	}
	q.head = seq
	q.wDirty = true
	close(q.notify)
	q.notify = make(chan struct{})
	return seq, nil
}

// roll starts a new segment after the head; the current one, if any, is
// fsynced first, so that only the last segment can ever have a torn
// tail. q.mu is held.
func (q *queue) roll() error {
	if q.w != nil {
		if q.wDirty {
			if err := q.w.Sync(); err != nil {
				return fmt.Errorf("outbox: sync %s: %w", q.segs[len(q.segs)-1].path, err)
			}
			q.wDirty = false
		}
		q.retired = append(q.retired, q.w)
		q.w = nil
	}
	first := q.head + 1
	path := filepath.Join(q.dir, segName(first))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("outbox: new segment: %w", err)
	}
	if _, err := f.WriteAt(encodeSegHeader(first), 0); err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("outbox: new segment: %w", err)
	}
	q.segs = append(q.segs, &segment{path: path, first: first, size: segHeaderSize, base: q.endL})
	q.w = f
	q.wDirty = true
	q.dirDirty = true
	return nil
}

// file returns the file to read s from. q.mu is held.
func (q *queue) file(s *segment) (*os.File, error) {
	if s == q.segs[len(q.segs)-1] {
		return q.w, nil
	}
	if q.rseg == s {
		return q.rf, nil
	}
	if q.rf != nil {
		q.rf.Close()
		q.rf, q.rseg = nil, nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("outbox: read queue %q: %w", q.name, err)
	}
	q.rf, q.rseg = f, s
	return f, nil
}

// locate returns the segment (its index) and offset where record seq
// starts; seq is in acked+1..head+1, and head+1 is the end of the last
// segment. q.mu is held; len(q.segs) > 0.
func (q *queue) locate(seq uint64) (int, int64, error) {
	if seq == q.head+1 {
		i := len(q.segs) - 1
		return i, q.segs[i].size, nil
	}
	i := sort.Search(len(q.segs), func(i int) bool { return q.segs[i].first > seq }) - 1
	if i < 0 || seq > q.segs[i].last() {
		return 0, 0, fmt.Errorf("%w: queue %q: record %d is in no segment", ErrCorrupt, q.name, seq)
	}
	s := q.segs[i]
	from := mark{seq: s.first, off: segHeaderSize}
	if k := sort.Search(len(s.marks), func(k int) bool { return s.marks[k].seq > seq }) - 1; k >= 0 {
		from = s.marks[k]
	}
	if q.curSeg == s && q.cur.seq <= seq && q.cur.seq > from.seq {
		from = q.cur
	}
	if from.seq == seq {
		return i, from.off, nil
	}
	f, err := q.file(s)
	if err != nil {
		return 0, 0, err
	}
	rr := newRecordReader(f, s.path, from.off, s.size)
	for at := from.seq; at < seq; at++ {
		h, err := rr.header(at)
		if err != nil {
			return 0, 0, err
		}
		if _, err := rr.body(h, false); err != nil {
			return 0, 0, err
		}
	}
	q.curSeg, q.cur = s, mark{seq: seq, off: rr.off}
	return i, rr.off, nil
}

// setAckPos sets ackL and oldest from acked. q.mu is held (or q is not
// shared yet).
func (q *queue) setAckPos() error {
	if q.acked >= q.head {
		q.ackL, q.oldest = q.endL, 0
		return nil
	}
	i, off, err := q.locate(q.acked + 1)
	if err != nil {
		return err
	}
	s := q.segs[i]
	f, err := q.file(s)
	if err != nil {
		return err
	}
	h, err := newRecordReader(f, s.path, off, s.size).header(q.acked + 1)
	if err != nil {
		return err
	}
	q.ackL, q.oldest = s.pos(off), h.epoch
	return nil
}

func (q *queue) peek(after uint64, maxRecords, maxBytes int) ([]Record, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.gone:
		return nil, nil
	case q.closed:
		return nil, ErrClosed
	}
	after = max(after, q.acked)
	if after >= q.head {
		return nil, nil
	}
	i, off, err := q.locate(after + 1)
	if err != nil {
		return nil, err
	}
	var out []Record
	size := 0
	seq := after + 1
	var rr *recordReader
	for seq <= q.head && (len(out) == 0 || len(out) < maxRecords) {
		s := q.segs[i]
		if off >= s.size {
			i, off, rr = i+1, segHeaderSize, nil
			continue
		}
		if rr == nil {
			f, err := q.file(s)
			if err != nil {
				return nil, err
			}
			rr = newRecordReader(f, s.path, off, s.size)
		}
		h, err := rr.header(seq)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && size+int(h.length) > maxBytes {
			break
		}
		p, err := rr.body(h, true)
		if err != nil {
			return nil, err
		}
		out = append(out, Record{Stream: q.stream, Seq: seq, Epoch: h.epoch, Payload: p})
		size += len(p)
		seq++
		off = rr.off
	}
	if i < len(q.segs) {
		q.curSeg, q.cur = q.segs[i], mark{seq: seq, off: off}
	}
	return out, nil
}

func (q *queue) ack(through uint64) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if q.gone || through <= q.acked {
		q.mu.Unlock()
		return nil
	}
	if through > q.head {
		q.mu.Unlock()
		return fmt.Errorf("%w: %q: ack %d, head %d", ErrAckAhead, q.name, through, q.head)
	}
	prev := q.acked
	q.acked = through
	if err := q.setAckPos(); err != nil {
		q.acked = prev
		q.mu.Unlock()
		return err
	}
	frees := q.deletable(false)
	q.mu.Unlock()
	if !frees {
		return nil
	}
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	return q.writeAck(false)
}

// deletable reports whether the first segment holds only acknowledged
// records and may be deleted: a sealed one, or with force or once it has
// reached a sixteenth of the segment size, the last one. It looks at
// acked; dropAcked, at what the ack file holds. q.mu is held.
func (q *queue) deletable(force bool) bool {
	return len(q.segs) > 0 && q.segs[0].last() <= q.acked && q.sealedOrBig(q.segs[0], force)
}

func (q *queue) sealedOrBig(s *segment, force bool) bool {
	return s != q.segs[len(q.segs)-1] || force || s.size >= q.o.cfg.segSize/16
}

// dropAcked deletes the segments whose records the ack file says are all
// acknowledged (see deletable). q.syncMu and q.mu are held, or q is not
// shared yet.
func (q *queue) dropAcked(force bool) error {
	for len(q.segs) > 0 {
		s := q.segs[0]
		if s.last() > q.persist || !q.sealedOrBig(s, force) {
			return nil
		}
		if s == q.rseg {
			q.rf.Close()
			q.rf, q.rseg = nil, nil
		}
		if s == q.curSeg {
			q.curSeg = nil
		}
		if len(q.segs) == 1 {
			q.w.Close()
			q.w, q.wDirty = nil, false
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("outbox: delete %s: %w", s.path, err)
		}
		q.segs = q.segs[1:]
	}
	return nil
}

// writeAck writes acked to the ack file if it moved, fsyncs it, then
// deletes the segments it frees. q.syncMu is held.
func (q *queue) writeAck(force bool) error {
	q.mu.Lock()
	a, closed, gone := q.acked, q.closed, q.gone
	q.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case gone:
		return nil
	}
	if a > q.persist {
		if q.ackf == nil {
			f, err := os.OpenFile(filepath.Join(q.dir, ackFile), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				return fmt.Errorf("outbox: ack %q: %w", q.name, err)
			}
			// The ack file must outlive a crash before any segment
			// deletion relies on it.
			if err := syncDir(q.dir); err != nil {
				f.Close()
				return fmt.Errorf("outbox: ack %q: %w", q.name, err)
			}
			q.ackf = f
		}
		slot := 0
		if q.ackSlot == 0 {
			slot = 1
		}
		if _, err := q.ackf.WriteAt(encodeAck(a), int64(slot*ackSlot1)); err != nil {
			return fmt.Errorf("outbox: ack %q: %w", q.name, err)
		}
		if err := q.ackf.Sync(); err != nil {
			return fmt.Errorf("outbox: ack %q: %w", q.name, err)
		}
		q.ackSlot = slot
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.persist = max(q.persist, a)
	err := q.dropAcked(force)
	q.closeRetired()
	return err
}

// closeRetired closes the files of earlier segments. q.syncMu and q.mu
// are held.
func (q *queue) closeRetired() {
	for _, f := range q.retired {
		f.Close()
	}
	q.retired = nil
}

// closeFiles closes every file of q. q.syncMu and q.mu are held, or q is
// not shared.
func (q *queue) closeFiles() {
	q.closeRetired()
	for _, f := range []*os.File{q.w, q.rf, q.ackf} {
		if f != nil {
			f.Close()
		}
	}
	q.w, q.rf, q.rseg, q.ackf = nil, nil, nil, nil
}

// sync fsyncs what was written since the last sync, then writes the ack.
func (q *queue) sync() error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	q.mu.Lock()
	if q.closed || q.gone {
		q.mu.Unlock()
		return nil
	}
	w, wDirty, dirDirty := q.w, q.wDirty, q.dirDirty
	q.wDirty, q.dirDirty = false, false
	q.mu.Unlock()
	var errs []error
	if wDirty {
		if err := w.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("outbox: sync queue %q: %w", q.name, err))
			q.mu.Lock()
			if q.w == w {
				q.wDirty = true
			}
			q.mu.Unlock()
		}
	}
	if dirDirty {
		if err := syncDir(q.dir); err != nil {
			errs = append(errs, fmt.Errorf("outbox: sync queue %q: %w", q.name, err))
			q.mu.Lock()
			q.dirDirty = true
			q.mu.Unlock()
		}
	}
	errs = append(errs, q.writeAck(false))
	return errors.Join(errs...)
}

// remove deletes the queue: its directory is renamed out of the way
// (atomically, then the outbox directory is synced) and deleted, and the
// queue leaves the outbox's map, all while the queue is held, so that an
// Append waiting for it finds it gone and creates the next queue.
func (q *queue) remove() error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return ErrClosed
	case q.gone:
		return nil
	}
	trash := q.dir + ".removed" + tmpSuffix
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("outbox: remove %q: %w", q.name, err)
	}
	if err := os.Rename(q.dir, trash); err != nil {
		return fmt.Errorf("outbox: remove %q: %w", q.name, err)
	}
	if err := syncDir(q.o.dir); err != nil {
		// Renamed, perhaps not durably: a restart may find the queue
		// again, and the writer removes it again.
		q.o.cfg.log.Warn("outbox: sync after a removal", "dir", q.o.dir, "err", err)
	}
	q.closeFiles()
	q.gone = true
	q.acked, q.ackL, q.oldest = q.head, q.endL, 0
	close(q.notify)
	q.notify = make(chan struct{})
	q.o.mu.Lock()
	if q.o.queues[q.name] == q {
		delete(q.o.queues, q.name)
	}
	q.o.mu.Unlock()
	if err := os.RemoveAll(trash); err != nil {
		// Gone from the outbox already; Open deletes the rest.
		q.o.cfg.log.Warn("outbox: delete a removed queue", "dir", trash, "err", err)
	}
	return nil
}
