package find

import (
	"encoding/base64"
	"encoding/json"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The find handler writes ProviderResult and FindResponse JSON by hand: the
// bytes are exactly those encoding/json produces for the model types (the
// tests check this on many random values), without reflection on the hot
// path. The provider's AddrInfo is the costly part (a base58 peer ID and one
// string per multiaddr), so its JSON is kept per provider in an
// addrJSONCache and reused while the addresses stay the same.

// addrJSONCacheMax bounds the providers an addrJSONCache remembers; when it
// is full it starts over.
const addrJSONCacheMax = 8192

// addrJSONCache maps a peer ID to the JSON of its last seen AddrInfo.
type addrJSONCache struct {
	mu sync.RWMutex
	m  map[peer.ID]*addrJSON
}

type addrJSON struct {
	info peer.AddrInfo // the addresses it was made from (shared, read-only)
	js   []byte
}

// get returns json.Marshal(ai), from the cache when the provider's addresses
// are the ones seen last time.
func (c *addrJSONCache) get(ai *peer.AddrInfo) []byte {
	c.mu.RLock()
	e := c.m[ai.ID]
	c.mu.RUnlock()
	if e != nil && addrJSONSame(&e.info, ai) {
		return e.js
	}
	js, err := json.Marshal(ai)
	if err != nil {
		// AddrInfo.MarshalJSON does not fail for addresses that parsed;
		// write what encoding/json writes for a nil pointer rather than
		// a broken document.
		return []byte("null")
	}
	e = &addrJSON{info: peer.AddrInfo{ID: ai.ID, Addrs: ai.Addrs}, js: js}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= addrJSONCacheMax {
		c.m = make(map[peer.ID]*addrJSON)
	}
	c.m[ai.ID] = e
	c.mu.Unlock()
	return js
}

func addrJSONSame(a, b *peer.AddrInfo) bool {
	if len(a.Addrs) != len(b.Addrs) {
		return false
	}
	for i := range a.Addrs {
		x, y := a.Addrs[i], b.Addrs[i]
		if x == nil || y == nil {
			if x != nil || y != nil {
				return false
			}
			continue
		}
		if !x.Equal(y) {
			return false
		}
	}
	return true
}

// findAppendB64 appends b as a JSON string of its padded standard
// base64, as encoding/json writes a []byte.
func findAppendB64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendResultSep appends a comma when sep is true, then the JSON of pr.
func (c *addrJSONCache) appendResultSep(dst []byte, sep bool, pr *ProviderResult) []byte {
	if sep {
		dst = append(dst, ',')
	}
	return c.appendResult(dst, pr)
}

// appendResult appends the JSON of pr, byte for byte what json.Marshal(pr)
// writes.
func (c *addrJSONCache) appendResult(dst []byte, pr *ProviderResult) []byte {
	dst = append(dst, '{')
	sep := false
	if len(pr.ContextID) != 0 {
		dst = append(dst, `"ContextID":`...)
		dst = findAppendB64(dst, pr.ContextID)
		sep = true
	}
	if len(pr.Metadata) != 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"Metadata":`...)
		dst = findAppendB64(dst, pr.Metadata)
		sep = true
	}
	if pr.Provider != nil {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"Provider":`...)
		dst = append(dst, c.get(pr.Provider)...)
	}
	return append(dst, '}')
}

// findResponsePrefix opens a FindResponse with one MultihashResult, up to
// the first byte of its Multihash string; findResponseMiddle follows the
// multihash and opens ProviderResults; findResponseSuffix closes it all.
const (
	findResponsePrefix = `{"MultihashResults":[`
	mhResultPrefix     = `{"Multihash":`
	mhResultMiddle     = `,"ProviderResults":[`
	mhResultSuffix     = `]}`
	findResponseSuffix = `]}`
)

// findBufPool recycles response buffers of the find handler.
var findBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// findMaxPooledBuf is the largest buffer put back in findBufPool; bigger ones
// (a batch answer) are left to the garbage collector.
const findMaxPooledBuf = 1 << 16
