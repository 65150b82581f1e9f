package find

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// FuzzFindPathKey feeds arbitrary path elements to the multihash and CID
// parsers of the find handler: they must never panic, and what they accept
// must be one well-formed multihash that re-encodes to itself.
func FuzzFindPathKey(f *testing.F) {
	mh, _ := multihash.Sum([]byte("seed"), multihash.SHA2_256, -1)
	for _, s := range []string{
		mh.B58String(), mh.HexString(), cid.NewCidV1(cid.Raw, mh).String(), cid.NewCidV0(mh).String(),
		"", "0", "zz", "1220", strings.Repeat("1", 40), "QmNotReallyACid", "bafy", "\x00\xff",
		"0020" + strings.Repeat("ab", 32), "1220" + strings.Repeat("ab", 31),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range map[string]func(string) (multihash.Multihash, error){
			"multihash": parseMultihashKey, "cid": parseCIDKey,
		} {
			got, err := parse(s)
			if err != nil {
				if got != nil {
					t.Fatalf("%s %q: result %x with error %v", name, s, got, err)
				}
				continue
			}
			if err := store.ValidateMultihash(got); err != nil {
				t.Fatalf("%s %q: accepted a malformed multihash %x: %v", name, s, got, err)
			}
			again, err := parseMultihashKey(got.B58String())
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("%s %q: %x does not round-trip through base58: %x, %v", name, s, got, again, err)
			}
		}
	})
}
