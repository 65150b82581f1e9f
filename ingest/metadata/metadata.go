package metadata

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-varint"
)

// Metadata is the transport metadata of an advertisement: the protocols a
// provider serves the advertised content over, in ascending order of code,
// each code at most once. Build one with [New] or [Decode]; the zero value
// is the empty metadata, which is valid and encodes to no bytes.
//
// A Metadata is immutable and safe for concurrent use.
type Metadata struct {
	protocols []Protocol // sorted by ID, unique, each valid
}

// New returns the metadata of the given protocols, sorted by code. It fails
// with an error wrapping [ErrInvalidProtocol] for a protocol that cannot be
// encoded, [ErrDuplicate] when two protocols share a code, and
// [ErrTooLarge] when the encoding would exceed [MaxSize] bytes.
//
// Pointers to the protocol types (*Bitswap, *Unknown, ...) are accepted and
// stored as values. New copies Unknown payloads.
func New(protocols ...Protocol) (Metadata, error) {
	ps := make([]Protocol, 0, len(protocols))
	for i, p := range protocols {
		p, err := normalize(p)
		if err != nil {
			return Metadata{}, fmt.Errorf("metadata: new: protocol %d: %w", i, err)
		}
		ps = append(ps, p)
	}
	slices.SortStableFunc(ps, func(a, b Protocol) int { return cmp.Compare(a.ID(), b.ID()) })
	for i := 1; i < len(ps); i++ {
		if ps[i].ID() == ps[i-1].ID() {
			return Metadata{}, fmt.Errorf("metadata: new: %w: %s given twice", ErrDuplicate, codeName(ps[i].ID()))
		}
	}
	m := Metadata{protocols: ps}
	if n := m.size(); n > MaxSize {
		return Metadata{}, fmt.Errorf("metadata: new: %w: encodes to %d bytes, limit %d", ErrTooLarge, n, MaxSize)
	}
	return m, nil
}

