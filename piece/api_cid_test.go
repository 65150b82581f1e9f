package piece

import (
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// TestAppendCID: the allocation-free stringification is cid.Cid.String for
// CIDv1 of every length remainder and for CIDv0.
func TestAppendCID(t *testing.T) {
	for i := range 200 {
		data := []byte(strings.Repeat("x", i))
		for _, pre := range []cid.Prefix{
			{Version: 1, Codec: cid.Raw, MhType: multihash.SHA2_256, MhLength: -1},
			{Version: 1, Codec: cid.DagCBOR, MhType: multihash.IDENTITY, MhLength: -1},
			{Version: 0, Codec: cid.DagProtobuf, MhType: multihash.SHA2_256, MhLength: -1},
		} {
			if pre.MhType == multihash.IDENTITY && i > 64 {
				continue
			}
			c, err := pre.Sum(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(appendCID(nil, c)); got != c.String() {
				t.Fatalf("appendCID(%s) = %q", c, got)
			}
			d, ok := decodeCanonicalCID(c.String())
			if ok != (c.Version() == 1) || (ok && !d.Equals(c)) {
				t.Fatalf("decodeCanonicalCID(%s) = %v, %v", c, d, ok)
			}
		}
	}
}

// FuzzDecodeCanonicalCID: what the fast decoder accepts, cid.Decode
// decodes to the same CID, whose String is the input.
func FuzzDecodeCanonicalCID(f *testing.F) {
	f.Add("baga6ea4seaqg6cyyqvgix4n2gdvpedm4ed2j5mle55le7k2eszsjvml5yupgsma")
	f.Add("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku")
	f.Add("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvykv")
	f.Add("BAFKREIHDWDCEFGH4DQKJV67UZCMW7OJEE6XEDZDETOJUZJEVTENXQUVYKU")
	f.Add("QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n")
	f.Add("b")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := decodeCanonicalCID(s)
		if !ok {
			return
		}
		d, err := cid.Decode(s)
		if err != nil || !d.Equals(c) || c.String() != s {
			t.Fatalf("%q: fast %v, cid.Decode %v %v", s, c, d, err)
		}
	})
}
