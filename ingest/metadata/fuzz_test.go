package metadata_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/ingest/metadata"
)

// FuzzDecode checks that Decode never panics, that every error wraps one of
// the package's sentinels, and that whatever decodes re-encodes to bytes of
// the same length that decode to an equal value and encode again to
// themselves. The seeds are the golden vectors and the inputs of the
// reference-bug and lenient-decoding tests.
func FuzzDecode(f *testing.F) {
	_, vectors := readGolden(f)
	for _, b := range vectors {
		f.Add(b)
		f.Add(append(append([]byte{}, b...), 0xff))   // trailing garbage
		f.Add(append([]byte{0xa0, 0x12, 0x00}, b...)) // out of order
		if len(b) > 1 {
			f.Add(b[:len(b)-1]) // truncated
		}
	}
	for _, s := range []string{
		"",
		specEntry + "8012",
		"a01200" + specEntry + "8012",
		gsCode + gsMap3 + keyFast + cborFalse + keyPiece + specLink + keyVer + cborTrue,
		"0200" + "0101ff",
		"ffffffffffffffff7f00",
		"80128012",
		"e00305686568",
		gsCode + "b803" + keyPiece + specLink + keyVer + cborTrue + keyFast + cborTrue,
	} {
		f.Add(unhex(f, s))
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := metadata.Decode(b)
		if err != nil {
			if !errors.Is(err, metadata.ErrMalformed) && !errors.Is(err, metadata.ErrDuplicate) &&
				!errors.Is(err, metadata.ErrTooLarge) {
				t.Fatalf("Decode(%x): error %q wraps no sentinel", b, err)
			}
			if m.Len() != 0 {
				t.Fatalf("Decode(%x) failed but returned %v", b, m)
			}
			return
		}
		enc := m.Encode()
		if len(enc) != len(b) {
			t.Fatalf("Decode(%x) = %v re-encodes to %d bytes %x, not %d", b, m, len(enc), enc, len(b))
		}
		m2, err := metadata.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(%x) = %v, whose encoding %x does not decode: %v", b, m, enc, err)
		}
		if !m2.Equal(m) {
			t.Fatalf("Decode(%x) = %v, but its encoding %x decodes to %v", b, m, enc, m2)
		}
		if enc2 := m2.Encode(); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding is not stable: %x then %x", enc, enc2)
		}
		// New accepts what Decode returns and builds the same value.
		m3, err := metadata.New(m.Protocols()...)
		if err != nil || !m3.Equal(m) {
			t.Fatalf("New(Decode(%x).Protocols()...) = %v, %v", b, m3, err)
		}
		// PieceCID agrees with Decode.
		c, ok, err := metadata.PieceCID(b)
		p, has := m.Get(metadata.CodeGraphsyncFilecoinV1)
		if err != nil || ok != has || (has && !c.Equals(p.(metadata.GraphsyncFilecoinV1).PieceCID)) {
			t.Fatalf("PieceCID(%x) = %v, %t, %v; Decode has %v", b, c, ok, err, p)
		}
		_ = m.String()
	})
}
