package routing

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multicodec"

	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/scatter/find"
)

// proto is one transfer protocol of a provider as the peer schema writes
// it: its name in Protocols and, when it has one, its field.
type proto struct {
	code  uint64
	name  string
	qname []byte // name as a JSON string
	field []byte // `"name":value`, or nil for a protocol with no payload
}

// protocolName names a metadata protocol code as the peer schema's
// Protocols do: the multicodec registry's name, which for the IPNI
// transports is "transport-bitswap", "transport-graphsync-filecoinv1",
// "transport-ipfs-gateway-http" and "transport-filecoin-piece-http"; a
// code the registry does not know is named as go-multicodec and
// indexstar name it, "Code(<decimal>)".
func protocolName(code uint64) string {
	switch code {
	case metadata.CodeBitswap:
		return "transport-bitswap"
	case metadata.CodeGraphsyncFilecoinV1:
		return "transport-graphsync-filecoinv1"
	case metadata.CodeIPFSGatewayHTTP:
		return "transport-ipfs-gateway-http"
	case metadata.CodeFilecoinPieceHTTP:
		return "transport-filecoin-piece-http"
	}
	return multicodec.Code(code).String()
}

// protocols turns IPNI metadata into the peer schema's protocols, sorted
// by code. Metadata that does not decode (or is empty) gives none: the
// provider is still answered, with its protocols unknown, as the spec
// allows.
func protocols(md []byte) []proto {
	m, err := metadata.Decode(md)
	if err != nil || m.Len() == 0 {
		return nil
	}
	out := make([]proto, 0, m.Len())
	for _, p := range m.Protocols() {
		name := protocolName(p.ID())
		q := appendJSONString(nil, name)
		pr := proto{code: p.ID(), name: name, qname: q}
		switch p := p.(type) {
		case metadata.GraphsyncFilecoinV1:
			f := append(slices.Clip(q), `:{"PieceCID":`...)
			f = appendJSONString(f, p.PieceCID.String())
			f = append(f, `,"VerifiedDeal":`...)
			f = strconv.AppendBool(f, p.VerifiedDeal)
			f = append(f, `,"FastRetrieval":`...)
			f = strconv.AppendBool(f, p.FastRetrieval)
			pr.field = append(f, '}')
		case metadata.Unknown:
			if len(p.Payload) > 0 {
				f := append(slices.Clip(q), ':', '"')
				f = base64.StdEncoding.AppendEncode(f, p.Payload)
				pr.field = append(f, '"')
			}
		}
		out = append(out, pr)
	}
	return out
}

// cacheMax bounds the entries of the handler's metadata and peer caches;
// a full cache starts over.
const cacheMax = 8192

// metaCache maps metadata bytes to their protocols: the same few metadata
// values come back in most answers, and decoding them is the costly part.
type metaCache struct {
	mu sync.RWMutex
	m  map[string][]proto
}

