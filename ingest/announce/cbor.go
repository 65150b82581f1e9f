package announce

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The CBOR form is the tuple go-libipni's adapted cbor-gen code writes:
//
//	83 | 84                          array of 3, or 4 when OrigPeer is set
//	d8 2a 58 <n+1> 00 <CID bytes>    Cid: tag 42 around bytes(0x00 ‖ CID)
//	8x <bytes>...                    Addrs: array of byte strings (binary multiaddrs)
//	4x <bytes>                       ExtraData: byte string, 0x40 when empty
//	6x <text>                        OrigPeer: text string, the peer ID in base58
//
// Heads are in their shortest form; the decoder, like cbor-gen's, rejects
// any other and rejects indefinite lengths.

const (
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorTag   = 6
	cidTag     = 42
)

var majorNames = [8]string{"unsigned integer", "negative integer", "byte string", "text string",
	"array", "map", "tag", "simple value or float"}

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

// EncodeCBOR returns the CBOR tuple of m, byte for byte what go-libipni's
// Message.MarshalCBOR writes. It fails with [ErrInvalidMessage] for an
// undefined CID, an empty address or a field over its limit.
func (m Message) EncodeCBOR() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m.appendCBOR(nil), nil
}

func (m Message) appendCBOR(dst []byte) []byte {
	n := uint64(3)
	if m.OrigPeer != "" {
		n = 4
	}
	dst = appendHead(dst, majorArray, n)
	c := m.Cid.Bytes()
	dst = appendHead(dst, majorTag, cidTag)
	dst = appendHead(dst, majorBytes, uint64(len(c))+1)
	dst = append(append(dst, 0), c...)
	dst = appendHead(dst, majorArray, uint64(len(m.Addrs)))
	for _, a := range m.Addrs {
		b := a.Bytes()
		dst = append(appendHead(dst, majorBytes, uint64(len(b))), b...)
	}
	dst = append(appendHead(dst, majorBytes, uint64(len(m.ExtraData))), m.ExtraData...)
	if m.OrigPeer != "" {
		s := m.OrigPeer.String()
		dst = append(appendHead(dst, majorText, uint64(len(s))), s...)
	}
	return dst
}

// cborReader reads CBOR heads and payloads from a byte slice, keeping the
// offset for error messages.
type cborReader struct {
	b   []byte
	off int
}

// head reads a head of the wanted major type and returns its argument,
// which must be at most max and (for strings) fit in the bytes left.
func (r *cborReader) head(what string, major byte, max uint64) (uint64, error) {
	start := r.off
	if r.off >= len(r.b) {
		return 0, malformed("%s at offset %d: unexpected end of input", what, start)
	}
	first := r.b[r.off]
	r.off++
	if got := first >> 5; got != major {
		return 0, malformed("%s at offset %d: %s, want %s", what, start, majorNames[got], majorNames[major])
	}
	low := first & 0x1f
	var arg, min uint64
	switch {
	case low < 24:
		arg = uint64(low)
	case low <= 27:
		size := 1 << (low - 24)
		if len(r.b)-r.off < size {
			return 0, malformed("%s at offset %d: unexpected end of input", what, start)
		}
		p := r.b[r.off : r.off+size]
		r.off += size
		switch size {
		case 1:
			arg, min = uint64(p[0]), 24
		case 2:
			arg, min = uint64(binary.BigEndian.Uint16(p)), 1<<8
		case 4:
			arg, min = uint64(binary.BigEndian.Uint32(p)), 1<<16
		default:
			arg, min = binary.BigEndian.Uint64(p), 1<<32
		}
		if arg < min {
			return 0, malformed("%s at offset %d: head not in shortest form", what, start)
		}
	case low == 31:
		return 0, malformed("%s at offset %d: indefinite length", what, start)
	default:
		return 0, malformed("%s at offset %d: invalid head byte %#x", what, start, first)
	}
	if arg > max {
		return 0, malformed("%s at offset %d: length %d over %d", what, start, arg, max)
	}
	if (major == majorBytes || major == majorText) && arg > uint64(len(r.b)-r.off) {
		return 0, malformed("%s at offset %d: length %d runs past the end", what, start, arg)
	}
	return arg, nil
}

