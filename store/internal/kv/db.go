package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/sample"
	"github.com/libp2p/go-libp2p/core/peer"
)

// DefaultMaxBatch is the most writes a DB puts in one engine batch unless
// [Config.MaxBatch] says otherwise. Larger Puts and removals are split, which
// keeps Pebble batches near 200 KiB: big enough to amortise a commit, small
// enough not to stall the engine.
const DefaultMaxBatch = 4096

// Config says how a DB uses its engine.
type Config struct {
	// Name prefixes error messages, for example "pebble".
	Name string
	// Layout is how index entries are kept in a new database.
	Layout Layout
	// Reopen are the other layouts Open accepts in an existing database,
	// which keeps the layout it was created with.
	Reopen []Layout
	// MaxBatch caps the writes per engine batch; 0 means DefaultMaxBatch.
	// An engine whose commits are costly (one fsync each) wants it higher.
	MaxBatch int
}

// scanChunk is how many entries All and Sweep read per engine scan before they
// release the engine, so that a slow consumer never pins it.
const scanChunk = 1024

var errStop = errors.New("kv: stop scan")

// record is one value record; it is replaced, never changed, so readers may
// keep its slices.
type record struct {
	id  uint64
	key string // ctxKey of v, the key of byCtx
	v   store.Value
	one []store.Value // v alone: what Get returns for a single value
}

// newRecord makes the record of v, which it keeps; key is v's ctxKey, or
// empty to compute it.
func newRecord(id uint64, key string, v store.Value) *record {
	if key == "" {
		key = string(ctxKey(nil, v.ProviderID, v.ContextID))
	}
	r := &record{id: id, key: key, v: v}
	r.one = []store.Value{r.v}
	return r
}

// DB implements store.Store over an Engine.
type DB struct {
	eng      Engine
	name     string
	layout   layout
	maxBatch int

	// opMu guards eng against Close: every call holds it shared.
	opMu   sync.RWMutex
	closed bool

	// indexMu orders index writes against pruning: every batch of index
	// writes holds it shared; Sweep holds it alone while it deletes emptied
	// keys, so that no merge it cannot see lands on a key it deletes.
	indexMu sync.RWMutex

	// recMu serialises writers of value records and of the maps below.
	recMu sync.Mutex
	// mu guards the maps for readers.
	mu     sync.RWMutex
	byID   map[uint64]*record
	byCtx  map[string]*record
	byProv map[peer.ID]map[uint64]*record
	nextID uint64
	// tau holds the sample threshold of every record that has a sample;
	// guarded like the maps above.
	tau    map[uint64]uint64
	hasher sample.Hasher
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Sweeper = (*DB)(nil)
	_ store.Sampler = (*DB)(nil)
)

