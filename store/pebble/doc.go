// Package pebble is the default [store.Store] backend for indexer nodes: the
// index kept in a Pebble (cockroachdb/pebble) database on disk. It also
// opens, with [OpenDatastore], the go-datastore on Pebble a node keeps its
// small state in (walker positions, assignments), tuned for it: the one
// package that reaches Pebble does both.
//
// # Layout
//
// Each multihash is one Pebble key holding the IDs of its value records.
// Put adds an ID with a merge operand ([Merger]), so writing never reads,
// however many providers a multihash already has. The (provider, context)
// records themselves, millions for publishers that make one context per
// deal, stay on disk behind a cache ([WithRecordCache], 32 MiB by default),
// so opening takes the same time and memory however many there are. Get
// is one point read plus cache reads, and allocates nothing when a
// multihash has a single value whose record is cached; a record not
// cached costs one more point read. Bloom filters let reads skip files
// without the key. A
// database written by this package records its layout and must be opened
// with [Merger], which Open sets unless [WithOptions] supplies another.
//
// A multihash's key is 0x01‖mh‖0x00, 36 bytes for sha2-256. With
// [WithDigestPrefixKeys] a new database keys a multihash of a
// cryptographic hash with a longer digest on its code and the first 20
// bytes of its digest, 0x01‖code‖20‖digest[:20]‖0x00 (24 bytes for
// sha2-256), and any other multihash (identity, short digests, codes not
// known to be cryptographic) whole; store.AppendIndexKey lists the codes
// and argues the collisions: by chance about 3·10⁻¹⁹ at 10¹⁵ multihashes,
// and one crafted on purpose gains its author nothing a publisher cannot
// do by advertising the multihash itself, while removals never cross
// providers (record IDs are per provider and context). Get answers for
// the multihash asked; All yields the key's form. Which layout a
// database has is recorded when it is created and kept on every reopen.
//
// # Durability
//
// Writes are committed without syncing; Flush syncs the write-ahead log, and
// Close flushes. A process killed after Flush returned loses nothing that was
// written before it; a write in flight at the kill is either whole per engine
// batch (up to 4,096 multihashes) or absent, and repeating a Put completes
// it.
//
// [WithoutWAL] opens the database without a write-ahead log. Writes then
// live in the memtable until Pebble flushes it to a table, when it is full
// or at Flush, which writes the memtable as an L0 table and waits for it;
// Flushes called while one runs share the next (a coalescing [Store.Flush]:
// each still returns only after a flush that began after it was called).
// A process killed, or a machine that crashes, leaves the store as it was
// after some batch committed since the last Flush: every batch before the
// Flush is there, each one after it whole or absent, in commit order (the
// same guarantee as the log gives an OS crash between syncs, now also for
// a killed process). TestCrashWithoutWAL kills a writer with SIGKILL
// after a Flush and checks it; ingest's TestCrash and examples/indexer's
// TestCrashWithoutWAL do so under a walker, which flushes the store before
// each checkpoint and applies the advertisements since the last one again
// after a restart, so that the publishers' chains are the log of record.
// Breaking it on purpose, with a Flush that does nothing, the store test
// fails with "Put 12, before the Flush: Get = [], want [...]" and the node
// test with "store differs from model: 36220 multihashes differ"; with the
// walker recording its checkpoint before flushing the store, "16280
// multihashes differ" (the node) and "790 multihashes differ" (ingest).
// A writer whose writes nothing replays must Flush before it considers
// them done (examples/indexernode flushes the freeze snapshot, an
// unfreeze and a handoff's provider records).
//
// [WithSortedRuns] gives the index the same contract with the log on: the
// multihashes of Puts and removals gather in memory and reach Pebble as
// ingested tables (or, for a small remainder at Flush, as a batch), so a
// process killed loses the index writes since the last Flush, while
// records, provider information and everything else go through the log as
// before. Reads see every write as soon as it returns. The crash tests
// above run in this mode too (TestCrashWithoutWAL/runs here, TestCrash/runs
// in ingest, TestCrashSortedRuns in examples/indexer); a Flush that leaves
// the runs unapplied fails them with "Put 18, before the Flush: Get = []"
// and "store differs from model: 23950 multihashes differ".
//
// # Populations
//
// Beside the index, the store keeps each context's population (the
// multihashes of the context, store.Sampler), one key per (context,
// multihash) written in the batch of the index entry, so that the IPNI
// sampling API answers the spec's sample, the same on every indexer that
// holds the context. It is a second copy of every multihash: at 1M random
// sha2-256 multihashes in Puts of 1,000 (BenchmarkWrite, one run each on
// a shared machine), the tables hold 64.1 bytes per multihash instead of
// 28.7 (WithDigestPrefixKeys), and the CPU per multihash against raw
// Pebble's in the same run went from 0.93 to 0.59 of raw's rate (log on),
// 1.02 to 0.72 (WithoutWAL) and 1.69 to 0.99 (WithSortedRuns, whose runs
// take the index's keys only: the population's go through the memtable
// and the log). [WithoutPopulations] keeps none, for a store that does
// not serve the sampling API (examples/querynode's, whose nodes hold part
// of every context): 26.4 bytes per multihash. Sampling 10 positions of
// a context of 1M multihashes takes 0.5 ms once its count is cached and
// 67 ms after the context changed (a scan of its population; a raw
// Pebble scan of those keys takes 49 ms), BenchmarkSample:
//
//	INDEXKIT_BENCH_KEYS=1000000 go test -run XXX -bench 'BenchmarkWrite/(raw-sorted-prefix20$|prefix$|prefix-nopop$|node$|runs$)' -benchtime=1x ./store/pebble/
//	go test -run XXX -bench BenchmarkSample ./store/pebble/
//
// A database written before populations (schema version 2, which kept a
// bounded sample per context instead) is upgraded at Open: with whole
// multihash keys, every live context's population is rebuilt from one
// scan of the index; a digest-prefix index cannot give the whole
// multihashes back, so its older contexts report store.ErrNotSampled
// until they are removed and put again. With WithSortedRuns, a process
// killed keeps population entries whose index entries it lost since the
// last Flush; a node's walker, which puts those advertisements again at
// its next start, heals both.
//
// # Tuning
//
// [DefaultOptions] is tuned for ingest: 64 MiB memtables and a high L0
// stop-writes threshold, so that writes do not stall, with a 256 MiB block
// cache ([WithCacheSize]) and bloom filters above the last level. Pebble
// counts its live memtables against the block cache, so Open makes the
// cache two memtables larger than asked: until issue #32, a node's 32 MiB
// cache beside its 32 MiB memtables held no block at all, and each lookup
// read its filter, index and data blocks from the files. The
// memtable size also sizes the disk: Pebble preallocates each write-ahead
// log to 110% of it, some 70 MiB by default however little is stored.
// Open and [OpenDatastore] let a log's preallocation grow with what it
// holds instead (256 KiB at first, then twice what is written, up to
// Pebble's 110%), so a small store takes a small disk whatever its
// memtable (TestSmallNodeDisk: a node's index and state hold 0.8 MiB
// after 5,000 multihashes, 221 MB before). Pebble also keeps used logs,
// whole, for recycling, so a store on a small disk budget still sets a
// small memtable ([WithMemTableSize]), or sizes memtables, logs and
// MANIFEST to the budget at once ([WithDiskBudget]).
// Everything passes through: [WithOptions] takes any *pebble.Options, and
// [Store.Pebble] exposes the database for metrics (read amplification, L0
// file count, compaction debt), checkpoints and manual compactions.
//
// What it costs to write a multihash, and what was tried to write less
// (issue #17), is measured by BenchmarkWrite: random sha2-256
// multihashes in Puts of 1,000, through Flush and a memtable flush,
// beside raw Pebble Sets of the same 36-byte keys in the same process.
// Each figure is multihashes per CPU-second of the process (Pebble's
// background work included), then bytes allocated on disk per multihash
// (st_blocks, logs included) after a full compaction, then table bytes:
//
//	INDEXKIT_BENCH_KEYS=1000000 go test -run XXX -bench BenchmarkWrite -benchtime=1x ./store/pebble/
//
//	1M multihashes          mh/CPU-s   alloc B/mh  tables B/mh
//	raw Pebble              214k       424         38.7
//	store, before #17       204k       417          —     (an earlier run)
//	store, batches sorted   238k       427         41.0
//	  no block compression  254k       439         48.2
//	  columnar tables       240k       421         41.8
//	  without WAL           262k        57         41.0
//	raw, 20-byte digests    287k       322         26.4
//	  columnar              291k       323         27.5
//
// Run to run the CPU figures move by some 15% on a shared machine (raw
// Pebble measured 214k and 288k in two runs); the disk figures do not.
// What was kept and what was not:
//
//   - Without the WAL ([WithoutWAL]) the log files go: Pebble preallocates
//     each to 110% of the memtable and keeps used ones for reuse, some 380
//     B per multihash at 1M and 44 at 10M, more than the tables; and each
//     multihash is written once, not twice. Kept for nodes, whose chains
//     replay what a crash loses (see Durability).
//   - Keys on 20-byte digests ([WithDigestPrefixKeys]) take 12 bytes per
//     multihash off the tables (38.7 to 26.4), and do not cost CPU. Kept
//     for new node databases.
//   - Writing each batch in key order lets Pebble's memtable insert each
//     key from where the last went instead of from the top of a skiplist
//     of millions (the skiplist search was 40% of raw Pebble's CPU).
//     Kept: raw Pebble at 1M, three runs each, 264k mh/CPU-s unsorted
//     (244k to 276k) and 306k sorted (268k to 338k).
//   - No block compression: Snappy does not shrink random digests, but it
//     does shrink the 8-byte trailers (zero sequence numbers in the last
//     level) and the shared code and length bytes: without it tables grow
//     by 7.2 B per multihash for a CPU saving within the noise. Rejected.
//     Measured again at 100M with no compression above the last level
//     only (issue #32, docs/performance.md): 8% less CPU with the
//     settling counted, none by the ingest, and 8% more disk settled
//     (29.2–29.5 B per multihash against 26.9–27.1). Rejected too.
//   - Columnar tables (FormatNewest): 0.8 B per multihash more, CPU within
//     the noise, and a format older binaries cannot open. Rejected; the
//     database keeps the oldest format Pebble supports. Measured again
//     at 10M with the settling counted, with MinLZ (which needs them) and
//     with Snappy: no less CPU either way (docs/performance.md, issue #32).
//   - Memtable size and level sizes were not settled: there was no time
//     for their runs at 10M, and at 1M everything fits one memtable.
//   - Bulk ingestion of sorted runs ([WithSortedRuns]): see below. Kept
//     for nodes (32 MiB runs).
//
// At 10M multihashes (one run each):
//
//	10M multihashes                  mh/CPU-s  alloc B/mh  tables B/mh  ×raw CPU
//	raw Pebble                       135k      83.6        39.3         1.00
//	raw, 20-byte digests, sorted     155k      71.3        27.0         1.15
//	store, batches sorted            132k      85.9        41.6         0.98
//	store, WithoutWAL and
//	  WithDigestPrefixKeys           158k      29.3        29.3         1.17
//
// In a second run, the node's default (WithDigestPrefixKeys, with the
// WAL): 150k mh/CPU-s against raw Pebble's 116k (1.29×), 73.6 B per
// multihash allocated of which 29.3 in tables.
//
// The 44 B per multihash of log files that raw Pebble keeps are gone:
// 29.3 B allocated once compacted, 31.0 right after the load, when Pebble
// still owed 23.7 B per multihash of compaction debt.
//
// Sorted runs ([WithSortedRuns], 32 MiB) skip the memtable: half of the
// CPU above was Pebble's skiplist finding where each random key goes
// (findSpliceForLevel, 43% of the profile at 4M keys, on top of the
// comparisons it makes). A run sorts its distinct keys on their first
// eight bytes as a number and is written as one table, which Pebble
// ingests into level 0. At 10M (one run each, the machine shared;
// settle-CPU is the full compaction after the load, the debt still owed):
//
//	10M multihashes                  mh/CPU-s  settle CPU-s/M  tables B/mh  ×raw CPU
//	raw Pebble                       229k      0.47            39.3         1.00
//	WithDigestPrefixKeys (log on)    262k      0.55            29.3         1.15
//	  with runs                      653k      0.85            29.3         2.86
//	  with runs, Flush every 64 Puts 433k      0.54            29.3         1.90
//
// Counting the settling compaction too, runs take 2.4 µs of CPU per
// multihash against 4.4 without them. A Flush every 64 Puts of 1,000
// (the walker's checkpoint) finds less than a quarter of a run and commits
// it as one sorted batch through the memtable, which still pays: sorted,
// each key is inserted from where the last one went. Flushing after every
// Put costs what it costs without runs (307k against 355k at 4M).
//
//	INDEXKIT_BENCH_KEYS=10000000 go test -run XXX -bench 'BenchmarkWrite/(raw$|prefix$|runs$|runs-flush64$)' -benchtime=1x ./store/pebble/
//
// With the memtable out of the way, compactions are most of what is left,
// and they grow with the index: a level more per tenfold. Routes measured
// against them with runs (CPU-µs per multihash, the load plus the
// settling compaction; one run each, the machine shared):
//
//	                                      10M          30M
//	runs, 64 MiB base level               2.77         2.62
//	  L0 compaction at 8 sublevels        2.51
//	  both                                2.28
//	  512 MiB base level                  2.06         2.25
//	64 MiB runs                           1.97
//
// A larger base level (LBaseMaxBytes) leaves fewer levels to compact
// through, and fewer for a lookup to read; at 30M it also left a third of
// the compaction debt owed at the end of the load (12.8 B per multihash
// against 38.9). But every compaction out of level 0 rewrites the base
// level it overlaps, which random keys make all of it, and at 100M that
// cost wins: a node ingesting 100M multihashes on a quiet machine
// (examples/scale, one run each, back to back) took 4.45 CPU-s per
// million with a 512 MiB base level against 3.42 with 64 MiB, and left
// 1.9 GiB of debt against 1.1. Rejected then. Measured again with the
// compactions owed at the end counted (examples/scale -settle, issue #32,
// docs/performance.md), a 256 MiB base level wrote less in every 100M run
// (write amplification 2.44 and 2.83 against 2.96–3.50 with 64 MiB) and,
// in the one pair run back to back, cost 8% less CPU per multihash; while
// the index grows it keeps the base level one level lower, one pass less
// on every byte's way down. [DefaultOptions] sets 256 MiB.
// Runs of 64 MiB measured better at 10M, but cost twice the memory; the
// node keeps 32 MiB.
//
//	INDEXKIT_BENCH_KEYS=30000000 go test -run XXX -bench 'BenchmarkWrite/(runs-lbase64$|runs-lbase$)' -benchtime=1x ./store/pebble/
//
// At 100M a profile of the node (issue #32) put the runs themselves at 29%
// of its CPU, most of it waiting on memory: a probe of the run's table that
// passed another key's slot read that key from the arena to compare it (a
// cache miss each, in a table three quarters full), collecting the keys
// walked the table at random, the sort made its comparisons through a
// closure, and with 4 KiB pages nearly every probe of a 4 MiB table also
// missed the TLB. A slot now keeps the hash bits an offset does not need
// (7 in a 32 MiB arena) and a key is read only when they agree; a run whose
// keys do not repeat is collected in the order it was written; the 8-byte
// prefixes sort by radix (a third of the time); and arenas of 4 MiB and
// more are aligned to transparent huge pages and ask for them. A node
// ingesting 100M multihashes (examples/scale, one run each, back to back,
// ingest only / with the settling compactions):
//
//	100M multihashes                     mh/CPU-s ingest   with settling
//	before (two runs)                    286,985, 303,923  256,601
//	hash bits, record order, radix sort  321,905
//	  and huge pages (two runs)          357,295, 415,627  280,630, 325,945
//	  and the block cache fix            395,788           305,268
//
//	make scale SCALE_FLAGS='-mh 100M -raw=false -unpaced=false -probe-rate 0 -settle 20m'
//
// The database (store/internal/kv) sorted each batch's multihashes before
// writing them, which a skiplist memtable needs (see above); sorted runs
// sort a whole run when they apply it, and a profile at 100M put that
// second sort at 7% of the node's CPU. With sorted runs the engine now
// reports index writes as order-free (kv.OrderFreeIndex) and a batch goes
// to the run as given; population entries, which go to the memtable, are
// still sorted. Same command, alternated, on a slower day (the first run
// with a CPU profile taken during it):
//
//	100M multihashes                     mh/CPU-s ingest   with settling
//	batches sorted (two runs)            299,985, 309,205  208,220, 215,035
//	batches as given (two runs)          344,388, 337,188  237,778, 216,113
//
// What was left of the runs' own time was two cache misses a key, each
// waited for alone: adding a key read its slot of the run's 2 MiB table,
// and applying a run read each key's record from the arena in key order,
// that is at random (perf annotate put nearly all of add's and sorted's
// time on those two loads, 6-7% of the node's CPU each at 10M). Now a
// batch's keys are hashed 64 at a time and their slots read before they
// are added, and sorted reads the records of the next 64 keys before it
// writes them: loops of loads that do not depend on each other, so the
// processor waits for many misses at once. Nanoseconds per key of a
// 32 MiB run of random digests, three runs each (the fill's "before" is
// add, one key at a time, in the same process; the apply's is the same
// benchmark on the previous commit, whose "write only" baseline, the same
// keys added to a table from a slice, measured 288–318 then and 276–325
// after, so that apply minus it is the run's own cost, about 270 ns a key
// before and 60 after):
//
//	32 MiB run                   before    after
//	fill (BenchmarkRunAdd)       126–146   81–110
//	apply (BenchmarkRunApply)    558–651   345–378
//
//	go test -run '^$' -bench 'BenchmarkRun(Add|Apply)' -count 3 ./store/pebble/
//
// Measured and not kept: compression on the last level only (tables
// above it uncompressed, as transient): 282,135, and 34.2 bytes of disk
// per multihash against 28.2 right after the load, the larger tables
// costing more to move than Snappy saved; an L0 compaction threshold of 8
// instead of 2 (more runs merged at once): 393,561 and 307,805 with
// settling, inside the spread of the default.
//
// The price of the WAL's absence is paid at Flush, each of which writes
// a table that compactions must merge into the base level; with random
// keys every small table overlaps all of it. Flushing after every so many
// Puts of 1,000 multihashes (1M, WithoutWAL and WithDigestPrefixKeys):
//
//	Flush after                mh/CPU-s
//	the last Put only          280k, 291k
//	every 64 Puts              243k, 293k
//	every 8 Puts               225k, 196k
//	every Put                   78k (79k with L0CompactionThreshold 8)
//	every Put, with the WAL    201k
//
// An ingest checkpoint flushes every 64 advertisements or second, and at
// the end of each walk: a bulk walk of long chains stays in the first
// rows, where going without the WAL pays; a node that walks one small
// advertisement per announce is in the last ones, where it costs 2.6
// times the CPU of syncing a log. WithoutWAL is therefore an option, not
// the default: examples/indexernode turns it on with -index-no-wal, for
// bulk ingest, and a node that uses it should checkpoint by volume (a
// few hundred thousand multihashes) rather than every 64 advertisements.
//
// # Bulk loads
//
// [Store.NewBulkLoad] ([store.BulkLoader]) writes each sealed part of a
// load as two tables in the directory indexkit-loads inside the
// database's (removed at Open): the index entries, as merge operands
// listing each multihash's record IDs, and the population entries, whose
// keys lie on either side of the records' so that the ingest does not
// overlap the records the load has just put in the memtable. Pebble
// ingests both at once (DB.Ingest), after the sorted runs are drained; a
// load fed in key order (a copy from one source) makes tables that do not
// overlap each other, which Pebble places low in the tree without
// compacting them. The tables are not compressed: index keys are digests.
//
// # Lifecycle
//
// [Open] returns a ready store; Close syncs and closes the database and waits
// for calls in flight. A Store is safe for concurrent use. Pebble's own log
// lines are discarded unless [WithLogger] names a *slog.Logger.
package pebble
