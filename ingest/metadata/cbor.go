package metadata

import (
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"
)

// The graphsync payload is one dag-cbor map of a fixed shape. Rather than a
// general IPLD decoder, a small reader parses exactly that shape, so that it
// knows where the map ends (the payload has no length prefix and other
// protocols may follow it) and can say at which byte anything is wrong.
//
// It accepts what strict dag-cbor accepts for this shape: a definite-length
// map of exactly the three keys, in any order, each once; minimal heads;
// the link as tag 42 around a byte string holding 0x00 and CID bytes; the
// booleans as simple values true and false. The writer emits the canonical
// form: keys shortest first (PieceCID, VerifiedDeal, FastRetrieval), which
// is what go-libipni's bindnode/dagcbor encoder writes.

// CBOR major types.
const (
	majorBytes  = 2
	majorText   = 3
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7
)

const (
	cborFalse = majorSimple<<5 | 20
	cborTrue  = majorSimple<<5 | 21
	linkTag   = 42 // the dag-cbor tag of a CID link
)

const (
	keyPieceCID      = "PieceCID"
	keyVerifiedDeal  = "VerifiedDeal"
	keyFastRetrieval = "FastRetrieval"
)

var majorNames = [8]string{"unsigned integer", "negative integer", "byte string", "text string",
	"array", "map", "tag", "simple value or float"}

// appendHead appends a CBOR head of the given major type and argument in
// its shortest form.
func appendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= 0xff:
		return append(dst, m|24, byte(arg))
	case arg <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(arg))
	case arg <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(arg))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), arg)
}

func appendText(dst []byte, s string) []byte {
	return append(appendHead(dst, majorText, uint64(len(s))), s...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, cborTrue)
	}
	return append(dst, cborFalse)
}

// appendGraphsyncMap appends the dag-cbor map of g in canonical key order.
func appendGraphsyncMap(dst []byte, g GraphsyncFilecoinV1) []byte {
	dst = appendHead(dst, majorMap, 3)
	dst = appendText(dst, keyPieceCID)
	dst = appendHead(dst, majorTag, linkTag)
	c := g.PieceCID.Bytes()
	dst = appendHead(dst, majorBytes, uint64(len(c))+1)
	dst = append(dst, 0) // the multibase identity prefix dag-cbor puts before CID bytes
	dst = append(dst, c...)
	dst = appendText(dst, keyVerifiedDeal)
	dst = appendBool(dst, g.VerifiedDeal)
	dst = appendText(dst, keyFastRetrieval)
	return appendBool(dst, g.FastRetrieval)
}

// cborReader reads CBOR items from b; off is an index into b, so offsets in
// its errors are offsets in the whole metadata.
type cborReader struct {
	b   []byte
	off int
}

// head reads a head of the wanted major type and returns its argument. It
// rejects other major types, indefinite lengths, reserved values and
// arguments not in their shortest form. what names the item for errors.
func (r *cborReader) head(want byte, what string) (uint64, error) {
	start := r.off
	if start >= len(r.b) {
		return 0, fmt.Errorf("%s: input ends at offset %d", what, start)
	}
	ib := r.b[start]
	major, info := ib>>5, ib&0x1f
	if major != want {
		return 0, fmt.Errorf("%s at offset %d: want a %s, got a %s (initial byte %#02x)",
			what, start, majorNames[want], majorNames[major], ib)
	}
	var n int
	switch {
	case info < 24:
		r.off++
		return uint64(info), nil
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	case info == 31:
		return 0, fmt.Errorf("%s at offset %d: indefinite length, which dag-cbor forbids", what, start)
	default:
		return 0, fmt.Errorf("%s at offset %d: reserved additional information %d", what, start, info)
	}
	if len(r.b)-start-1 < n {
		return 0, fmt.Errorf("%s at offset %d: head needs %d more bytes, input ends at offset %d",
			what, start, n, len(r.b))
	}
	var arg, min uint64
	p := r.b[start+1 : start+1+n]
	switch n {
	case 1:
		arg, min = uint64(p[0]), 24
	case 2:
		arg, min = uint64(binary.BigEndian.Uint16(p)), 1<<8
	case 4:
		arg, min = uint64(binary.BigEndian.Uint32(p)), 1<<16
	case 8:
		arg, min = binary.BigEndian.Uint64(p), 1<<32
	}
	if arg < min {
		return 0, fmt.Errorf("%s at offset %d: %d is not in its shortest form, which dag-cbor requires",
			what, start, arg)
	}
	r.off += 1 + n
	return arg, nil
}

