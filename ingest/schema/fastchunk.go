package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"slices"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// The entry-chunk fast path. Entry chunks are most of what an indexer
// decodes, and they are almost always in the canonical form the reference
// encoders write. These parsers accept only that exact form and report
// false for anything else (whitespace, other key orders, padding, escapes,
// non-minimal CBOR lengths, trailing bytes), in which case the caller
// decodes with go-ipld-prime, which then decides. So the fast path changes
// speed, never what is accepted; the fuzz tests compare the two.
//
// They append the entries to dst (returned as it was, in length, when they
// report false). The entries of a dag-json chunk share one buffer, each
// capped at its own length: scratch, when given (grown as needed), or a new
// one; those of a dag-cbor chunk share a copy of the block or, with alias,
// the block itself.

var (
	jsonChunkStart = []byte(`{"Entries":[`)
	jsonBytesStart = []byte(`{"/":{"bytes":"`)
	jsonBytesEnd   = []byte(`"}}`)
	jsonNextStart  = []byte(`,"Next":{"/":"`)
	jsonLinkEnd    = []byte(`"}`)
)

func fastChunkJSON(b []byte) (*EntryChunk, bool) {
	entries, next, ok := parseChunkJSON(nil, nil, b)
	if !ok {
		return nil, false
	}
	return &EntryChunk{Entries: nonNil(entries), Next: next}, true
}

func fastChunkCBOR(b []byte) (*EntryChunk, bool) {
	entries, next, ok := parseChunkCBOR(nil, b, false)
	if !ok {
		return nil, false
	}
	return &EntryChunk{Entries: nonNil(entries), Next: next}, true
}

func parseChunkJSON(dst []multihash.Multihash, scratch *[]byte, b []byte) ([]multihash.Multihash, cid.Cid, bool) {
	if !bytes.HasPrefix(b, jsonChunkStart) {
		return dst, cid.Undef, false
	}
	b = b[len(jsonChunkStart):]
	// First pass: check the structure, count the entries and their
	// decoded size. The base64 alphabet is left to the decoder of the
	// second pass.
	rest, count, total := b, 0, 0
	for len(rest) > 0 && rest[0] != ']' {
		if count > 0 {
			if rest[0] != ',' {
				return dst, cid.Undef, false
			}
			rest = rest[1:]
		}
		if !bytes.HasPrefix(rest, jsonBytesStart) {
			return dst, cid.Undef, false
		}
		rest = rest[len(jsonBytesStart):]
		n := bytes.IndexByte(rest, '"')
		if n < 0 || n%4 == 1 || !bytes.HasPrefix(rest[n:], jsonBytesEnd) {
			return dst, cid.Undef, false
		}
		count++
		total += base64.RawStdEncoding.DecodedLen(n)
		rest = rest[n+len(jsonBytesEnd):]
		if count > MaxChunkEntries {
			return dst, cid.Undef, false
		}
	}
	if len(rest) == 0 {
		return dst, cid.Undef, false
	}
	rest = rest[1:] // ']'
	next := cid.Undef
	if bytes.HasPrefix(rest, jsonNextStart) {
		rest = rest[len(jsonNextStart):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return dst, cid.Undef, false
		}
		for _, c := range rest[:end] {
			if c < 0x20 || c > 0x7e || c == '\\' {
				return dst, cid.Undef, false
			}
		}
		c, err := cid.Decode(string(rest[:end]))
		if err != nil {
			return dst, cid.Undef, false
		}
		next = c
		rest = rest[end:]
		if !bytes.HasPrefix(rest, jsonLinkEnd) {
			return dst, cid.Undef, false
		}
		rest = rest[len(jsonLinkEnd):]
	}
	if len(rest) != 1 || rest[0] != '}' {
		return dst, cid.Undef, false
	}
	// Second pass, over the structure checked: decode.
	orig := len(dst)
	dst = slices.Grow(dst, count)
	var buf []byte
	if scratch != nil {
		buf = slices.Grow((*scratch)[:0], total)[:total]
		*scratch = buf
	} else {
		buf = make([]byte, total)
	}
	at := 0
	rest = b
	for i := range count {
		if i > 0 {
			rest = rest[1:] // ','
		}
		rest = rest[len(jsonBytesStart):]
		n := bytes.IndexByte(rest, '"')
		k := base64.RawStdEncoding.DecodedLen(n)
		if !decodeBase64(buf[at:at+k], rest[:n]) {
			clear(dst[orig:])
			return dst[:orig], cid.Undef, false
		}
		dst = append(dst, buf[at:at+k:at+k])
		at += k
		rest = rest[n+len(jsonBytesEnd):]
	}
	return dst, next, true
}