// normalize turns pointers into values, copies payloads and checks p.
func normalize(p Protocol) (Protocol, error) {
	nilPtr := func() (Protocol, error) {
		return nil, fmt.Errorf("%w: nil %T", ErrInvalidProtocol, p)
	}
	switch v := p.(type) {
	case nil:
		return nil, fmt.Errorf("%w: nil protocol", ErrInvalidProtocol)
	case *Bitswap:
		if v == nil {
			return nilPtr()
		}
		p = *v
	case *GraphsyncFilecoinV1:
		if v == nil {
			return nilPtr()
		}
		p = *v
	case *IPFSGatewayHTTP:
		if v == nil {
			return nilPtr()
		}
		p = *v
	case *FilecoinPieceHTTP:
		if v == nil {
			return nilPtr()
		}
		p = *v
	case *Unknown:
		if v == nil {
			return nilPtr()
		}
		p = *v
	}
	if u, ok := p.(Unknown); ok {
		u.Payload = bytes.Clone(u.Payload)
		p = u
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// Decode decodes metadata from its wire form: a sequence of
// uvarint(code) ‖ payload, one per protocol (see the package documentation
// for each payload). Protocols may come in any order, graphsync included;
// the result is sorted by code. Empty input gives the empty metadata.
//
// Errors wrap [ErrTooLarge] for input longer than [MaxSize], [ErrDuplicate]
// for a code that occurs twice, and [ErrMalformed] for everything else; the
// message says what is wrong and at which byte offset. Decode does not
// retain b.
func Decode(b []byte) (Metadata, error) {
	if len(b) > MaxSize {
		return Metadata{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxSize)
	}
	var (
		ps     []Protocol
		starts []int // starts[i] is where ps[i] began, for duplicate errors
	)
	for off := 0; off < len(b); {
		start := off
		code, n, err := varint.FromUvarint(b[off:])
		if err != nil {
			return Metadata{}, malformed("protocol code at offset %d: %s", off, varintProblem(err))
		}
		off += n
		var p Protocol
		switch code {
		case CodeBitswap:
			p = Bitswap{}
		case CodeGraphsyncFilecoinV1:
			var g GraphsyncFilecoinV1
			g, off, err = decodeGraphsyncMap(b, off)
			if err != nil {
				return Metadata{}, malformed("transport-graphsync-filecoinv1 at offset %d: %w", start, err)
			}
			p = g
		case CodeIPFSGatewayHTTP, CodeFilecoinPieceHTTP:
			length, n, err := varint.FromUvarint(b[off:])
			if err != nil {
				return Metadata{}, malformed("%s at offset %d: payload length at offset %d: %s",
					codeName(code), start, off, varintProblem(err))
			}
			if length != 0 {
				return Metadata{}, malformed("%s at offset %d: payload length %d at offset %d, want 0",
					codeName(code), start, length, off)
			}
			off += n
			if code == CodeIPFSGatewayHTTP {
				p = IPFSGatewayHTTP{}
			} else {
				p = FilecoinPieceHTTP{}
			}
		default:
			length, n, err := varint.FromUvarint(b[off:])
			if err != nil {
				return Metadata{}, malformed("%s at offset %d: payload length at offset %d: %s",
					codeName(code), start, off, varintProblem(err))
			}
			off += n
			if left := uint64(len(b) - off); length > left {
				return Metadata{}, malformed("%s at offset %d: payload of %d bytes at offset %d, only %d left",
					codeName(code), start, length, off, left)
			}
			p = Unknown{Code: code, Payload: bytes.Clone(b[off : off+int(length)])}
			off += int(length)
		}
		for i, q := range ps {
			if q.ID() == code {
				return Metadata{}, fmt.Errorf("%w: %s at offset %d repeats the one at offset %d",
					ErrDuplicate, codeName(code), start, starts[i])
			}
		}
		ps = append(ps, p)
		starts = append(starts, start)
	}
	slices.SortFunc(ps, func(a, b Protocol) int { return cmp.Compare(a.ID(), b.ID()) })
	return Metadata{protocols: ps}, nil
}

func varintProblem(err error) string {
	switch {
	case errors.Is(err, varint.ErrUnderflow):
		return "truncated varint"
	case errors.Is(err, varint.ErrNotMinimal):
		return "varint not minimally encoded"
	case errors.Is(err, varint.ErrOverflow):
		return "varint longer than 9 bytes (larger than 2^63-1)"
	}
	return err.Error()
}

// Encode returns the wire form of m: each protocol's encoding, in ascending
// order of code, as go-libipni writes it. The empty metadata encodes to no
// bytes. Decode(m.Encode()) equals m.
func (m Metadata) Encode() []byte {
	if len(m.protocols) == 0 {
		return nil
	}
	dst := make([]byte, 0, m.size())
	for _, p := range m.protocols {
		dst = p.appendTo(dst)
	}
	return dst
}

// size returns the length of the encoding without building it.
func (m Metadata) size() int {
	n := 0
	for _, p := range m.protocols {
		switch v := p.(type) {
		case Unknown:
			n += varint.UvarintSize(v.Code) + varint.UvarintSize(uint64(len(v.Payload))) + len(v.Payload)
		default:
			var buf [128]byte
			n += len(p.appendTo(buf[:0]))
		}
	}
	return n
}

// Len returns the number of protocols.
func (m Metadata) Len() int { return len(m.protocols) }

// Protocols returns the protocols in ascending order of code. The slice is
// a copy; the payloads of Unknown protocols are shared and must not be
// modified.
func (m Metadata) Protocols() []Protocol { return slices.Clone(m.protocols) }

// Get returns the protocol with the given code, if m has it. Assert its
// type to read its fields:
//
//	if p, ok := m.Get(metadata.CodeGraphsyncFilecoinV1); ok {
//		piece := p.(metadata.GraphsyncFilecoinV1).PieceCID
//	}
func (m Metadata) Get(code uint64) (Protocol, bool) {
	i, ok := slices.BinarySearchFunc(m.protocols, code, func(p Protocol, c uint64) int { return cmp.Compare(p.ID(), c) })
	if !ok {
		return nil, false
	}
	return m.protocols[i], true
}

// Equal reports whether m and o have the same protocols with the same
// payloads, which is when their encodings are equal.
func (m Metadata) Equal(o Metadata) bool {
	return len(m.protocols) == len(o.protocols) && bytes.Equal(m.Encode(), o.Encode())
}

// String lists the protocols, for logs and debugging.
func (m Metadata) String() string {
	names := make([]string, len(m.protocols))
	for i, p := range m.protocols {
		names[i] = p.String()
	}
	return "[" + strings.Join(names, " ") + "]"
}

// PieceCID returns the PieceCID of the graphsync-filecoinv1 protocol in the
// raw metadata b, and whether b has that protocol. It decodes all of b with
// [Decode], so it fails on malformed metadata even when the graphsync part
// is fine, and finds graphsync wherever it is among the protocols.
func PieceCID(b []byte) (cid.Cid, bool, error) {
	m, err := Decode(b)
	if err != nil {
		return cid.Undef, false, err
	}
	p, ok := m.Get(CodeGraphsyncFilecoinV1)
	if !ok {
		return cid.Undef, false, nil
	}
	return p.(GraphsyncFilecoinV1).PieceCID, true, nil
}