// content returns the n bytes of a string's content.
func (r *cborReader) content(n uint64, what string) ([]byte, error) {
	if left := uint64(len(r.b) - r.off); n > left {
		return nil, fmt.Errorf("%s at offset %d: %d bytes long, only %d left", what, r.off, n, left)
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

func (r *cborReader) boolean(what string) (bool, error) {
	if r.off >= len(r.b) {
		return false, fmt.Errorf("%s: input ends at offset %d", what, r.off)
	}
	switch ib := r.b[r.off]; ib {
	case cborFalse, cborTrue:
		r.off++
		return ib == cborTrue, nil
	default:
		return false, fmt.Errorf("%s at offset %d: want true (0xf5) or false (0xf4), got initial byte %#02x",
			what, r.off, ib)
	}
}

func (r *cborReader) link(what string) (cid.Cid, error) {
	start := r.off
	tag, err := r.head(majorTag, what)
	if err != nil {
		return cid.Undef, err
	}
	if tag != linkTag {
		return cid.Undef, fmt.Errorf("%s at offset %d: tag %d, want %d (CID link)", what, start, tag, linkTag)
	}
	n, err := r.head(majorBytes, what)
	if err != nil {
		return cid.Undef, err
	}
	at := r.off
	b, err := r.content(n, what)
	if err != nil {
		return cid.Undef, err
	}
	if len(b) == 0 || b[0] != 0 {
		return cid.Undef, fmt.Errorf("%s at offset %d: link bytes do not start with the 0x00 multibase prefix",
			what, at)
	}
	c, err := cid.Cast(b[1:])
	if err != nil {
		return cid.Undef, fmt.Errorf("%s at offset %d: %v", what, at+1, err)
	}
	return c, nil
}

// decodeGraphsyncMap reads the graphsync map that starts at b[off] and
// returns it with the offset just past it.
func decodeGraphsyncMap(b []byte, off int) (GraphsyncFilecoinV1, int, error) {
	var g GraphsyncFilecoinV1
	r := cborReader{b: b, off: off}
	start := r.off
	n, err := r.head(majorMap, "map")
	if err != nil {
		return g, r.off, err
	}
	if n != 3 {
		return g, r.off, fmt.Errorf("map at offset %d: %d entries, want 3 (%s, %s, %s)",
			start, n, keyPieceCID, keyVerifiedDeal, keyFastRetrieval)
	}
	var seen [3]bool
	for range 3 {
		at := r.off
		kn, err := r.head(majorText, "map key")
		if err != nil {
			return g, r.off, err
		}
		k, err := r.content(kn, "map key")
		if err != nil {
			return g, r.off, err
		}
		var i int
		switch string(k) {
		case keyPieceCID:
			i = 0
		case keyVerifiedDeal:
			i = 1
		case keyFastRetrieval:
			i = 2
		default:
			return g, r.off, fmt.Errorf("map key at offset %d: unexpected key %q", at, k)
		}
		if seen[i] {
			return g, r.off, fmt.Errorf("map key at offset %d: key %q repeated", at, k)
		}
		seen[i] = true
		switch i {
		case 0:
			g.PieceCID, err = r.link(keyPieceCID)
		case 1:
			g.VerifiedDeal, err = r.boolean(keyVerifiedDeal)
		case 2:
			g.FastRetrieval, err = r.boolean(keyFastRetrieval)
		}
		if err != nil {
			return g, r.off, err
		}
	}
	return g, r.off, nil
}
