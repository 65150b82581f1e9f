package memory

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// recordOverhead is charged per value record by Size besides its bytes: the
// record, its entries in three maps and its context key.
const recordOverhead = 160

// record is one value record. It is replaced, never changed, so readers may
// keep its slices.
type record struct {
	id  uint64
	key string // ctxKey of v
	v   store.Value
}

// records holds the value records. Its fields are guarded by mu, except that
// the Store's opMu guards drop.
type records struct {
	mu     sync.RWMutex
	byID   map[uint64]*record
	byCtx  map[string]*record
	byProv map[peer.ID]map[uint64]*record
	nextID uint64
	// bytes is the Size estimate of the records; removed counts the records
	// ever deleted.
	bytes   int64
	removed uint64

	// pmu guards pops, the population of every record; it is taken after
	// mu when both are held.
	pmu  sync.RWMutex
	pops map[uint64]*population
	// popStrings counts the strings the populations hold, for Size.
	popStrings atomic.Int64
}

func (rs *records) init() {
	rs.byID = make(map[uint64]*record)
	rs.byCtx = make(map[string]*record)
	rs.byProv = make(map[peer.ID]map[uint64]*record)
	rs.pops = make(map[uint64]*population)
}

// drop releases the maps; the caller holds the Store's opMu for writing.
func (rs *records) drop() {
	rs.byID, rs.byCtx, rs.byProv = nil, nil, nil
	rs.pmu.Lock()
	rs.pops = nil
	rs.pmu.Unlock()
}

// ctxKey is the map key of a (provider, context): a length-prefixed provider
// followed by the context ID.
func ctxKey(dst []byte, p peer.ID, contextID []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	dst = append(dst, p...)
	return append(dst, contextID...)
}

func recordSize(v store.Value) int64 {
	return recordOverhead + 2*int64(len(v.ProviderID)) + 2*int64(len(v.ContextID)) + int64(len(v.Metadata))
}

func (rs *records) lookup(p peer.ID, contextID []byte) *record {
	var buf [128]byte
	k := ctxKey(buf[:0], p, contextID)
	rs.mu.RLock()
	r := rs.byCtx[string(k)]
	rs.mu.RUnlock()
	return r
}

// ensure returns the ID of the record of v's (provider, context), creating
// it or replacing its metadata as needed. With create false a missing record
// is not created, and ok is false.
func (rs *records) ensure(v store.Value, create bool) (id uint64, ok bool) {
	var buf [128]byte
	k := ctxKey(buf[:0], v.ProviderID, v.ContextID)
	rs.mu.RLock()
	old := rs.byCtx[string(k)]
	rs.mu.RUnlock()
	if old != nil && bytes.Equal(old.v.Metadata, v.Metadata) {
		return old.id, true
	}

	rs.mu.Lock()
	defer rs.mu.Unlock()
	old = rs.byCtx[string(k)]
	switch {
	case old != nil && bytes.Equal(old.v.Metadata, v.Metadata):
		return old.id, true
	case old == nil && !create:
		return 0, false
	}
	nv := store.Value{ProviderID: v.ProviderID, ContextID: bytes.Clone(v.ContextID)}
	if len(v.Metadata) > 0 {
		nv.Metadata = bytes.Clone(v.Metadata)
	}
	if old != nil {
		// Same ID, same keys: swap the pointers.
		r := &record{id: old.id, key: old.key, v: nv}
		rs.byID[r.id] = r
		rs.byCtx[r.key] = r
		rs.byProv[nv.ProviderID][r.id] = r
		rs.bytes += recordSize(nv) - recordSize(old.v)
		return r.id, true
	}
	r := &record{id: rs.nextID, key: string(k), v: nv}
	rs.nextID++
	rs.byID[r.id] = r
	rs.byCtx[r.key] = r
	m := rs.byProv[nv.ProviderID]
	if m == nil {
		m = make(map[uint64]*record)
		rs.byProv[nv.ProviderID] = m
	}
	m[r.id] = r
	rs.bytes += recordSize(nv)
	rs.pmu.Lock()
	rs.pops[r.id] = new(population)
	rs.pmu.Unlock()
	return r.id, true
}

// unindex deletes r; the caller holds mu for writing.
func (rs *records) unindex(r *record) {
	delete(rs.byID, r.id)
	delete(rs.byCtx, r.key)
	if m := rs.byProv[r.v.ProviderID]; m != nil {
		delete(m, r.id)
		if len(m) == 0 {
			delete(rs.byProv, r.v.ProviderID)
		}
	}
	rs.bytes -= recordSize(r.v)
	rs.removed++
	rs.pmu.Lock()
	if p := rs.pops[r.id]; p != nil {
		rs.popStrings.Add(int64(p.drop()))
		delete(rs.pops, r.id)
	}
	rs.pmu.Unlock()
}

// population returns the population of record id, nil if there is no
// such record.
func (rs *records) population(id uint64) *population {
	rs.pmu.RLock()
	defer rs.pmu.RUnlock()
	return rs.pops[id]
}

// popSize is the Size estimate of the populations.
func (rs *records) popSize() int64 {
	return rs.popStrings.Load() * popEntryBytes
}

func (rs *records) removeContext(p peer.ID, contextID []byte) {
	var buf [128]byte
	k := ctxKey(buf[:0], p, contextID)
	rs.mu.Lock()
	if r := rs.byCtx[string(k)]; r != nil {
		rs.unindex(r)
	}
	rs.mu.Unlock()
}

func (rs *records) removeProvider(p peer.ID) {
	rs.mu.Lock()
	for _, r := range rs.byProv[p] {
		rs.unindex(r) // deleting the entries of the map being ranged is allowed
	}
	rs.mu.Unlock()
}

// deleted returns how many records were ever deleted.
func (rs *records) deleted() uint64 {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return rs.removed
}

func (rs *records) size() int64 {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return rs.bytes + int64(len(rs.byProv))*recordOverhead
}
