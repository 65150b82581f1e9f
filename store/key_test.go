package store_test

import (
	"bytes"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// notInGoMultihash are codes of the multicodec table that go-multihash
// v0.2.3 does not name.
var notInGoMultihash = map[string]uint64{"sha2-384": 0x20, "sha2-224": 0x1013, "sha2-512-224": 0x1014, "sha2-512-256": 0x1015}

// AppendIndexKey cuts the digests of the listed hash functions to 20
// bytes when they are longer, and keeps every other multihash whole; the
// form of a form is itself.
func TestAppendIndexKey(t *testing.T) {
	digest := bytes.Repeat([]byte{0xab}, 64)
	for _, tc := range []struct {
		name string
		size int
		cut  bool
	}{
		{"sha2-256", 32, true}, {"sha2-512", 64, true}, {"sha2-384", 48, true}, {"sha2-224", 28, true},
		{"sha2-512-224", 28, true}, {"sha2-512-256", 32, true}, {"sha2-256-trunc254-padded", 32, true},
		{"sha3-224", 28, true}, {"sha3-256", 32, true}, {"sha3-384", 48, true}, {"sha3-512", 64, true},
		{"shake-128", 32, true}, {"shake-256", 64, true}, {"keccak-224", 28, true}, {"keccak-256", 32, true},
		{"keccak-384", 48, true}, {"keccak-512", 64, true}, {"blake3", 32, true},
		{"blake2b-168", 21, true}, {"blake2b-512", 64, true}, {"blake2s-256", 32, true}, {"blake2s-168", 21, true},
		{"sha2-256", 20, false}, {"sha2-256", 16, false}, {"blake2b-160", 20, false}, {"sha1", 20, false},
		{"identity", 40, false}, {"murmur3-x64-64", 8, false}, {"dbl-sha2-256", 32, false}, {"md5", 16, false},
	} {
		code, ok := multihash.Names[tc.name]
		if !ok {
			code, ok = notInGoMultihash[tc.name]
		}
		if !ok {
			t.Fatalf("no code for %s", tc.name)
		}
		mh, err := multihash.Encode(digest[:tc.size], code)
		if err != nil {
			t.Fatal(err)
		}
		form := store.IndexKey(mh)
		if err := store.ValidateMultihash(form); err != nil {
			t.Errorf("%s/%d: form %x is not a multihash: %v", tc.name, tc.size, form, err)
		}
		if again := store.IndexKey(form); !bytes.Equal(again, form) {
			t.Errorf("%s/%d: form of the form %x is %x", tc.name, tc.size, form, again)
		}
		dec, err := multihash.Decode(form)
		if err != nil {
			t.Fatal(err)
		}
		if want := tc.size; tc.cut && dec.Length != store.DigestPrefixLen || !tc.cut && !bytes.Equal(form, mh) || dec.Code != code {
			t.Errorf("%s/%d: form %x (code %#x, %d bytes); cut: %v (want %d bytes)", tc.name, tc.size, form, dec.Code, dec.Length, tc.cut, want)
		}
	}
}

// For any valid multihash, the form is a valid multihash of the same
// code, its own form, and no longer than the multihash.
func FuzzIndexKey(f *testing.F) {
	f.Add([]byte{0x12, 0x20}, 32)
	f.Add([]byte{0x00, 0x05}, 5)
	f.Add([]byte{0xa0, 0xe4, 0x02, 0x30}, 48)
	f.Fuzz(func(t *testing.T, header []byte, n int) {
		if n < 0 || n > 256 {
			return
		}
		mh := append(append([]byte(nil), header...), bytes.Repeat([]byte{7}, n)...)
		if store.ValidateMultihash(mh) != nil {
			return
		}
		form := store.IndexKey(mh)
		if err := store.ValidateMultihash(form); err != nil {
			t.Fatalf("form %x of %x: %v", form, mh, err)
		}
		if again := store.IndexKey(form); !bytes.Equal(again, form) || len(form) > len(mh) {
			t.Fatalf("form %x of %x; its form %x", form, mh, again)
		}
		a, _ := multihash.Decode(mh)
		if b, err := multihash.Decode(form); err == nil && a != nil && b.Code != a.Code {
			t.Fatalf("form %x of %x changes the code", form, mh)
		}
	})
}