// Open loads the value records of eng into memory and returns a DB that owns
// eng. On error eng is left open.
func Open(eng Engine, cfg Config) (*DB, error) {
	name, l := cfg.Name, cfg.Layout
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("%s: open: negative MaxBatch %d", name, cfg.MaxBatch)
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	db := &DB{
		eng:      eng,
		name:     name,
		maxBatch: cfg.MaxBatch,
		byID:     make(map[uint64]*record),
		byCtx:    make(map[string]*record),
		byProv:   make(map[peer.ID]map[uint64]*record),
		tau:      make(map[uint64]uint64),
	}
	if stored, ok := storedLayout(eng); ok && slices.Contains(cfg.Reopen, stored) {
		l = stored
	}
	switch l {
	case Entries:
		db.layout = entriesLayout{}
	case Merged, MergedDigestPrefix:
		b := eng.NewBatch()
		_, ok := b.(MergeBatch)
		b.Close()
		if !ok {
			return nil, fmt.Errorf("%s: open: engine batches cannot merge, which layout %v needs", name, l)
		}
		db.layout = mergedLayout{prefix: l == MergedDigestPrefix}
	default:
		return nil, fmt.Errorf("%s: open: unknown layout %v", name, l)
	}
	schema := append(binary.AppendUvarint(nil, schemaVersion), byte(l))
	var stored []byte
	err := eng.Get(keyVersion, func(v []byte) error { stored = bytes.Clone(v); return nil })
	switch {
	case errors.Is(err, ErrNotFound):
		b := eng.NewBatch()
		defer b.Close()
		if err := b.Set(keyVersion, schema); err != nil {
			return nil, db.wrap("open", err)
		}
		if err := b.Commit(); err != nil {
			return nil, db.wrap("open", err)
		}
	case err != nil:
		return nil, db.wrap("open: read schema version", err)
	case !bytes.Equal(stored, schema):
		return nil, fmt.Errorf("%s: open: database has schema %x, this code writes %x (version %d, layout %v)", name, stored, schema, schemaVersion, l)
	}
	err = eng.Get(keyNextID, func(v []byte) error {
		if len(v) != idLen {
			return fmt.Errorf("%w: next ID is %d bytes", errCorrupt, len(v))
		}
		db.nextID = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, db.wrap("open: read next ID", err)
	}
	if err := db.openSampler(); err != nil {
		return nil, err
	}
	err = eng.Scan([]byte{prefixRecord}, []byte{prefixRecord + 1}, func(key, val []byte) error {
		if len(key) != 1+idLen+1 {
			return fmt.Errorf("%w: record key of %d bytes", errCorrupt, len(key))
		}
		v, err := decodeRecord(val)
		if err != nil {
			return err
		}
		id := binary.BigEndian.Uint64(key[1:])
		if id >= db.nextID {
			return fmt.Errorf("%w: record %d at or above next ID %d", errCorrupt, id, db.nextID)
		}
		db.index(newRecord(id, "", v.Clone()))
		return nil
	})
	if err != nil {
		return nil, db.wrap("open: load value records", err)
	}
	return db, nil
}

func (db *DB) wrap(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", db.name, op, err)
}

// ctxKey is the map key of a (provider, context): a length-prefixed provider
// followed by the context ID.
func ctxKey(dst []byte, p peer.ID, contextID []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	dst = append(dst, p...)
	return append(dst, contextID...)
}

// index adds r to the maps; the caller holds mu for writing (or owns db).
func (db *DB) index(r *record) {
	db.byID[r.id] = r
	db.byCtx[r.key] = r
	m := db.byProv[r.v.ProviderID]
	if m == nil {
		m = make(map[uint64]*record)
		db.byProv[r.v.ProviderID] = m
	}
	m[r.id] = r
}

// unindex removes r from the maps; the caller holds mu for writing.
func (db *DB) unindex(r *record) {
	delete(db.byID, r.id)
	delete(db.byCtx, r.key)
	delete(db.tau, r.id)
	if m := db.byProv[r.v.ProviderID]; m != nil {
		delete(m, r.id)
		if len(m) == 0 {
			delete(db.byProv, r.v.ProviderID)
		}
	}
}

func (db *DB) lookup(p peer.ID, contextID []byte) *record {
	var buf [128]byte
	k := ctxKey(buf[:0], p, contextID)
	db.mu.RLock()
	r := db.byCtx[string(k)]
	db.mu.RUnlock()
	return r
}

// begin takes the shared close guard. It fails if the DB is closed or ctx is
// done; on success the caller must call db.opMu.RUnlock.
func (db *DB) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return db.wrap(op, err)
	}
	db.opMu.RLock()
	if db.closed {
		db.opMu.RUnlock()
		return db.wrap(op, store.ErrClosed)
	}
	return nil
}

// commit runs fill on a new batch of index writes and commits it, under the
// close guard. With exclusive, no other index write is in flight meanwhile.
func (db *DB) commit(ctx context.Context, op string, exclusive bool, fill func(Batch) error) error {
	if err := db.begin(ctx, op); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	if exclusive {
		db.indexMu.Lock()
		defer db.indexMu.Unlock()
	} else {
		db.indexMu.RLock()
		defer db.indexMu.RUnlock()
	}
	b := db.eng.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return db.wrap(op, err)
	}
	if err := b.Commit(); err != nil {
		return db.wrap(op, err)
	}
	return nil
}

// Size implements [store.Store].
func (db *DB) Size(ctx context.Context) (int64, error) {
	if err := db.begin(ctx, "size"); err != nil {
		return 0, err
	}
	defer db.opMu.RUnlock()
	n, err := db.eng.DiskUsage()
	if err != nil {
		return 0, db.wrap("size", err)
	}
	return n, nil
}

// Flush implements [store.Store].
func (db *DB) Flush(ctx context.Context) error {
	if err := db.begin(ctx, "flush"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	if err := db.eng.Sync(); err != nil {
		return db.wrap("flush", err)
	}
	return nil
}

// Close implements [store.Store]. It waits for calls in flight, syncs and
// closes the engine.
func (db *DB) Close() error {
	db.opMu.Lock()
	defer db.opMu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	err := db.eng.Sync()
	if cerr := db.eng.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return db.wrap("close", err)
	}
	return nil
}
