package leveldb

import (
	"context"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/kv"
	ds "github.com/ipfs/go-datastore"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Store is a [store.Store] kept in a LevelDB database opened through
// go-ds-leveldb.
type Store struct {
	*kv.DB
	ds *dsleveldb.Datastore
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Sweeper = (*Store)(nil)
)

// Options are goleveldb's options, passed through to go-ds-leveldb by
// [WithOptions].
type Options = dsleveldb.Options

// Option configures [Open].
type Option func(*config) error

// config is what the options of Open set.
type config struct {
	opts    *Options // nil: goleveldb's defaults
	records int64
	lookups int64
	noPops  bool
}

// WithOptions opens the database with goleveldb's options o instead of
// goleveldb's defaults.
func WithOptions(o *Options) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("leveldb: WithOptions: nil options")
		}
		c.opts = o
		return nil
	}
}

// WithoutPopulations keeps no context populations (store.Sampler): a Put
// writes one key per multihash instead of two, but Sample reports
// store.ErrNotSampled for every context. The database remembers it:
// opened again without it, it keeps the populations of the contexts
// created from then on, the others staying unsampled.
func WithoutPopulations() Option {
	return func(c *config) error {
		c.noPops = true
		return nil
	}
}

// DefaultRecordCache is the size in bytes of the record cache unless
// [WithRecordCache] sets another: some hundred thousand contexts.
const DefaultRecordCache = kv.DefaultRecordCache

// WithRecordCache sets the bytes of memory (32 MiB by default) spent on
// caching the store's (provider, context) records and the index from a
// context to its record. The records live on disk: a Get whose records
// are cached reads LevelDB only for the multihash, and one whose records
// are not reads each record too. Opening takes the same time however many
// contexts the store holds, and memory does not grow with them. n = 0
// caches nothing; n must not be negative.
func WithRecordCache(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("leveldb: WithRecordCache: %d bytes, want 0 or more", n)
		}
		c.records = n
		return nil
	}
}

// DefaultLookupCache is the size in bytes of the lookup cache unless
// [WithLookupCache] sets another: some hundred thousand multihashes.
const DefaultLookupCache = kv.DefaultLookupCache

// WithLookupCache sets the bytes of memory (8 MiB by default) spent on
// caching what Get read of the index for a multihash: the records it
// names, or that it has none (most lookups of a public indexer find
// nothing). A cached lookup does not read LevelDB. The cache is exact:
// every write of a multihash's index entries drops its entry before it
// lands, and a bulk load or range removal empties the cache, so that no
// lookup is answered from a state a finished write replaced. n = 0 caches
// nothing; n must not be negative.
func WithLookupCache(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("leveldb: WithLookupCache: %d bytes, want 0 or more", n)
		}
		c.lookups = n
		return nil
	}
}

// Open opens (creating if needed) the store in directory dir, with
// goleveldb's default options unless [WithOptions].
func Open(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, errors.New("leveldb: open: empty directory")
	}
	c := config{records: DefaultRecordCache, lookups: DefaultLookupCache}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	d, err := dsleveldb.NewDatastore(dir, c.opts)
	if err != nil {
		return nil, fmt.Errorf("leveldb: open %s: %w", dir, err)
	}
	records, lookups := c.records, c.lookups
	if records == 0 {
		records = -1 // kv's "cache nothing"
	}
	if lookups == 0 {
		lookups = -1
	}
	db, err := kv.Open(&engine{ds: d}, kv.Config{Name: "leveldb", Layout: kv.Entries, MaxBatch: maxBatch, RecordCache: records, LookupCache: lookups, NoPopulations: c.noPops})
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Store{DB: db, ds: d}, nil
}

// Datastore returns the underlying go-datastore, for callers that keep other
// small state beside the index. Its keys must not begin with "/" followed by
// a byte below 0x06, which the index uses.
func (s *Store) Datastore() ds.Batching { return s.ds }

// maxBatch is the most index writes per commit. Every go-ds-leveldb commit
// pays an fsync, so batches are larger than Pebble's; 32,768 entries of about
// 50 bytes stay well under goleveldb's 4 MiB write buffer, beyond which it
// takes a slower path.
const maxBatch = 32768

// engine adapts go-ds-leveldb to kv.Engine. Writes go through the
// go-datastore batch API (which syncs every commit); reads use the datastore
// and, for ordered range scans that go-datastore queries cannot express, the
// goleveldb handle it exposes.
//
// A kv key k is stored as "/" + k: go-datastore keys must start with "/"
// and must not end with "/", and every kv key ends in a byte below 0x10.
type engine struct {
	ds *dsleveldb.Datastore
}

func encodeKey(k []byte) ds.Key {
	b := make([]byte, 0, len(k)+1)
	b = append(b, '/')
	return ds.RawKey(string(append(b, k...)))
}

func (e *engine) NewBatch() kv.Batch {
	b, _ := e.ds.Batch(context.Background()) // never fails in go-ds-leveldb
	return &batch{b: b}
}

func (e *engine) Get(key []byte, fn func(value []byte) error) error {
	v, err := e.ds.Get(context.Background(), encodeKey(key))
	if errors.Is(err, ds.ErrNotFound) {
		return kv.ErrNotFound
	}
	if err != nil {
		return err
	}
	return fn(v)
}

func (e *engine) Scan(lower, upper []byte, fn func(key, value []byte) error) error {
	r := &util.Range{Start: append([]byte{'/'}, lower...)}
	if upper != nil {
		r.Limit = append([]byte{'/'}, upper...)
	} else {
		r.Limit = []byte{'/' + 1}
	}
	return e.scan(r, fn)
}

func (e *engine) ScanPrefix(prefix []byte, fn func(key, value []byte) error) error {
	return e.scan(util.BytesPrefix(append([]byte{'/'}, prefix...)), fn)
}

func (e *engine) scan(r *util.Range, fn func(key, value []byte) error) error {
	it := e.ds.DB.NewIterator(r, nil)
	defer it.Release()
	for it.Next() {
		if err := fn(it.Key()[1:], it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Sync does nothing: go-ds-leveldb syncs every batch as it commits.
func (e *engine) Sync() error { return nil }

func (e *engine) DiskUsage() (int64, error) {
	n, err := e.ds.DiskUsage(context.Background())
	return int64(n), err
}

func (e *engine) Close() error { return e.ds.Close() }

type batch struct {
	b ds.Batch
	n int
}

func (b *batch) Set(key, value []byte) error {
	b.n++
	if value == nil {
		value = []byte{}
	}
	return b.b.Put(context.Background(), encodeKey(key), value)
}

func (b *batch) Delete(key []byte) error {
	b.n++
	return b.b.Delete(context.Background(), encodeKey(key))
}

func (b *batch) Len() int      { return b.n }
func (b *batch) Commit() error { return b.b.Commit(context.Background()) }
func (b *batch) Close() error  { return nil }
