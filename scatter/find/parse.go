package find

import (
	"errors"
	"fmt"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/b58"
	"github.com/indexkit/indexkit/internal/cidkey"
)

// findMaxKeyLen bounds the encoded multihash or CID taken from a request
// path. Base58 decoding is quadratic in the input length, so without a bound
// one request with a megabyte-long path would cost seconds of CPU. 1,024
// characters hold a 512-byte digest in hex, far more than any hash function
// in use produces.
const findMaxKeyLen = 1024

// errFindKeyTooLong is returned for a path key longer than findMaxKeyLen.
var errFindKeyTooLong = fmt.Errorf("longer than %d characters", findMaxKeyLen)

// parseMultihashKey decodes the {b58|hex} element of GET /multihash/..., as
// the reference does: base58 first, then hex. The result is a well-formed
// multihash (code, length and exactly that many digest bytes).
func parseMultihashKey(s string) (multihash.Multihash, error) {
	switch {
	case s == "":
		return nil, errors.New("empty multihash")
	case len(s) > findMaxKeyLen:
		return nil, errFindKeyTooLong
	}
	// A base58 string decodes to at most as many bytes as it has digits.
	if b, err := b58.AppendDecode(make([]byte, 0, len(s)), s); err == nil {
		if mh, err := multihash.Cast(b); err == nil {
			return mh, nil
		}
	}
	mh, hexErr := multihash.FromHexString(s)
	if hexErr == nil {
		return mh, nil
	}
	return nil, errors.New("not a valid base58 or hex encoded multihash")
}

// parseCIDKey decodes the element of GET /cid/... (any CID version, codec
// and multibase) and returns its multihash; the error is worded as Routing
// V1's (internal/cidkey).
func parseCIDKey(s string) (multihash.Multihash, error) {
	if len(s) > findMaxKeyLen {
		return nil, errFindKeyTooLong
	}
	return cidkey.Parse(s)
}
