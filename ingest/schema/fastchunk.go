package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// The entry-chunk fast path. Entry chunks are most of what an indexer
// decodes, and they are almost always in the canonical form the reference
// encoders write. These parsers accept only that exact form and report
// false for anything else (whitespace, other key orders, padding, escapes,
// non-minimal CBOR lengths, trailing bytes), in which case the caller
// decodes with go-ipld-prime, which then decides. So the fast path changes
// speed, never what is accepted; the fuzz tests compare the two. All
// entries share one backing array, each capped at its own length.

var (
	jsonChunkStart = []byte(`{"Entries":[`)
	jsonBytesStart = []byte(`{"/":{"bytes":"`)
	jsonBytesEnd   = []byte(`"}}`)
	jsonNextStart  = []byte(`,"Next":{"/":"`)
	jsonLinkEnd    = []byte(`"}`)
)

func fastChunkJSON(b []byte) (*EntryChunk, bool) {
	if !bytes.HasPrefix(b, jsonChunkStart) {
		return nil, false
	}
	b = b[len(jsonChunkStart):]
	// First pass: find the base64 texts and the total decoded size.
	type span struct{ off, n int }
	var spans []span
	rest, total := b, 0
	for len(rest) > 0 && rest[0] != ']' {
		if len(spans) > 0 {
			if rest[0] != ',' {
				return nil, false
			}
			rest = rest[1:]
		}
		if !bytes.HasPrefix(rest, jsonBytesStart) {
			return nil, false
		}
		rest = rest[len(jsonBytesStart):]
		n := 0
		for n < len(rest) && b64Alphabet[rest[n]] {
			n++
		}
		if !bytes.HasPrefix(rest[n:], jsonBytesEnd) || n%4 == 1 {
			return nil, false
		}
		spans = append(spans, span{len(b) - len(rest), n})
		total += base64.RawStdEncoding.DecodedLen(n)
		rest = rest[n+len(jsonBytesEnd):]
		if len(spans) > MaxChunkEntries {
			return nil, false
		}
	}
	if len(rest) == 0 {
		return nil, false
	}
	rest = rest[1:] // ']'
	ch := &EntryChunk{Entries: make([]multihash.Multihash, len(spans))}
	if bytes.HasPrefix(rest, jsonNextStart) {
		rest = rest[len(jsonNextStart):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return nil, false
		}
		for _, c := range rest[:end] {
			if c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false
			}
		}
		c, err := cid.Decode(string(rest[:end]))
		if err != nil {
			return nil, false
		}
		ch.Next = c
		rest = rest[end:]
		if !bytes.HasPrefix(rest, jsonLinkEnd) {
			return nil, false
		}
		rest = rest[len(jsonLinkEnd):]
	}
	if len(rest) != 1 || rest[0] != '}' {
		return nil, false
	}
	buf := make([]byte, total)
	at := 0
	for i, s := range spans {
		n, err := base64.RawStdEncoding.Decode(buf[at:], b[s.off:s.off+s.n])
		if err != nil {
			return nil, false
		}
		ch.Entries[i] = buf[at : at+n : at+n]
		at += n
	}
	return ch, true
}

// b64Alphabet marks the bytes of the standard base64 alphabet.
var b64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// CBOR canonical form: keys sorted length first, so Next precedes Entries.
var (
	cborNextKey    = []byte{0x64, 'N', 'e', 'x', 't'}
	cborEntriesKey = []byte{0x67, 'E', 'n', 't', 'r', 'i', 'e', 's'}
	cborLinkTag    = []byte{0xd8, 0x2a}
)

// cborHead reads a CBOR head of major type major with a minimally encoded
// argument, returning the argument and the rest.
func cborHead(b []byte, major byte) (uint64, []byte, bool) {
	if len(b) == 0 || b[0]>>5 != major {
		return 0, nil, false
	}
	info := b[0] & 0x1f
	b = b[1:]
	var v, min uint64
	switch {
	case info < 24:
		return uint64(info), b, true
	case info == 24 && len(b) >= 1:
		v, min, b = uint64(b[0]), 24, b[1:]
	case info == 25 && len(b) >= 2:
		v, min, b = uint64(binary.BigEndian.Uint16(b)), 1<<8, b[2:]
	case info == 26 && len(b) >= 4:
		v, min, b = uint64(binary.BigEndian.Uint32(b)), 1<<16, b[4:]
	case info == 27 && len(b) >= 8:
		v, min, b = binary.BigEndian.Uint64(b), 1<<32, b[8:]
	default:
		return 0, nil, false
	}
	return v, b, v >= min
}

func fastChunkCBOR(b []byte) (*EntryChunk, bool) {
	if len(b) == 0 || (b[0] != 0xa1 && b[0] != 0xa2) {
		return nil, false
	}
	hasNext := b[0] == 0xa2
	b = b[1:]
	ch := &EntryChunk{}
	if hasNext {
		if !bytes.HasPrefix(b, cborNextKey) || !bytes.HasPrefix(b[len(cborNextKey):], cborLinkTag) {
			return nil, false
		}
		b = b[len(cborNextKey)+len(cborLinkTag):]
		n, rest, ok := cborHead(b, 2)
		if !ok || n < 1 || n > uint64(len(rest)) || rest[0] != 0 {
			return nil, false
		}
		c, err := cid.Cast(rest[1:n])
		if err != nil {
			return nil, false
		}
		ch.Next, b = c, rest[n:]
	}
	if !bytes.HasPrefix(b, cborEntriesKey) {
		return nil, false
	}
	count, b, ok := cborHead(b[len(cborEntriesKey):], 4)
	if !ok || count > MaxChunkEntries || count > uint64(len(b)) {
		return nil, false
	}
	// One copy of the whole remaining input backs every entry.
	buf := append([]byte(nil), b...)
	ch.Entries = make([]multihash.Multihash, count)
	at := 0
	for i := range ch.Entries {
		n, rest, ok := cborHead(buf[at:], 2)
		if !ok || n > uint64(len(rest)) {
			return nil, false
		}
		start := len(buf) - len(rest)
		end := start + int(n)
		ch.Entries[i] = buf[start:end:end]
		at = end
	}
	if at != len(buf) {
		return nil, false
	}
	return ch, true
}
