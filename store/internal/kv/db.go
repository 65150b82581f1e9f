package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/indexkit/indexkit/store"
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
	// RecordCache is the bytes of memory spent on caching value records
	// and context-index entries; 0 means DefaultRecordCache, and a
	// negative value caches nothing, so that every lookup reads the
	// engine.
	RecordCache int64
	// LookupCache is the bytes of memory spent on caching the record IDs
	// of index keys as lookups read them (see [DB.Get]); 0 means
	// DefaultLookupCache, and a negative value caches nothing.
	LookupCache int64
	// NoPopulations keeps no population entries: Put writes none and
	// Sample reports store.ErrNotSampled for every context. The database
	// remembers it: opened again without it, it keeps the populations of
	// the contexts created from then on, and the others stay unsampled.
	NoPopulations bool
}

// scanChunk is how many entries All and Sweep read per engine scan before they
// release the engine, so that a slow consumer never pins it.
const scanChunk = 1024

var errStop = errors.New("kv: stop scan")

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

	// recMu serialises the writers of value records and of the context
	// index, and nextID.
	recMu  sync.Mutex
	nextID uint64
	// recs caches value records by ID (nil: the record is gone); ctxs
	// caches the context index.
	recs  *cache[uint64, *record]
	ctxs  *cache[string, ctxInfo]
	peers interner
	// removals counts the batches that removed records, for Get.
	removals atomic.Uint64
	// vers is what versions of answers and provider records follow.
	vers versions
	// looks caches the live record IDs of index keys (nil: no cache).
	looks *cache[string, idList]

	// popFrom is the first record ID that has a population; popMu orders
	// Sample against the writers of populations; pops caches what Sample
	// learned of each.
	popFrom uint64
	popMu   [popStripes]popStripe
	pops    *cache[uint64, *popIndex]
	noPops  bool // Config.NoPopulations
	// orderFree is set when the engine takes index writes in any order
	// ([OrderFreeIndex]).
	orderFree bool
	scans     atomic.Int64 // population scans, for tests

	// countOver is the Size at which CountEntries last found more than
	// CountLimit multihashes (0: it has not, or counted since).
	countOver  atomic.Int64
	countLimit int64 // CountLimit, but for tests
}

var (
	_ store.Store     = (*DB)(nil)
	_ store.Sweeper   = (*DB)(nil)
	_ store.Sampler   = (*DB)(nil)
	_ store.Versioned = (*DB)(nil)
)

// Open returns a DB that owns eng. It reads nothing of the value records,
// so it takes the same time however many there are, except once for a
// database written before the context index (schema version 1), whose
// index it builds. On error eng is left open.
func Open(eng Engine, cfg Config) (*DB, error) {
	name, l := cfg.Name, cfg.Layout
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("%s: open: negative MaxBatch %d", name, cfg.MaxBatch)
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	switch {
	case cfg.RecordCache == 0:
		cfg.RecordCache = DefaultRecordCache
	case cfg.RecordCache < 0:
		cfg.RecordCache = 0
	}
	db := &DB{
		eng:        eng,
		name:       name,
		maxBatch:   cfg.MaxBatch,
		countLimit: CountLimit,
		noPops:     cfg.NoPopulations,
	}
	if o, ok := eng.(OrderFreeIndex); ok {
		db.orderFree = o.IndexOrderFree()
	}
	db.newCaches(cfg.RecordCache)
	switch {
	case cfg.LookupCache == 0:
		db.looks = newCache[string, idList](DefaultLookupCache, hashString)
	case cfg.LookupCache > 0:
		db.looks = newCache[string, idList](cfg.LookupCache, hashString)
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
	err := eng.Get(keyNextID, func(v []byte) error {
		if len(v) != idLen {
			return fmt.Errorf("%w: next ID is %d bytes", errCorrupt, len(v))
		}
		db.nextID = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, db.wrap("open: read next ID", err)
	}
	if err := db.openSchema(l); err != nil {
		return nil, err
	}
	if err := db.openPopulations(); err != nil {
		return nil, err
	}
	return db, nil
}

// schemaOf is the stored schema of a database of version and layout l.
func schemaOf(version uint64, l Layout) []byte {
	return append(binary.AppendUvarint(nil, version), byte(l))
}

// openSchema checks the schema recorded in the database, records it in a
// new one, and brings one of a previous version up to date: version 1 had
// no context index, versions 1 and 2 kept a bounded sample of each context
// instead of its population.
func (db *DB) openSchema(l Layout) error {
	schema := schemaOf(schemaVersion, l)
	var stored []byte
	err := db.eng.Get(keyVersion, func(v []byte) error { stored = bytes.Clone(v); return nil })
	var popFrom uint64
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return db.wrap("open: read schema version", err)
	case bytes.Equal(stored, schema):
		return nil
	case bytes.Equal(stored, schemaOf(1, l)), bytes.Equal(stored, schemaOf(2, l)):
		if stored[0] == 1 {
			if err := db.buildContextIndex(); err != nil {
				return db.wrap("open: build the context index", err)
			}
		}
		if popFrom, err = db.buildPopulations(); err != nil {
			return db.wrap("open: build the context populations", err)
		}
	default:
		return fmt.Errorf("%s: open: database has schema %x, this code writes %x (version %d, layout %v)", db.name, stored, schema, schemaVersion, l)
	}
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(keyPopFrom, binary.BigEndian.AppendUint64(nil, popFrom)); err != nil {
		return db.wrap("open", err)
	}
	if err := b.Set(keyVersion, schema); err != nil {
		return db.wrap("open", err)
	}
	if err := b.Commit(); err != nil {
		return db.wrap("open", err)
	}
	if err := db.eng.Sync(); err != nil {
		return db.wrap("open", err)
	}
	return nil
}

func (db *DB) wrap(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", db.name, op, err)
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
