package pebble

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store/internal/kv"
)

// Option configures Open.
type Option func(*config) error

type config struct {
	opts      *pebble.Options
	cacheSize int64
	memTable  uint64
	budget    int64
	noWAL     bool
	prefix    bool
	logger    *slog.Logger
	records   int64
	lookups   int64
	runs      int64
	noPops    bool
	compLimit func() int
	compHook  func()
}

const defaultCacheSize = 256 << 20

func newConfig(opts []Option) (*config, error) {
	c := &config{cacheSize: defaultCacheSize, logger: slog.New(slog.DiscardHandler), records: DefaultRecordCache, lookups: DefaultLookupCache}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// pebbleOptions returns the options to open with and a func to call once
// pebble.Open has returned (Open takes its own reference to the cache).
func (c *config) pebbleOptions() (*pebble.Options, func()) {
	o := c.opts
	if o == nil {
		o = DefaultOptions()
	}
	if c.memTable > 0 {
		o.MemTableSize = c.memTable
	}
	if c.budget > 0 {
		SizeToBudget(o, c.budget)
	}
	if c.noWAL {
		o.DisableWAL = true
	}
	if c.compLimit != nil {
		o.CompactionConcurrencyRange = limitCompactions(o.CompactionConcurrencyRange, c.compLimit)
	}
	if c.compHook != nil && o.Experimental.CompactionScheduler == nil {
		o.Experimental.CompactionScheduler = newThreadScheduler(c.compHook)
	}
	o.FS = growLogs(o.FS)
	if o.Merger == nil {
		o.Merger = Merger
	}
	if o.Logger == nil {
		o.Logger = slogLogger{c.logger}
	}
	if o.Cache == nil && c.cacheSize > 0 {
		// Pebble counts each memtable it holds, the one being written and
		// the spare it keeps for the next, against the block cache
		// (Cache.Reserve): a cache no larger than two memtables held no
		// block at all, and every lookup read its filter, index and data
		// blocks from the files. The memtables' share goes on top, so that
		// the cache holds cacheSize bytes of blocks.
		cache := pebble.NewCache(c.cacheSize + 2*int64(o.MemTableSize))
		o.Cache = cache
		return o, func() { o.Cache = nil; cache.Unref() }
	}
	return o, func() {}
}

// WithOptions makes Open use o, which must not be shared with another
// database, instead of [DefaultOptions]. A nil Cache in o gets the cache of
// [WithCacheSize].
func WithOptions(o *pebble.Options) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("nil pebble options")
		}
		c.opts = o
		return nil
	}
}

// WithCacheSize sets the block cache size in bytes (256 MiB by default); 0
// leaves Pebble's own default. The cache Open makes is larger by two
// memtables, which Pebble counts against it while they live: n is what
// the blocks get.
func WithCacheSize(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return errors.New("negative cache size")
		}
		c.cacheSize = n
		return nil
	}
}

// MinMemTableSize is the smallest memtable [WithMemTableSize] accepts.
const MinMemTableSize = 16 << 10

// WithMemTableSize sets the size in bytes of each memtable, over the
// MemTableSize of [DefaultOptions] (64 MiB) or of [WithOptions]. It sizes
// the disk too: Pebble preallocates every write-ahead log file to 110% of
// the memtable size as it fills (this package grows the preallocation
// with what the log holds, see the package's Tuning) and keeps up to
// MemTableStopWritesThreshold+1 used logs for recycling (5 with
// [DefaultOptions]), so a database that has filled memtables holds up to
// 6.6 times the memtable size in log space. A node
// with a small disk budget wants a small memtable; n must be at least
// [MinMemTableSize] and below 4 GiB.
func WithMemTableSize(n uint64) Option {
	return func(c *config) error {
		if n < MinMemTableSize || n >= 4<<30 {
			return fmt.Errorf("memtable size %d out of [%d, 4 GiB)", n, MinMemTableSize)
		}
		c.memTable = n
		return nil
	}
}

// WithDiskBudget sizes what Pebble holds on disk however little it stores
// to a budget of n bytes, for a node that must stay under one (see the
// freeze package's Budget), over [DefaultOptions] or [WithOptions]:
//
//   - the memtable is n/16, at least [MinMemTableSize] and at most the
//     64 MiB of DefaultOptions ([WithMemTableSize] is then ignored);
//   - fewer memtables may wait for a flush before writes stall
//     (MemTableStopWritesThreshold, 2 to 4) when that keeps the
//     write-ahead logs, each preallocated to 110% of the memtable and up
//     to MemTableStopWritesThreshold+1 of them kept for recycling, within
//     a quarter of n; at the smallest threshold they take at most 4.4
//     memtables, some 28% of n;
//   - the MANIFEST is rewritten once it passes n/64 (at least 4 KiB, at
//     most Pebble's 128 MiB), where it would otherwise grow by a record
//     per flush and compaction for as long as the process runs; Pebble
//     keeps the previous one too.
//
// With a budget of 8 GiB or more every setting is DefaultOptions'. n must
// be positive.
func WithDiskBudget(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("disk budget %d: want a positive number of bytes", n)
		}
		c.budget = n
		return nil
	}
}