// base64Values maps the bytes of the standard base64 alphabet to their
// values, and every other byte to 0xff.
var base64Values = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = byte(i)
	}
	return t
}()

// decodeBase64 decodes src, unpadded standard base64 of a length that is
// not 1 modulo 4, into dst, which has exactly its decoded length. It
// reports false for any byte outside the alphabet (where
// encoding/base64 skips CR and LF), and otherwise decodes as
// base64.RawStdEncoding does, ignoring the unused bits of the last
// character as it does. It is the entry chunks' fast path: four
// characters at a time, with no error values and no per-call setup.
func decodeBase64(dst, src []byte) bool {
	for len(src) >= 4 && len(dst) >= 3 {
		a, b, c, d := base64Values[src[0]], base64Values[src[1]], base64Values[src[2]], base64Values[src[3]]
		if (a|b|c|d)&0xc0 != 0 {
			return false
		}
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		dst[0], dst[1], dst[2] = byte(v>>16), byte(v>>8), byte(v)
		src, dst = src[4:], dst[3:]
	}
	switch {
	case len(src) == 0 && len(dst) == 0:
		return true
	case len(src) == 2 && len(dst) == 1:
		a, b := base64Values[src[0]], base64Values[src[1]]
		if (a|b)&0xc0 != 0 {
			return false
		}
		dst[0] = a<<2 | b>>4
		return true
	case len(src) == 3 && len(dst) == 2:
		a, b, c := base64Values[src[0]], base64Values[src[1]], base64Values[src[2]]
		if (a|b|c)&0xc0 != 0 {
			return false
		}
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6
		dst[0], dst[1] = byte(v>>16), byte(v>>8)
		return true
	}
	return false
}

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

func parseChunkCBOR(dst []multihash.Multihash, b []byte, alias bool) ([]multihash.Multihash, cid.Cid, bool) {
	if len(b) == 0 || (b[0] != 0xa1 && b[0] != 0xa2) {
		return dst, cid.Undef, false
	}
	hasNext := b[0] == 0xa2
	b = b[1:]
	next := cid.Undef
	if hasNext {
		if !bytes.HasPrefix(b, cborNextKey) || !bytes.HasPrefix(b[len(cborNextKey):], cborLinkTag) {
			return dst, cid.Undef, false
		}
		b = b[len(cborNextKey)+len(cborLinkTag):]
		n, rest, ok := cborHead(b, 2)
		if !ok || n < 1 || n > uint64(len(rest)) || rest[0] != 0 {
			return dst, cid.Undef, false
		}
		c, err := cid.Cast(rest[1:n])
		if err != nil {
			return dst, cid.Undef, false
		}
		next, b = c, rest[n:]
	}
	if !bytes.HasPrefix(b, cborEntriesKey) {
		return dst, cid.Undef, false
	}
	count, b, ok := cborHead(b[len(cborEntriesKey):], 4)
	if !ok || count > MaxChunkEntries || count > uint64(len(b)) {
		return dst, cid.Undef, false
	}
	buf := b
	if !alias {
		// One copy of the whole remaining input backs every entry.
		buf = append([]byte(nil), b...)
	}
	orig := len(dst)
	dst = slices.Grow(dst, int(count))
	at := 0
	for range count {
		n, rest, ok := cborHead(buf[at:], 2)
		if !ok || n > uint64(len(rest)) {
			clear(dst[orig:])
			return dst[:orig], cid.Undef, false
		}
		start := len(buf) - len(rest)
		end := start + int(n)
		dst = append(dst, buf[start:end:end])
		at = end
	}
	if at != len(buf) {
		clear(dst[orig:])
		return dst[:orig], cid.Undef, false
	}
	return dst, next, true
}
