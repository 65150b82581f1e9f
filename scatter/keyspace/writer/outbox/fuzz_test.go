package outbox

import (
	"bytes"
	"errors"
	"testing"
)

// validSegment is a segment of n records from seq first.
func validSegment(first uint64, n int) []byte {
	b := encodeSegHeader(first)
	for i := range n {
		b = appendRecord(b, first+uint64(i), uint64(i), bytes.Repeat([]byte{byte(i)}, i*7))
	}
	return b
}

// FuzzScanSegment feeds arbitrary bytes to the segment decoder Open
// uses: it never panics, its errors wrap ErrCorrupt, and what it accepts
// reads back record by record through the reader Peek uses.
func FuzzScanSegment(f *testing.F) {
	seg := validSegment(5, 6)
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(seg[:segHeaderSize+10])
	f.Add(seg[:7])
	f.Add(append(append([]byte{}, seg...), make([]byte, 100)...))
	flipped := append([]byte{}, seg...)
	flipped[segHeaderSize+recHeaderSize+2] ^= 1
	f.Add(flipped)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := scanSegment(bytes.NewReader(b), int64(len(b)), "fuzz", 64)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if sc.end > int64(len(b)) || (!sc.torn && sc.end != int64(len(b))) {
			t.Fatalf("end %d of %d bytes, torn %v", sc.end, len(b), sc.torn)
		}
		if sc.count == 0 {
			return
		}
		rr := newRecordReader(bytes.NewReader(b), "fuzz", segHeaderSize, sc.end)
		for i := range sc.count {
			h, err := rr.header(sc.first + i)
			if err != nil {
				t.Fatalf("record %d of %d accepted by the scan: %v", i, sc.count, err)
			}
			if _, err := rr.body(h, true); err != nil {
				t.Fatalf("record %d of %d accepted by the scan: %v", i, sc.count, err)
			}
		}
		if rr.off != sc.end {
			t.Fatalf("records end at %d, scan says %d", rr.off, sc.end)
		}
		for _, m := range sc.marks {
			rr := newRecordReader(bytes.NewReader(b), "fuzz", m.off, sc.end)
			if _, err := rr.header(m.seq); err != nil {
				t.Fatalf("mark %+v: %v", m, err)
			}
		}
	})
}

// FuzzDecodeAck: any ack file bytes decode without panic to a value in
// one of the slots, or none.
func FuzzDecodeAck(f *testing.F) {
	b := make([]byte, ackSlot1+ackSlotSize)
	copy(b, encodeAck(7))
	copy(b[ackSlot1:], encodeAck(9))
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, slot := decodeAck(b)
		if slot < 0 && seq != 0 || slot > 1 {
			t.Fatalf("decodeAck = %d, slot %d", seq, slot)
		}
	})
}
