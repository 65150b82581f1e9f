package cidkey

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multibase"
	"github.com/multiformats/go-multihash"
)

// Parse decodes s, a CID of any version, codec and multibase go-cid reads
// (a CIDv0 "Qm…" too), and returns its multihash. The error names the
// problem once: go-cid repeats its own prefix ("invalid cid: invalid cid:
// cid too short"), which Parse drops.
func Parse(s string) (multihash.Multihash, error) {
	if s == "" {
		return nil, errors.New("empty CID")
	}
	if !(len(s) == 46 && strings.HasPrefix(s, "Qm")) { // not a CIDv0
		if _, ok := multibase.EncodingToStr[multibase.Encoding(s[0])]; !ok {
			return nil, fmt.Errorf("unsupported multibase prefix %q", s[:1])
		}
	}
	c, err := cid.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("not a valid CID: %s", cause(err))
	}
	mh := c.Hash()
	// cid.Decode validates the multihash; check again so that a change
	// there cannot hand a backend a malformed key.
	if _, err := multihash.Decode(mh); err != nil {
		return nil, fmt.Errorf("CID holds a bad multihash: %v", err)
	}
	return mh, nil
}

// goCIDPrefix is the prefix go-cid puts on its errors, once per layer.
const goCIDPrefix = "invalid cid: "

// cause is err's text without go-cid's prefixes.
func cause(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, goCIDPrefix) {
		msg = msg[len(goCIDPrefix):]
	}
	return msg
}
