package store

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/multiformats/go-multihash"
)

// outsideVarintSpec reports whether one of the two leading varints of b
// decodes with encoding/binary but is not a varint as the multiformats
// unsigned-varint spec has it: minimally encoded, at most 9 bytes.
func outsideVarintSpec(b []byte) bool {
	for range 2 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return false // malformed for both readers
		}
		if n > 9 || n != len(binary.AppendUvarint(nil, x)) {
			return true
		}
		b = b[n:]
	}
	return false
}

// FuzzValidateMultihash checks ValidateMultihash against go-multihash's Cast.
//
// They differ on one class of input, which the comparison leaves out:
// ValidateMultihash reads varints with encoding/binary, so it accepts
// non-minimal encodings (0x92 0x00 for code 0x12) and 10-byte varints, both
// of which go-varint, and so Cast, rejects. (This go-multihash does not check
// that the code is a known hash function, so unknown codes are not a
// difference.) Where both varints are minimal and at most 9 bytes, the two
// must agree exactly, malformed input included.
func FuzzValidateMultihash(f *testing.F) {
	sha, _ := multihash.Sum([]byte("x"), multihash.SHA2_256, -1)
	id, _ := multihash.Sum([]byte("x"), multihash.IDENTITY, -1)
	f.Add([]byte(sha))
	f.Add([]byte(id))
	f.Add([]byte{})
	f.Add([]byte{0x00})
	f.Add([]byte{0x00, 0x00})
	f.Add([]byte{0x12, 0x20})
	f.Add([]byte{0x12, 0x01, 0xaa, 0xbb})
	f.Add([]byte{0x80})
	f.Add([]byte{0x12, 0x80})
	f.Add([]byte{0x92, 0x00, 0x00})                                           // non-minimal code
	f.Add([]byte{0x12, 0x80, 0x00})                                           // non-minimal length
	f.Add([]byte{0xb2, 0x40, 0x01, 0x01})                                     // blake2b-256 code, 2-byte varint
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00}) // 9-byte code
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ValidateMultihash(multihash.Multihash(b))
		if err != nil && !errors.Is(err, ErrInvalidMultihash) {
			t.Fatalf("ValidateMultihash(%x) = %v, want an error wrapping ErrInvalidMultihash", b, err)
		}
		if outsideVarintSpec(b) {
			return // see above
		}
		_, castErr := multihash.Cast(b)
		if (err == nil) != (castErr == nil) {
			t.Fatalf("ValidateMultihash(%x) = %v, but multihash.Cast says %v", b, err, castErr)
		}
	})
}
