package routing

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// FuzzRequest feeds the path and query parsers arbitrary input: nothing
// panics, an accepted CID yields a well-formed multihash, an accepted peer
// ID round-trips, and a whole request with that path and query is
// answered with a status the package documents.
func FuzzRequest(f *testing.F) {
	mh, _ := multihash.Sum([]byte("seed"), multihash.SHA2_256, -1)
	id, _ := peer.IDFromBytes(append([]byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20}, make([]byte, 32)...))
	for _, s := range [][2]string{
		{cid.NewCidV1(cid.Raw, mh).String(), ""}, {cid.NewCidV0(mh).String(), "filter-addrs=tcp,!ip6,unknown"},
		{id.String(), "filter-protocols=transport-bitswap,unknown"}, {peer.ToCid(id).String(), "filter-addrs=%21quic-v1"},
		{"", ""}, {"#x", "filter-addrs=bogus"}, {"bafy", "filter-protocols=!x"}, {"Qm", "a=%zz"}, {"\x00\xff", "filter-addrs=!unknown"},
		{"k51qzi5uqu5dh", "filter-protocols=" + strings.Repeat("p", 64)},
	} {
		f.Add(s[0], s[1])
	}
	h, err := New(emptyBackend{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, query string) {
		if mh, err := parseCID(key); err == nil {
			if _, err := multihash.Decode(mh); err != nil {
				t.Fatalf("CID %q: accepted a malformed multihash %x: %v", key, mh, err)
			}
		} else if mh != nil {
			t.Fatalf("CID %q: result %x with error %v", key, mh, err)
		}
		if id, err := parsePeer(key); err == nil {
			if again, err := peer.Decode(id.String()); err != nil || again != id {
				t.Fatalf("peer %q: %s does not round-trip: %s, %v", key, id, again, err)
			}
		}
		fl, err := parseFilters(query)
		if err == nil {
			for _, p := range fl.protoIn {
				if p == "" || len(p) > maxProtocolName || p[0] == '!' {
					t.Fatalf("query %q: accepted protocol filter %q", query, p)
				}
			}
		}
		for _, route := range []string{"providers/", "peers/"} {
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.Path = Prefix + route + key
			req.URL.RawQuery = query
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case http.StatusOK, http.StatusBadRequest, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("%s%s?%s: status %d: %s", route, key, query, rec.Code, rec.Body)
			}
		}
	})
}
