package outbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The on-disk forms. A segment file is a header followed by records:
//
//	segment header (segHeaderSize bytes):
//	  magic   [8]byte  "IKOUTBX1"
//	  first   uint64   the Seq of the segment's first record (also its name)
//	  crc     uint32   crc32c of magic and first
//	record (recHeaderSize bytes, then the payload):
//	  hcrc    uint32   crc32c of the next 24 header bytes
//	  length  uint32   payload length
//	  seq     uint64
//	  epoch   uint64
//	  pcrc    uint32   crc32c of the payload
//	  payload [length]byte
//
// All integers are big-endian. The header has its own CRC so that a
// damaged length is caught as damage, never taken for a torn tail.
const (
	segMagic      = "IKOUTBX1"
	segHeaderSize = 20
	recHeaderSize = 28
	// MaxPayload is the largest payload [Outbox.Append] takes.
	MaxPayload = 1 << 30
	// markStride is how far apart, in bytes, a segment's in-memory index
	// marks are: locating a record reads at most this much.
	markStride = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func encodeSegHeader(first uint64) []byte {
	b := make([]byte, segHeaderSize)
	copy(b, segMagic)
	binary.BigEndian.PutUint64(b[8:], first)
	binary.BigEndian.PutUint32(b[16:], crc(b[:16]))
	return b
}

// appendRecord appends the encoding of one record to dst.
func appendRecord(dst []byte, seq, epoch uint64, payload []byte) []byte {
	var h [recHeaderSize]byte
	putRecHeader(h[:], seq, epoch, payload)
	return append(append(dst, h[:]...), payload...)
}

func putRecHeader(h []byte, seq, epoch uint64, payload []byte) {
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	binary.BigEndian.PutUint64(h[8:], seq)
	binary.BigEndian.PutUint64(h[16:], epoch)
	binary.BigEndian.PutUint32(h[24:], crc(payload))
	binary.BigEndian.PutUint32(h[0:], crc(h[4:recHeaderSize]))
}

// recHeader is a decoded record header.
type recHeader struct {
	length uint32
	seq    uint64
	epoch  uint64
	pcrc   uint32
}

func (h recHeader) size() int64 { return recHeaderSize + int64(h.length) }

// parseRecHeader decodes a record header; ok is false when its CRC does
// not match or the length is out of bounds.
func parseRecHeader(b []byte) (h recHeader, ok bool) {
	if binary.BigEndian.Uint32(b[0:]) != crc(b[4:recHeaderSize]) {
		return h, false
	}
	h = recHeader{
		length: binary.BigEndian.Uint32(b[4:]),
		seq:    binary.BigEndian.Uint64(b[8:]),
		epoch:  binary.BigEndian.Uint64(b[16:]),
		pcrc:   binary.BigEndian.Uint32(b[24:]),
	}
	return h, h.length <= MaxPayload
}

// mark is an entry of a segment's in-memory index: the record seq starts
// at offset off.
type mark struct {
	seq uint64
	off int64
}

// scan is what reading a whole segment file found.
type scan struct {
	first uint64 // from the segment header
	count uint64 // whole, valid records
	end   int64  // offset after the last whole record (segHeaderSize if none)
	marks []mark // every markStride bytes, the first record included
	// torn: the bytes after end are a record cut short (or a header cut
	// short, when end is 0): what a kill during a write leaves.
	torn bool
	// firstEpoch is the epoch of the first record, when count > 0.
	firstEpoch uint64
}

// scanSegment reads a segment file's bytes from r (size bytes long) and
// checks every record: its CRCs and that the seqs run on from the
// header's first. Bytes after the last whole record that are a record
// cut short — too few for a header, a valid header whose payload runs
// past the end, a last record whose payload CRC fails and that ends at
// the end of the file, or only zero bytes — are reported as torn;
// anything else that does not decode is an error wrapping [ErrCorrupt]
// that names the file and the offset. name is only for messages.
func scanSegment(r io.ReaderAt, size int64, name string, stride int64) (scan, error) {
	var s scan
	if size < segHeaderSize {
		s.torn = true
		return s, nil
	}
	var hb [segHeaderSize]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return s, fmt.Errorf("outbox: read %s: %w", name, err)
	}
	if string(hb[:8]) != segMagic || binary.BigEndian.Uint32(hb[16:]) != crc(hb[:16]) {
		if allZero(r, 0, size) {
			s.torn = true
			return s, nil
		}
		return s, fmt.Errorf("%w: %s: bad segment header", ErrCorrupt, name)
	}
	s.first = binary.BigEndian.Uint64(hb[8:])
	if s.first == 0 {
		return s, fmt.Errorf("%w: %s: segment header names seq 0", ErrCorrupt, name)
	}
	s.end = segHeaderSize
	br := bufio.NewReaderSize(io.NewSectionReader(r, segHeaderSize, size-segHeaderSize), 64<<10)
	var h [recHeaderSize]byte
	payload := make([]byte, 0, 64<<10)
	lastMark := int64(-1)
	for off := int64(segHeaderSize); off < size; {
		if size-off < recHeaderSize {
			s.torn = true
			return s, nil
		}
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return s, fmt.Errorf("outbox: read %s at offset %d: %w", name, off, err)
		}
		rh, ok := parseRecHeader(h[:])
		if !ok {
			if allZero(r, off, size) {
				s.torn = true
				return s, nil
			}
			return s, fmt.Errorf("%w: %s: bad record header at offset %d", ErrCorrupt, name, off)
		}
		if off+rh.size() > size {
			s.torn = true
			return s, nil
		}
		if want := s.first + s.count; rh.seq != want {
			return s, fmt.Errorf("%w: %s: record at offset %d has seq %d, want %d", ErrCorrupt, name, off, rh.seq, want)
		}
		if cap(payload) < int(rh.length) {
			payload = make([]byte, rh.length)
		}
		payload = payload[:rh.length]
		if _, err := io.ReadFull(br, payload); err != nil {
			return s, fmt.Errorf("outbox: read %s at offset %d: %w", name, off, err)
		}
		if crc(payload) != rh.pcrc {
			if off+rh.size() == size {
				s.torn = true
				return s, nil
			}
			return s, fmt.Errorf("%w: %s: record %d at offset %d: payload CRC mismatch", ErrCorrupt, name, rh.seq, off)
		}
		if lastMark < 0 || off-lastMark >= stride {
			s.marks = append(s.marks, mark{seq: rh.seq, off: off})
			lastMark = off
		}
		if s.count == 0 {
			s.firstEpoch = rh.epoch
		}
		s.count++
		off += rh.size()
		s.end = off
	}
	return s, nil
}