func (c *metaCache) get(md []byte) []proto {
	c.mu.RLock()
	ps, ok := c.m[string(md)]
	c.mu.RUnlock()
	if ok {
		return ps
	}
	ps = protocols(md)
	if len(md) > metadata.MaxSize {
		return ps // not worth keeping
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMax {
		c.m = make(map[string][]proto)
	}
	c.m[string(md)] = ps
	c.mu.Unlock()
	return ps
}

// peerJSON is the JSON of a provider's ID and addresses, kept per
// provider and reused while its addresses stay the same.
type peerJSON struct {
	addrs     []multiaddr.Multiaddr // what addrsJSON was made from (read-only)
	id        []byte                // the ID as a JSON string
	addrsJSON []byte                // the addresses as a JSON array
}

type peerCache struct {
	mu sync.RWMutex
	m  map[peer.ID]*peerJSON
}

func (c *peerCache) get(ai *peer.AddrInfo) *peerJSON {
	c.mu.RLock()
	e := c.m[ai.ID]
	c.mu.RUnlock()
	if e != nil && sameAddrs(e.addrs, ai.Addrs) {
		return e
	}
	e = &peerJSON{addrs: ai.Addrs, id: appendJSONString(nil, ai.ID.String()), addrsJSON: appendAddrs(nil, ai.Addrs)}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMax {
		c.m = make(map[peer.ID]*peerJSON)
	}
	c.m[ai.ID] = e
	c.mu.Unlock()
	return e
}

func sameAddrs(a, b []multiaddr.Multiaddr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameAddr(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameAddr(x, y multiaddr.Multiaddr) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.Equal(y)
}

// peerRec is one provider of an answer: the union of the addresses and
// protocols of every result of that provider seen so far.
type peerRec struct {
	id        peer.ID
	pj        *peerJSON
	addrs     []multiaddr.Multiaddr // pj.addrs until another result adds one
	addrsOwn  bool
	protos    []proto // shared with the metaCache until another result adds one
	protosOwn bool
	last      []byte // NDJSON: the line last sent for this provider
}

// recSet is the providers of one answer, in the order first seen.
type recSet struct {
	recs []peerRec
	idx  map[peer.ID]int // built once recs outgrows a linear scan
	buf  []byte
}

// linearMax is how many providers a recSet finds by scanning.
const linearMax = 16

func (s *recSet) find(id peer.ID) int {
	if s.idx != nil {
		if i, ok := s.idx[id]; ok {
			return i
		}
		return -1
	}
	for i := range s.recs {
		if s.recs[i].id == id {
			return i
		}
	}
	return -1
}

// add merges pr into the set: a new provider, or the union with the one
// already there. It returns the provider's index and whether its record
// is new or changed.
func (s *recSet) add(pr *find.ProviderResult, h *Handler) (int, bool) {
	ai := pr.Provider
	ps := h.meta.get(pr.Metadata)
	i := s.find(ai.ID)
	if i < 0 {
		pj := h.peers.get(ai)
		s.recs = append(s.recs, peerRec{id: ai.ID, pj: pj, addrs: pj.addrs, protos: ps})
		i = len(s.recs) - 1
		if s.idx != nil {
			s.idx[ai.ID] = i
		} else if len(s.recs) > linearMax {
			s.idx = make(map[peer.ID]int, 2*linearMax)
			for j := range s.recs {
				s.idx[s.recs[j].id] = j
			}
		}
		return i, true
	}
	r := &s.recs[i]
	changed := false
	if !sameAddrs(r.addrs, ai.Addrs) {
		for _, a := range ai.Addrs {
			if a == nil || slices.ContainsFunc(r.addrs, func(b multiaddr.Multiaddr) bool { return sameAddr(a, b) }) {
				continue
			}
			if !r.addrsOwn {
				r.addrs, r.addrsOwn = slices.Clone(r.addrs), true
			}
			r.addrs = append(r.addrs, a)
			changed = true
		}
	}
	if len(ps) > 0 && (len(r.protos) == 0 || &ps[0] != &r.protos[0] || len(ps) != len(r.protos)) {
		for _, p := range ps {
			j, found := slices.BinarySearchFunc(r.protos, p.code, func(q proto, c uint64) int {
				switch {
				case q.code < c:
					return -1
				case q.code > c:
					return 1
				}
				return 0
			})
			if found {
				continue // the first seen keeps its field (a graphsync PieceCID, say)
			}
			if !r.protosOwn {
				r.protos, r.protosOwn = slices.Clone(r.protos), true
			}
			r.protos = slices.Insert(r.protos, j, p)
			changed = true
		}
	}
	return i, changed
}

// reset empties s for reuse, dropping its references.
func (s *recSet) reset() {
	clear(s.recs)
	s.recs = s.recs[:0]
	s.idx = nil
	if cap(s.buf) > maxPooledBuf {
		s.buf = nil
	}
}

const maxPooledBuf = 1 << 16

var recSetPool = sync.Pool{New: func() any { return &recSet{buf: make([]byte, 0, 4096)} }}

// appendRec appends r's peer schema JSON after the filters f, or reports
// false (and appends nothing) when f leaves the provider out.
func appendRec(dst []byte, r *peerRec, f *filters) ([]byte, bool) {
	if !f.keepProtocols(r.protos) {
		return dst, false
	}
	mark := len(dst)
	dst = append(dst, `{"Schema":"peer","ID":`...)
	dst = append(dst, r.pj.id...)
	switch {
	case f.addrs:
		if len(r.addrs) == 0 {
			if !f.addrUnk {
				return dst[:mark], false
			}
			break
		}
		n := 0
		for _, a := range r.addrs {
			if a == nil || !f.keepAddr(a) {
				continue
			}
			if n == 0 {
				dst = append(dst, `,"Addrs":[`...)
			} else {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, a.String())
			n++
		}
		if n == 0 {
			return dst[:mark], false
		}
		dst = append(dst, ']')
	case len(r.addrs) == 0:
	case !r.addrsOwn:
		dst = append(dst, `,"Addrs":`...)
		dst = append(dst, r.pj.addrsJSON...)
	default:
		dst = append(dst, `,"Addrs":`...)
		dst = appendAddrs(dst, r.addrs)
	}
	if len(r.protos) > 0 {
		dst = append(dst, `,"Protocols":[`...)
		for i := range r.protos {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, r.protos[i].qname...)
		}
		dst = append(dst, ']')
		for i := range r.protos {
			if r.protos[i].field != nil {
				dst = append(dst, ',')
				dst = append(dst, r.protos[i].field...)
			}
		}
	}
	return append(dst, '}'), true
}

// appendAddrs appends addrs as a JSON array of strings (nil ones left out).
func appendAddrs(dst []byte, addrs []multiaddr.Multiaddr) []byte {
	dst = append(dst, '[')
	n := 0
	for _, a := range addrs {
		if a == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, a.String())
		n++
	}
	return append(dst, ']')
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