// bytes reads a byte string or text string of at most max bytes.
func (r *cborReader) bytes(what string, major byte, max uint64) ([]byte, error) {
	n, err := r.head(what, major, max)
	if err != nil {
		return nil, err
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p, nil
}

// DecodeCBOR decodes the CBOR tuple of an announce. It is stricter than
// go-libipni: heads in shortest form, the CID as tag 42 around 0x00 and the
// CID's canonical bytes, every address a valid binary multiaddr (addresses
// with protocols unknown to go-multiaddr are dropped, as go-libipni drops
// them), OrigPeer a valid peer ID, no bytes after the tuple. A 4-tuple whose
// OrigPeer is the empty string decodes as a 3-tuple. The returned message
// shares no memory with b. Errors wrap [ErrMalformed]; no input panics.
func DecodeCBOR(b []byte) (Message, error) {
	r := cborReader{b: b}
	n, err := r.head("message", majorArray, 4)
	if err != nil {
		return Message{}, err
	}
	if n < 3 {
		return Message{}, malformed("message: array of %d, want 3 or 4", n)
	}
	var m Message
	if m.Cid, err = r.cid(); err != nil {
		return Message{}, err
	}
	na, err := r.head("Addrs", majorArray, MaxAddrs)
	if err != nil {
		return Message{}, err
	}
	if na > uint64(len(b)-r.off) { // each address takes at least one byte
		return Message{}, malformed("Addrs: %d addresses cannot fit in the input", na)
	}
	if na > 0 {
		raw := make([][]byte, na)
		for i := range raw {
			if raw[i], err = r.bytes("Addrs", majorBytes, MaxFieldLen); err != nil {
				return Message{}, err
			}
		}
		if m.Addrs, err = parseAddrs(raw); err != nil {
			return Message{}, err
		}
	}
	extra, err := r.bytes("ExtraData", majorBytes, MaxFieldLen)
	if err != nil {
		return Message{}, err
	}
	if len(extra) > 0 {
		m.ExtraData = bytes.Clone(extra)
	}
	if n == 4 {
		s, err := r.bytes("OrigPeer", majorText, MaxOrigPeerLen)
		if err != nil {
			return Message{}, err
		}
		if len(s) > 0 {
			if !utf8.Valid(s) {
				return Message{}, malformed("OrigPeer: not UTF-8")
			}
			if m.OrigPeer, err = peer.Decode(string(s)); err != nil {
				return Message{}, malformed("OrigPeer %q: %v", s, err)
			}
		}
	}
	if r.off != len(b) {
		return Message{}, malformed("%d bytes after the message", len(b)-r.off)
	}
	return m, nil
}

func (r *cborReader) cid() (cid.Cid, error) {
	start := r.off
	if _, err := r.headTag(); err != nil {
		return cid.Undef, err
	}
	p, err := r.bytes("Cid", majorBytes, MaxCIDLen+1)
	if err != nil {
		return cid.Undef, err
	}
	if len(p) < 2 || p[0] != 0 {
		return cid.Undef, malformed("Cid at offset %d: want 0x00 and the CID bytes", start)
	}
	c, err := cid.Cast(p[1:])
	if err != nil {
		return cid.Undef, malformed("Cid at offset %d: %v", start, err)
	}
	if !bytes.Equal(c.Bytes(), p[1:]) {
		return cid.Undef, malformed("Cid at offset %d: not in canonical form", start)
	}
	return c, nil
}

func (r *cborReader) headTag() (uint64, error) {
	start := r.off
	t, err := r.head("Cid", majorTag, ^uint64(0))
	if err != nil {
		return 0, err
	}
	if t != cidTag {
		return 0, malformed("Cid at offset %d: tag %d, want 42", start, t)
	}
	return t, nil
}
