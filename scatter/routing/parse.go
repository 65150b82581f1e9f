package routing

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multibase"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/cidkey"
)

// Bounds of what a request may carry.
const (
	// MaxPathLen bounds the path after [Prefix], in bytes: a CID or peer
	// ID of a 512-byte digest fits many times over. Base58 decoding is
	// quadratic in its input, so an unbounded path would be a cheap way
	// to burn CPU.
	MaxPathLen = 1024
	// MaxQueryLen bounds the query string, in bytes.
	MaxQueryLen = 4096
	// maxProtocolName is the spec's bound on a transfer protocol name.
	maxProtocolName = 63
)

// Query parameters of the spec (IPIP-484).
const (
	paramFilterAddrs     = "filter-addrs"
	paramFilterProtocols = "filter-protocols"
	filterUnknown        = "unknown"
)

// parseCID decodes the {cid} of GET /providers/{cid}: any CID version,
// codec and multibase go-cid reads; the lookup is by its multihash. The
// error names the problem, in the words of the find API's GET /cid/
// (internal/cidkey).
func parseCID(s string) (multihash.Multihash, error) {
	if len(s) > MaxPathLen {
		return nil, fmt.Errorf("CID longer than %d bytes", MaxPathLen)
	}
	return cidkey.Parse(s)
}

// parsePeer decodes the {peer-id} of GET /peers/{peer-id}: a base58btc
// multihash, or a CIDv1 with the libp2p-key codec in any multibase.
func parsePeer(s string) (peer.ID, error) {
	switch {
	case s == "":
		return "", errors.New("empty peer ID")
	case len(s) > MaxPathLen:
		return "", fmt.Errorf("peer ID longer than %d bytes", MaxPathLen)
	}
	// peer.Decode reads "Qm…" and "1…" as base58btc multihashes, anything
	// else as a CID.
	if !strings.HasPrefix(s, "Qm") && s[0] != '1' {
		if err := checkMultibase(s); err != nil {
			return "", err
		}
	}
	id, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("not a valid peer ID: %v", err)
	}
	return id, nil
}

// checkMultibase reports a multibase prefix go-multibase does not know, by
// name, rather than go-cid's "selected encoding not supported".
func checkMultibase(s string) error {
	if _, ok := multibase.EncodingToStr[multibase.Encoding(s[0])]; !ok {
		return fmt.Errorf("unsupported multibase prefix %q", s[:1])
	}
	return nil
}

// filters are the parsed filter-addrs and filter-protocols of a request.
// The zero value filters nothing.
type filters struct {
	addrs     bool // filter-addrs given
	addrIn    []int
	addrOut   []int
	addrUnk   bool
	protocols bool // filter-protocols given
	protoIn   []string
	protoUnk  bool
}

func (f *filters) any() bool { return f.addrs || f.protocols }

// parseFilters reads the query of r. Parameters other than the two
// filters are ignored, as the spec leaves room for more. Each filter may
// be given once; its value is a comma-separated list in which empty
// elements are skipped. filter-addrs elements are multiaddr protocol names
// (as in the multiaddr registry), "unknown", or "!name" to exclude; any
// other element is an error naming it. filter-protocols elements are
// transfer protocol names of at most 63 printable ASCII characters, or
// "unknown"; the spec defines no negation for them, so "!" is an error.
// Matching is case-insensitive: names are kept in lower case.
func parseFilters(rawQuery string) (filters, error) {
	var f filters
	if rawQuery == "" {
		return f, nil
	}
	if len(rawQuery) > MaxQueryLen {
		return f, fmt.Errorf("query longer than %d bytes", MaxQueryLen)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return f, fmt.Errorf("bad query: %v", err)
	}
	if vs, ok := q[paramFilterAddrs]; ok {
		if len(vs) > 1 {
			return f, fmt.Errorf("%s given %d times, want at most once", paramFilterAddrs, len(vs))
		}
		f.addrs = true
		for e := range strings.SplitSeq(vs[0], ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			name, neg := strings.CutPrefix(e, "!")
			switch {
			case e == "":
				continue
			case e == filterUnknown:
				f.addrUnk = true
				continue
			case name == filterUnknown:
				return f, fmt.Errorf("%s: %q: \"unknown\" cannot be negated", paramFilterAddrs, e)
			}
			p := multiaddr.ProtocolWithName(name)
			if p.Code == 0 {
				return f, fmt.Errorf("%s: %q is not a multiaddr protocol name", paramFilterAddrs, truncate(e, 70))
			}
			if neg {
				f.addrOut = append(f.addrOut, p.Code)
			} else {
				f.addrIn = append(f.addrIn, p.Code)
			}
		}
	}
	if vs, ok := q[paramFilterProtocols]; ok {
		if len(vs) > 1 {
			return f, fmt.Errorf("%s given %d times, want at most once", paramFilterProtocols, len(vs))
		}
		f.protocols = true
		for e := range strings.SplitSeq(vs[0], ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			switch {
			case e == "":
				continue
			case e == filterUnknown:
				f.protoUnk = true
				continue
			case e[0] == '!':
				return f, fmt.Errorf("%s: %q: negative filters are defined for %s only", paramFilterProtocols, truncate(e, 70), paramFilterAddrs)
			case len(e) > maxProtocolName:
				return f, fmt.Errorf("%s: %q is longer than %d characters", paramFilterProtocols, truncate(e, 70), maxProtocolName)
			}
			for i := 0; i < len(e); i++ {
				if e[i] <= ' ' || e[i] > '~' {
					return f, fmt.Errorf("%s: %q holds a character that is not printable ASCII", paramFilterProtocols, e)
				}
			}
			f.protoIn = append(f.protoIn, e)
		}
	}
	return f, nil
}

// keepProtocols reports whether a provider with protos passes
// filter-protocols: any of its names listed, or none known and "unknown"
// listed.
func (f *filters) keepProtocols(protos []proto) bool {
	if !f.protocols {
		return true
	}
	if len(protos) == 0 {
		return f.protoUnk
	}
	for _, p := range protos {
		for _, want := range f.protoIn {
			if strings.EqualFold(p.name, want) {
				return true
			}
		}
	}
	return false
}

// keepAddr reports whether a passes filter-addrs: none of its protocols
// excluded, and one of them included when a positive filter is given
// ("unknown" is one: it includes providers with no address, and no
// address).
func (f *filters) keepAddr(a multiaddr.Multiaddr) bool {
	in := len(f.addrIn) == 0 && !f.addrUnk
	for _, c := range a {
		code := c.Code()
		for _, out := range f.addrOut {
			if code == out {
				return false
			}
		}
		if !in {
			for _, want := range f.addrIn {
				if code == want {
					in = true
					break
				}
			}
		}
	}
	return in
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