// allZero reports whether r holds only zero bytes from off to size (what
// a file extended but never written holds after a power loss).
func allZero(r io.ReaderAt, off, size int64) bool {
	buf := make([]byte, 32<<10)
	for off < size {
		n := int64(len(buf))
		if size-off < n {
			n = size - off
		}
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return false
		}
		if !bytes.Equal(buf[:n], make([]byte, n)) {
			return false
		}
		off += n
	}
	return true
}

// recordReader reads whole records from a segment, in order, from a
// known record boundary.
type recordReader struct {
	name string
	br   *bufio.Reader
	off  int64
	end  int64
}

func newRecordReader(r io.ReaderAt, name string, off, end int64) *recordReader {
	return &recordReader{name: name, br: bufio.NewReaderSize(io.NewSectionReader(r, off, end-off), 64<<10), off: off, end: end}
}

// header reads the header of the record at rr.off, which must have
// seq want and lie within the segment.
func (rr *recordReader) header(want uint64) (recHeader, error) {
	var h [recHeaderSize]byte
	if rr.end-rr.off < recHeaderSize {
		return recHeader{}, fmt.Errorf("%w: %s: record %d at offset %d runs past the end", ErrCorrupt, rr.name, want, rr.off)
	}
	if _, err := io.ReadFull(rr.br, h[:]); err != nil {
		return recHeader{}, fmt.Errorf("outbox: read %s at offset %d: %w", rr.name, rr.off, err)
	}
	rh, ok := parseRecHeader(h[:])
	switch {
	case !ok:
		return rh, fmt.Errorf("%w: %s: bad record header at offset %d", ErrCorrupt, rr.name, rr.off)
	case rh.seq != want:
		return rh, fmt.Errorf("%w: %s: record at offset %d has seq %d, want %d", ErrCorrupt, rr.name, rr.off, rh.seq, want)
	case rr.off+rh.size() > rr.end:
		return rh, fmt.Errorf("%w: %s: record %d at offset %d runs past the end", ErrCorrupt, rr.name, want, rr.off)
	}
	return rh, nil
}

// body reads (keep) or skips the payload of the record whose header
// header just read, and moves rr.off past the record.
func (rr *recordReader) body(rh recHeader, keep bool) ([]byte, error) {
	var p []byte
	if keep {
		p = make([]byte, rh.length)
		if _, err := io.ReadFull(rr.br, p); err != nil {
			return nil, fmt.Errorf("outbox: read %s at offset %d: %w", rr.name, rr.off, err)
		}
		if crc(p) != rh.pcrc {
			return nil, fmt.Errorf("%w: %s: record %d at offset %d: payload CRC mismatch", ErrCorrupt, rr.name, rh.seq, rr.off)
		}
	} else if _, err := rr.br.Discard(int(rh.length)); err != nil {
		return nil, fmt.Errorf("outbox: read %s at offset %d: %w", rr.name, rr.off, err)
	}
	rr.off += rh.size()
	return p, nil
}

// The ack file holds two slots, written in turn, each the acked seq and
// its crc32c; the larger valid one wins, so a write torn by a kill leaves
// the previous value. A slot that is absent or all zeros is empty.
const (
	ackSlotSize = 12
	ackSlot1    = 512
)

func encodeAck(seq uint64) []byte {
	b := make([]byte, ackSlotSize)
	binary.BigEndian.PutUint64(b, seq)
	binary.BigEndian.PutUint32(b[8:], crc(b[:8]))
	return b
}

// decodeAck reads an ack file's bytes: the acked seq and the slot that
// holds it (0 or 1; -1 when neither slot holds a value).
func decodeAck(b []byte) (seq uint64, slot int) {
	slot = -1
	for i, off := range []int{0, ackSlot1} {
		if len(b) < off+ackSlotSize {
			continue
		}
		s := b[off : off+ackSlotSize]
		if binary.BigEndian.Uint32(s[8:]) != crc(s[:8]) {
			continue
		}
		if v := binary.BigEndian.Uint64(s); slot < 0 || v > seq {
			seq, slot = v, i
		}
	}
	return seq, slot
}
