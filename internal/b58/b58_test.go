package b58_test

import (
	"bytes"
	"crypto/sha256"
	"testing"

	mrbase58 "github.com/mr-tron/base58"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/b58"
)

// The oracle is github.com/mr-tron/base58, the decoder go-multihash uses.
func FuzzDecode(f *testing.F) {
	d := sha256.Sum256([]byte("b58"))
	enc, _ := multihash.Encode(d[:], multihash.SHA2_256)
	mh := multihash.Multihash(enc)
	for _, s := range []string{"", "1", "11", "1112", "z", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "0", "O", "Il", "é", "2NEpo7TZRRrLZSi2U", mh.B58String(), "1" + mh.B58String()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := mrbase58.Decode(s)
		got, err := b58.Decode(s)
		if (err != nil) != (werr != nil) {
			t.Fatalf("Decode(%q): error %v, mr-tron's %v", s, err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("Decode(%q) = %x, mr-tron's %x", s, got, want)
		}
	})
}

func TestDecodeLong(t *testing.T) {
	// Longer than the stack limbs hold.
	in := bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 200)
	s := mrbase58.Encode(in)
	got, err := b58.Decode(s)
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("Decode of %d digits: %x, %v", len(s), got, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for s, want := range map[string]string{
		"":       "b58: empty string",
		"abc0de": `b58: invalid character "0" at 3`,
		"Qm\xff": `b58: invalid character "\xff" at 2`,
	} {
		if _, err := b58.Decode(s); err == nil || err.Error() != want {
			t.Errorf("Decode(%q): %v, want %q", s, err, want)
		}
	}
}

// The decoder beside mr-tron's, on a sha2-256 multihash (46 digits).
func BenchmarkDecode(b *testing.B) {
	d := sha256.Sum256([]byte("b58"))
	enc, _ := multihash.Encode(d[:], multihash.SHA2_256)
	mh := multihash.Multihash(enc)
	s := mh.B58String()
	b.Run("b58", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		for b.Loop() {
			if _, err := b58.AppendDecode(buf[:0], s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mr-tron", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mrbase58.Decode(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