// SizeToBudget sizes o to a disk budget of n bytes (n > 0) as
// [WithDiskBudget] does, for a Pebble database this package does not
// open (a go-datastore on Pebble, say).
func SizeToBudget(o *pebble.Options, n int64) {
	const defaultMemTable = 64 << 20
	mem := min(max(uint64(n)/16, MinMemTableSize), defaultMemTable)
	o.MemTableSize = mem
	// Logs on disk: the live one and up to threshold+1 recycled ones.
	logs := int(uint64(n) / 4 * 10 / (11 * mem))
	o.MemTableStopWritesThreshold = min(max(logs-2, 2), max(o.MemTableStopWritesThreshold, 2))
	o.MaxManifestFileSize = min(max(n/64, 4<<10), 128<<20)
}

// WithoutWAL opens the database without a write-ahead log: a write is
// kept in the memtable only until Pebble flushes it to a table, and Flush
// writes the memtable to a table (an L0 file) instead of syncing a log.
// Writing is cheaper (nothing is written twice), but a process killed
// loses every write since the last Flush, or since Pebble's last flush of
// a full memtable, not only what the OS had not yet written: the store
// then holds the state after some earlier batch, as after a crash of the
// machine with the log on. It suits a store whose writes can be replayed
// from elsewhere, as an indexer's index from its publishers' chains (see
// the Durability section of the package documentation). Concurrent Flush
// calls share one memtable flush. Each Flush writes a table that
// compactions then merge into the rest; Flushes of little data each cost
// far more than syncing a log (2.6 times the CPU per multihash at 1,000
// multihashes per Flush; see Tuning), so flush by volume.
func WithoutWAL() Option {
	return func(c *config) error {
		c.noWAL = true
		return nil
	}
}

// WithSortedRuns makes the store gather the index writes of its Puts and
// removals in memory, up to n bytes, and hand them to Pebble as one sorted
// table that Pebble ingests, instead of inserting each multihash into the
// memtable and its write-ahead log. Inserting random keys into a memtable
// is most of the CPU that writing an index costs (see Tuning); a sorted
// run skips it, and skips the log.
//
// Gets and finds see every write as soon as its Put returns, as without
// the option; a scan (All, Sweep) first hands Pebble what the runs hold.
// Flush applies what is gathered: a run of at least n/4 bytes as a table,
// a smaller one as an ordinary batch through the memtable, so that a
// Flush after a few writes costs what it costs without the option.
//
// The durability contract is that of [WithoutWAL]: a process killed loses
// the index writes since the last Flush (the records, provider
// information and everything else still go through the log, if there is
// one). It suits a store whose writes can be replayed from elsewhere, as
// an indexer's index from its publishers' chains.
//
// Runs take two arenas of n bytes (from 4 KiB to 2 GiB), an eighth of each
// for a hash table over the rest: one gathers while the other is being
// applied, and a writer that fills one while the other is still being
// applied waits for it. On Linux the arenas are mapped outside the Go
// heap, so the collector neither scans nor counts them, and an applied
// run's pages are given back: a store that is not writing holds none. A
// sha2-256 multihash with [WithDigestPrefixKeys] takes 37 bytes of arena
// and 4 to 8 of table, so a 32 MiB run holds about 750,000 multihashes.
// A database written with runs opens without them, and the other way
// round.
func WithSortedRuns(n int64) Option {
	return func(c *config) error {
		if n != 0 && (n < minRunSize || n > 1<<31) {
			return fmt.Errorf("sorted runs of %d bytes: want 0 (none) or from %d bytes to 2 GiB", n, minRunSize)
		}
		c.runs = n
		return nil
	}
}

// WithDigestPrefixKeys makes a new database key each multihash of a
// cryptographic hash with a digest over 20 bytes on its code and the first
// 20 bytes (160 bits) of its digest, and any other multihash on itself
// ([store.AppendIndexKey] says which, and argues why collisions do not
// matter). A sha2-256 multihash then takes 24 bytes of key instead of 36:
// some 12 bytes less on disk per multihash, about a third of the index.
// Get and the find answers built on it are unchanged (they echo the
// multihash asked for); All yields each multihash in that form, the
// digest cut to 20 bytes, so compare its output through
// [store.IndexKey].
//
// The layout is recorded when the database is created: a database created
// without this option keeps full multihashes when opened with it, and one
// created with it keeps prefixes when opened without it.
// [Store.DigestPrefixKeys] reports which one an open store has.
func WithDigestPrefixKeys() Option {
	return func(c *config) error {
		c.prefix = true
		return nil
	}
}

