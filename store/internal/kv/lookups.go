package kv

// The lookup cache: the record IDs of an index key, as Get last read them.

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// DefaultLookupCache is the bytes of memory a DB spends on caching the
// record IDs of index keys unless [Config.LookupCache] says otherwise:
// some hundred thousand keys.
const DefaultLookupCache = 8 << 20

// idList is what the lookup cache holds for an index key: its live record
// IDs, one of them inline. It is never changed once cached.
type idList struct {
	one  uint64
	n    int      // 0, 1 (one) or len(many)
	many []uint64 // when n > 1
}

// cost is what the lookup cache charges for an entry of key holding l:
// the key, the IDs, the entry, its map slot and its place in the clock.
func (l idList) cost(key string) int64 {
	return 160 + int64(len(key)) + 8*int64(len(l.many))
}

// newIDList copies ids into an idList.
func newIDList(ids []uint64) idList {
	switch len(ids) {
	case 0:
		return idList{}
	case 1:
		return idList{one: ids[0], n: 1}
	}
	return idList{n: len(ids), many: append([]uint64(nil), ids...)}
}

// appendTo appends l's IDs to ids.
func (l idList) appendTo(ids []uint64) []uint64 {
	switch l.n {
	case 0:
		return ids
	case 1:
		return append(ids, l.one)
	}
	return append(ids, l.many...)
}

// lookupIDs appends the live record IDs of mh to sc.ids: from the lookup
// cache when it holds them, else from the engine, offering what it read to
// the cache. An absent key is cached as well, as an empty list: most
// lookups of a public indexer find nothing.
//
// The cache is exact. Every write of index entries goes through
// commitIndex, which drops the entries of its keys before it commits and
// keeps their shards from taking fills until it is done (see [cache]); the
// writes that change keys wholesale (RemoveRanges, a bulk load's Ingest)
// do the same for every shard. Sweep changes no answer (it drops the IDs
// of removed records, which Get skips, and record IDs are never reused),
// so it leaves the cache alone.
//
// It returns the cache's entry of the IDs, nil when it has none (no cache,
// or a write in flight refused the fill): while the entry is not dead, no
// write has changed the IDs.
func (db *DB) lookupIDs(mh multihash.Multihash, sc *lookupScratch) (*centry[string, idList], error) {
	if db.looks == nil {
		return nil, db.layout.lookup(db.eng, mh, sc)
	}
	sc.key = db.layout.lookupKey(sc.key[:0], mh)
	e, epoch := getEntryBytes(db.looks, sc.key, hashBytes)
	if e != nil {
		sc.ids = e.val.appendTo(sc.ids)
		return e, nil
	}
	if err := db.layout.lookup(db.eng, mh, sc); err != nil {
		return nil, err
	}
	key := string(db.layout.lookupKey(sc.key[:0], mh))
	l := newIDList(sc.ids)
	return db.looks.fill(key, l, l.cost(key), epoch), nil
}

// beginIndexWrite starts a write of the index keys of mhs in the lookup
// cache: their entries are dropped, and the shards they fall in take no
// fill until endIndexWrite. It returns the shards, for endIndexWrite.
func (db *DB) beginIndexWrite(mhs []multihash.Multihash) (shards uint64) {
	c := db.looks
	if c == nil {
		return 0
	}
	var buf [80]byte
	for _, mh := range mhs {
		key := db.layout.lookupKey(buf[:0], mh)
		i := 0
		if len(c.shards) > 1 {
			i = int(hashBytes(key) >> c.shift)
		}
		s := &c.shards[i]
		s.mu.Lock()
		if shards&(1<<i) == 0 {
			shards |= 1 << i
			s.epoch++
			s.writing++
		}
		if e := s.m[string(key)]; e != nil {
			s.drop(e)
		}
		s.mu.Unlock()
	}
	return shards
}

// endIndexWrite ends the write beginIndexWrite began in shards.
func (db *DB) endIndexWrite(shards uint64) {
	c := db.looks
	if c == nil {
		return
	}
	for i := range c.shards {
		if shards&(1<<i) != 0 {
			s := &c.shards[i]
			s.mu.Lock()
			s.end()
			s.mu.Unlock()
		}
	}
}

// beginIndexRewrite starts a write that may change any index key: the
// lookup cache is emptied and takes no fill until endIndexRewrite.
func (db *DB) beginIndexRewrite() {
	c := db.looks
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.epoch++
		s.writing++
		for _, e := range s.ring {
			e.dead.Store(true)
		}
		clear(s.m)
		clear(s.ring)
		s.ring, s.hand, s.size = s.ring[:0], 0, 0
		s.mu.Unlock()
	}
}

// endIndexRewrite ends the write beginIndexRewrite began.
func (db *DB) endIndexRewrite() {
	if db.looks != nil {
		db.endIndexWrite(^uint64(0) >> (64 - len(db.looks.shards)))
	}
}

