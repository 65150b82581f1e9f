package piece

import (
	"github.com/ipfs/go-cid"
)

// This file holds allocation-free forms of the CID string conversions on
// the sample path. Each one produces exactly what go-cid produces (tests
// compare them); they exist only so a request does not allocate a string
// per CID.

// b32 is the alphabet of multibase base32 ('b'): RFC 4648, lower case, no
// padding.
const b32 = "abcdefghijklmnopqrstuvwxyz234567"

// b32Value maps a byte of the alphabet to its 5-bit value, 0xff for others.
var b32Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(b32) {
		t[b32[i]] = byte(i)
	}
	return t
}()

// appendCID appends c.String() to dst: "b" and base32 of the binary CID
// for CIDv1, base58 for CIDv0 (which allocates, as CIDv0 is rare).
func appendCID(dst []byte, c cid.Cid) []byte {
	if c.Version() == 0 {
		return append(dst, c.String()...)
	}
	dst = append(dst, 'b')
	return appendBase32(dst, c.KeyString())
}

// appendBase32 appends the lower-case, unpadded RFC 4648 base32 of src.
func appendBase32(dst []byte, src string) []byte {
	for len(src) >= 5 {
		v := uint64(src[0])<<32 | uint64(src[1])<<24 | uint64(src[2])<<16 | uint64(src[3])<<8 | uint64(src[4])
		dst = append(dst,
			b32[v>>35&31], b32[v>>30&31], b32[v>>25&31], b32[v>>20&31],
			b32[v>>15&31], b32[v>>10&31], b32[v>>5&31], b32[v&31])
		src = src[5:]
	}
	if rem := len(src); rem > 0 {
		var v uint64
		for i := range 5 {
			v <<= 8
			if i < rem {
				v |= uint64(src[i])
			}
		}
		for i := range (rem*8 + 4) / 5 {
			dst = append(dst, b32[v>>(35-5*i)&31])
		}
	}
	return dst
}

// decodeBase32 appends the bytes of s, lower-case unpadded base32, to dst.
// It reports false for a character outside the alphabet or an impossible
// length; it does not check the unused bits of the last character (callers
// re-encode and compare).
func decodeBase32(dst []byte, s string) ([]byte, bool) {
	switch len(s) % 8 {
	case 1, 3, 6:
		return dst, false
	}
	var v uint64
	bits := 0
	for i := 0; i < len(s); i++ {
		x := b32Value[s[i]]
		if x == 0xff {
			return dst, false
		}
		v = v<<5 | uint64(x)
		bits += 5
		if bits >= 8 {
			bits -= 8
			dst = append(dst, byte(v>>bits))
		}
	}
	return dst, true
}

// decodeCanonicalCID decodes s when it is the canonical string of a CIDv1
// (what cid.Cid.String returns), without allocating anything but the CID.
// ok is false for any other string; the caller then uses cid.Decode, which
// accepts every multibase.
func decodeCanonicalCID(s string) (c cid.Cid, ok bool) {
	if len(s) < 2 || len(s) > 200 || s[0] != 'b' {
		return cid.Undef, false
	}
	var stack [128]byte
	raw, ok := decodeBase32(stack[:0], s[1:])
	if !ok {
		return cid.Undef, false
	}
	c, err := cid.Cast(raw)
	if err != nil || c.Version() != 1 {
		return cid.Undef, false
	}
	var back [256]byte
	if string(appendCID(back[:0], c)) != s {
		return cid.Undef, false
	}
	return c, true
}