// Logger adapts l to Pebble's logger: Pebble's informational lines at
// debug level, its errors at error level; Fatalf logs and panics.
func Logger(l *slog.Logger) pebble.Logger { return slogLogger{l} }

// WithLogger sends Pebble's log lines to l: informational ones at debug
// level, errors at error level. By default they are discarded.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("nil logger")
		}
		c.logger = l
		return nil
	}
}

// slogLogger adapts slog to pebble.Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Infof(format string, args ...any) {
	s.l.Debug(fmt.Sprintf(format, args...), "engine", "pebble")
}

func (s slogLogger) Errorf(format string, args ...any) {
	s.l.Error(fmt.Sprintf(format, args...), "engine", "pebble")
}

// Fatalf logs and panics: Pebble calls it only for unrecoverable corruption
// and expects it not to return.
func (s slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.l.Error(msg, "engine", "pebble")
	panic("pebble: " + msg)
}

// WithoutPopulations keeps no context populations (store.Sampler): a Put
// writes one key per multihash instead of two, and the tables hold some
// 29 bytes per sha2-256 multihash instead of 64 (WithDigestPrefixKeys),
// but Sample reports store.ErrNotSampled for every context, so the node
// cannot serve the IPNI sampling API. The database remembers it: opened
// again without it, it keeps the populations of the contexts created from
// then on, the others staying unsampled, and Sweep deletes the population
// entries it no longer reads. A store without populations, and holding
// none from before, also removes spans of multihashes with one range
// deletion each (RemoveRanges, store.RangeRemover), which a query node's
// drop uses; a store with them refuses (errors.ErrUnsupported), since the
// populations would keep naming what the index lost. After a range
// removal Pebble's compactions reclaim the disk (BenchmarkDrop in
// scatter/keyspace/querynode: 101 MiB before dropping half of 2M keys,
// 50 MiB after; 67 MiB key by key).
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
// are cached reads Pebble once, for the multihash, and one whose records
// are not reads each record too, through the block cache of
// [WithCacheSize]. Opening takes the same time however many contexts the
// store holds, and memory does not grow with them. n = 0 caches nothing;
// n must not be negative.
func WithRecordCache(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("record cache size %d: want 0 or more bytes", n)
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
// nothing). A cached lookup does not read Pebble. The cache is exact:
// every write of a multihash's index entries drops its entry before it
// lands, and a bulk load or range removal empties the cache, so that no
// lookup is answered from a state a finished write replaced. n = 0 caches
// nothing; n must not be negative.
func WithLookupCache(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("lookup cache size %d: want 0 or more bytes", n)
		}
		c.lookups = n
		return nil
	}
}

// recordCache is the kv.Config size of a cache of n bytes (RecordCache,
// LookupCache): kv takes 0 for its default and a negative size for none.
func recordCache(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// WithCompactionLimit caps the compactions Pebble runs at once at limit(),
// which Pebble asks whenever it considers starting one: a node that lets
// lookups go first (ingest/pace's Pacer.CompactionLimit) runs fewer
// while they come. Under the cap the range is the options' own
// (CompactionConcurrencyRange: 1 to 2 with [DefaultOptions]); a cap below
// 1 counts as 1. Compactions already running finish.
func WithCompactionLimit(limit func() int) Option {
	return func(c *config) error {
		if limit == nil {
			return errors.New("nil compaction limit")
		}
		c.compLimit = limit
		return nil
	}
}

// limitCompactions caps the concurrency range rng (Pebble's default of
// 1 to 1 when nil) at limit().
func limitCompactions(rng func() (int, int), limit func() int) func() (int, int) {
	return func() (int, int) {
		lower, upper := 1, 1
		if rng != nil {
			lower, upper = rng()
		}
		n := max(limit(), 1)
		return min(lower, n), min(upper, n)
	}
}

// WithCompactionThreads makes Pebble call onGoroutine on each goroutine
// of a compaction before that goroutine uses the CPU: the compaction's
// own, which ends with the compaction, and those that compress and write
// its output tables, which end with their table. onGoroutine may lock
// the goroutine to its thread and lower the thread's priority, so that
// compactions yield the CPU to lookups (ingest/pace's Pacer.Background
// does). It installs a compaction scheduler that grants compactions as
// Pebble's default one does; with WithOptions, a CompactionScheduler
// already set in the options is kept and onGoroutine is not called.
func WithCompactionThreads(onGoroutine func()) Option {
	return func(c *config) error {
		if onGoroutine == nil {
			return errors.New("nil compaction goroutine hook")
		}
		c.compHook = onGoroutine
		return nil
	}
}