// Versions (store.Versioned). A version of a Get is the lookup cache's
// entry of the multihash, which dies with any write of its index entries,
// and the generations of its records' stripes, which every replacement or
// removal of a record bumps once it has landed. A version of a provider
// record is the generation of the provider's stripe, which PutProvider
// bumps when the addresses or extended providers change and
// DeleteProvider always.

const (
	recStripes  = 1024 // record IDs are sequential: id % recStripes spreads them
	provStripes = 256
	// verIDs is how many record IDs a version follows one by one; an
	// answer of more follows recAll, which every record change bumps.
	verIDs = 4
	// provSeenMax bounds the digests kept of provider records; past it
	// they are forgotten, and the next put of each counts as a change.
	provSeenMax = 1 << 16
)

// versions is what a DB keeps for its versions.
type versions struct {
	recGen  [recStripes]atomic.Uint64
	recAll  atomic.Uint64
	provGen [provStripes]atomic.Uint64

	provMu   sync.Mutex // serialises provider writes with provSeen
	provSeen map[peer.ID]uint64
}

// recordChanged ends the versions that read record id; the caller calls
// it once the change has landed and the record cache holds it.
func (vs *versions) recordChanged(id uint64) {
	vs.recGen[id%recStripes].Add(1)
	vs.recAll.Add(1)
}

func provStripe(id peer.ID) int {
	return int(maphash.String(hashSeed, string(id)) % provStripes)
}

// providerDigest is a hash of the parts of info a find answer shows.
func providerDigest(info store.ProviderInfo) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	for _, a := range info.AddrInfo.Addrs {
		h.Write(a.Bytes())
		h.WriteByte(0)
	}
	h.WriteByte(1)
	if x := info.ExtendedProviders; x != nil {
		enc, _ := encodeProvider(store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: info.AddrInfo.ID}, ExtendedProviders: x})
		h.Write(enc)
	}
	return h.Sum64()
}

// providerWritten ends the versions of id's record if what a find answer
// shows of it changed: digest, or deleted with ok false. The caller holds
// provMu and calls it once the write has landed.
func (vs *versions) providerWritten(id peer.ID, digest uint64, ok bool) {
	old, had := vs.provSeen[id]
	if ok && had && old == digest {
		return
	}
	vs.provGen[provStripe(id)].Add(1)
	if !ok {
		delete(vs.provSeen, id)
		return
	}
	if vs.provSeen == nil || len(vs.provSeen) >= provSeenMax {
		vs.provSeen = make(map[peer.ID]uint64)
	}
	vs.provSeen[id] = digest
}

// getVersion is the version of an answer of GetVersion.
type getVersion struct {
	vs    *versions
	entry *centry[string, idList] // nil: not cached, never current
	n     int
	ids   [verIDs]uint64
	gens  [verIDs]uint64
	all   uint64
}

// capture records the versions of ids, before their records are read.
func (v *getVersion) capture(ids []uint64) {
	v.n = len(ids)
	if v.n > verIDs {
		v.all = v.vs.recAll.Load()
		return
	}
	for i, id := range ids {
		v.ids[i], v.gens[i] = id, v.vs.recGen[id%recStripes].Load()
	}
}

// Current implements store.Version.
func (v *getVersion) Current() bool {
	if v.entry == nil || v.entry.dead.Load() {
		return false
	}
	if v.n > verIDs {
		return v.vs.recAll.Load() == v.all
	}
	for i := range v.n {
		if v.vs.recGen[v.ids[i]%recStripes].Load() != v.gens[i] {
			return false
		}
	}
	return true
}

// neverCurrent is the version of an answer read by a database without a
// lookup cache, which keeps nothing that could tell when it changes.
type neverCurrent struct{}

// Current implements store.Version.
func (neverCurrent) Current() bool { return false }

// provVersion is the version of a provider record.
type provVersion struct {
	gen *atomic.Uint64
	was uint64
}

// Current implements store.Version.
func (v provVersion) Current() bool { return v.gen.Load() == v.was }

// GetVersion implements [store.Versioned].
func (db *DB) GetVersion(ctx context.Context, mh multihash.Multihash) ([]store.Value, store.Version, error) {
	if db.looks == nil {
		// Without a lookup cache no version is ever current: say so
		// without allocating one.
		vals, err := db.getWith(ctx, mh, nil)
		if err != nil {
			return nil, nil, err
		}
		return vals, neverCurrent{}, nil
	}
	v := &getVersion{vs: &db.vers}
	vals, err := db.getWith(ctx, mh, v)
	if err != nil {
		return nil, nil, err
	}
	return vals, v, nil
}

// ProviderVersion implements [store.Versioned].
func (db *DB) ProviderVersion(ctx context.Context, id peer.ID) (store.ProviderInfo, store.Version, error) {
	gen := &db.vers.provGen[provStripe(id)]
	v := provVersion{gen: gen, was: gen.Load()}
	info, err := db.Provider(ctx, id)
	return info, v, err
}
