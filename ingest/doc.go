// Package ingest is everything between an IPNI publisher and a
// [store.Store]: the resumable advertisement-chain [Walker], applying
// advertisements (entries, metadata updates, removals, provider records),
// per-publisher scheduling with limits ([Ingester]), an allow/deny
// [Policy], and status and hooks for every publisher.
//
// # Model
//
// A publisher serves a chain of advertisements, newest first, each linking
// the previous one by PreviousID. The package reaches a publisher through a
// [Syncer] (Head and Block by CID), which an ingest/ipnisync client
// satisfies; the [Ingester] gets one per publisher from a caller-supplied
// [SyncerFunc], so this package does not depend on any transport.
//
// A [Walker] keeps, per publisher, the state of the piece-indexer design:
// lastHead (the head of the last finished walk: it and everything before
// it are applied), head (where the walk in progress started) and tail (the
// next advertisement to fetch). A walk goes newest to oldest from head,
// collecting advertisements until it reaches lastHead, an advertisement
// applied before, or the start of the chain; then it applies them oldest
// to newest, as IPNI requires, and sets lastHead to head. A head announced
// during a walk is walked after it. Collected advertisements are not held
// in memory: each is written to the datastore with its block (so it is
// fetched once), and read back one at a time when applied.
//
// # Unordered walks
//
// A consumer to which order does not matter (the piece sampler: pieces
// are immutable, and it ignores removals) can walk with [WithUnordered]
// (or [WithWalkerUnordered]) instead: each advertisement is fetched,
// verified and applied at once, newest first from head down to lastHead,
// and the position (head, tail, lastHead) moves past it after each one.
// Its first advertisements are applied while the rest of a long chain is
// still being fetched, and nothing collected is held on disk. The slot
// ([WithSlot]) bounds each turn as it does for ordered walks. An
// advertisement that cannot be fetched, or whose Apply fails, stalls the
// walk there, as in an ordered walk; one that does not decode or verify,
// or a walk over the depth limit, ends the walk at it (lastHead becomes
// the walk's head, and an [*AdError] is returned): what lies beyond it
// cannot be reached through it, and starting again from the head would
// apply the newer ones twice. [Ad].Removed is never set.
//
// The position is kept in the walker's datastore, or, when the [Applier]
// implements [Positions], by the applier: it then persists each move
// together with the effects of the advertisement applied (one
// transaction), and several processes can share one position (the
// datastore still lists the walk as unfinished, /walking/<publisher>, so
// a restart resumes it). Moves are
// conditioned on the position they start from ([ErrPositionMoved]), and
// the head a walk starts from is fetched after the position was read, so
// a walk never starts below a last head that another process set.
// [ErrWalkedElsewhere] from Positions says another process walks the
// publisher: not a failure; the Ingester asks again after one slot time.
// An ordered walk that an earlier version left half done in the
// datastore is finished in order first.
//
// An unordered walk knows only its last head: it keeps no marker per
// advertisement. A publisher whose head goes back to an older
// advertisement of its chain is therefore walked from there down to the
// start of its chain again, and each of those advertisements applied a
// second time (for the piece sampler: idempotent samples, counters that
// count them again).
//
// While collecting, the walker notes each (provider, context) removed by
// an IsRm advertisement whose signature is acceptable; an older
// advertisement of the same walk for a removed context is marked
// [Ad].Removed and the Ingester indexes nothing for it, so a context
// removed later in the chain is never indexed at all.
//
// What applying an advertisement does to the store:
//
//	advertisement            store
//	IsRm                     RemoveProviderContext(provider, ContextID)
//	Entries = NoEntries      UpdateMetadata; nothing if the context holds
//	                         nothing (there is nothing the metadata applies to)
//	Entries = EntryChunk     Put(provider, ContextID, Metadata) of every
//	                         multihash of the chain, in batches; a context
//	                         already stored gets the new metadata throughout
//	Entries = HAMT root      the same, of every key of the HAMT (a set:
//	                         values ignored)
//	Entries = anything else  rejected: ErrUnsupportedEntries
//	Removed (see above)      nothing
//	Frozen (WithFrozen)      with entries: UpdateMetadata only, as for
//	                         NoEntries; no entry is fetched or stored
//	empty ContextID          provider record only (chain-level extended
//	                         providers); with entries: ErrInvalidBlock
//	every advertisement      provider record: addresses (when listed),
//	                         Publisher, LastAdvertisement, LastAdvertisementTime
//	                         (when it was processed), extended providers
//	                         (chain-level or per context), LastError cleared
//
// Multihashes that do not parse are skipped and logged, not fatal.
//
// # Entries
//
// An advertisement's Entries link an entry chunk (the first of a chain
// linked by Next) or, as IPNI also allows, the root of an IPLD HAMT
// (https://ipld.io/specs/advanced-data-layouts/hamt/spec/, as
// go-ipld-adl-hamt writes it) used as a set of multihashes. As the
// reference indexer does, the first block is decoded as an entry chunk
// and, when it is not one, as a HashMapRoot {hashAlg, bucketSize, hamt};
// a block that decodes as neither (but is valid dag-json or dag-cbor, and
// has neither an Entries nor a hamt field) fails with
// [ErrUnsupportedEntries]. A HAMT is walked depth first from its root:
// each bucket entry's key (bytes, or a string holding them) is a
// multihash, and each linked HashMapNode is fetched through the same
// [Syncer] and verified like every block (size, hash against its CID,
// dag-json or dag-cbor by the CID's codec). A node that breaks the HAMT
// format (a bitmap whose size differs from the root's or is not a power
// of two, bits set not matching the elements, a bucket empty or over
// bucketSize, a key that is not bytes) fails with [ErrInvalidBlock].
// Keys are not re-hashed to check their position, as iterating a set does
// not need it. The entries depth limit ([WithDepthLimits]) bounds the
// nodes of a HAMT, root included, as it bounds the chunks of a chain.
//
// # Announces are hints
//
// Anyone can announce (an indexer's announce endpoint is public), so an
// announce is a hint, never an instruction. Before anything is written
// for it, or the addresses stored for the publisher are replaced, the
// Ingester fetches the publisher's signed head from the announced
// addresses; the [Syncer] verifies it against the publisher's key (an
// ingest/ipnisync client does). If it does not verify, the announce is
// ignored with a logged reason and the walk uses the addresses verified
// before; a publisher that never verified is held in memory only (its
// status shows the error, its backoff spares the publisher repeated
// requests) until it expires or makes room for another, with nothing of
// it persisted. The walk always goes to the verified head: an announced
// CID that is an older advertisement of the chain is covered by it, and
// one that is not in the chain is ignored (logged).
//
// Publishers that never verified are bounded: at most
// [DefaultUnverifiedLimit] are held at once, each for at most
// [DefaultUnverifiedTTL] ([WithUnverifiedLimit]); more fail
// [Ingester.Announce] with [ErrTooManyPublishers].
//
// # Floods of publishers that never verified
//
// Their checks are cheap for whoever announces them and not free for the
// Ingester, so it shares them out by where the announces come from
// ([Ingester.AnnounceFrom], [SourceOf]: an IPv4 /24, an IPv6 /48):
//
//   - Room: while the table of publishers that never verified is full, a
//     new one from a source holding less than an equal share of it takes
//     the place of the largest source's newest (a failed one first); a
//     source at its share is refused ([ErrTooManyPublishers]).
//   - Checks: a head check of such a publisher runs on one of
//     [DefaultCheckWorkers] check workers ([WithCheckWorkers]), apart from
//     the walk workers, within [DefaultHeadCheckTimeout]
//     ([WithHeadCheckTimeout]: connecting, asking and the answer), so
//     that addresses that accept and never answer hold a worker briefly.
//     The next check goes to the source with the fewest running, then the
//     fewest failures (forgiven with a half-life of a minute), then the
//     one served longest ago; no source runs more than an equal share of
//     the workers while others wait. A check that verifies queues the
//     publisher's first walk on a walk worker.
//
// [Ingester.Sink] puts an [announce.Receiver] in front of this: each
// announce is limited by what it costs (nothing for a publisher whose walk
// is queued or running, per publisher once verified, per source before),
// and one the Ingester has no room for is answered 429 or 503 with a
// Retry-After while its request is open, instead of being accepted and
// dropped. Failures of such publishers are counted ([Ingester.Unverified])
// and logged sampled: one warning a kind every ten seconds, the rest at
// debug level.
//
// # Signatures
//
// Every advertisement must carry a valid signature by its provider or by
// the publisher it was fetched from: a publisher that announces and
// serves a chain is trusted to publish for the providers in it, as
// deployed IPNI publishers do. Anything else (unsigned, wrongly signed,
// signed by a third peer) fails with [ErrSignature]. The signature is
// checked as the advertisement is collected, before its block is kept, so
// a chain that is not the publisher's costs no disk. [WithUnsignedAds]
// accepts unsigned ones, for tests and trusted private publishers. An
// advertisement that fails its signature does not touch the record of the
// provider it names (it may not speak for it).
//
// # Failures
//
// An advertisement that does not verify while it is collected (signature,
// hash, decoding, a cycle) or a walk over a limit (depth, spill) abandons
// the walk: what it collected is dropped, and the publisher keeps its last
// good state (lastHead); a newer verified head whose chain does not go
// through the bad advertisement is walked as usual. A failure to fetch, or
// to fetch, verify or apply an advertisement's entries, ends the walk with
// an [*AdError] naming it; the walk stalls there: the advertisements
// before it stay applied, it and the newer ones are not, and the next walk
// (after a backoff in Run) starts again with it. The error is recorded in
// the publisher's [Status] and, when the provider is known (and the
// advertisement verified), in the provider record's LastError. Other
// publishers are not affected. The backoff (consecutive failures and the
// time of the next try) is persisted, so a restart does not walk a
// failing publisher again at once. Errors wrap the sentinels of this package ([ErrFetch],
// [ErrInvalidBlock], [ErrSignature], [ErrUnsupportedEntries],
// [ErrDepthLimit], [ErrSpillLimit], [ErrCycle], [ErrTooSlow],
// [ErrUnverified], [ErrNotAllowed]) and the ingest/schema sentinel or
// context error underneath, for errors.Is.
//
// Entry chunks and HAMT nodes are fetched and verified in full before any
// multihash of theirs is put (an entry chunk is hashed once: by the
// [Syncer] if it says it verifies blocks, as an ingest/ipnisync client
// does, and by the walker otherwise), and multihashes are put
// [DefaultBatchSize] ([WithBatchSize]) at a time: an advertisement with
// at most that many entries is indexed by one Put once all its blocks are
// verified, so a failure leaves the store unchanged for it. Longer entries (IPNI allows
// tens of millions of multihashes) are streamed: a failure part-way
// leaves the context partly indexed, and the retry, putting the same
// multihashes again, completes it; Puts are idempotent.
//
// A walk allocates next to nothing per multihash: each batch copies the
// multihashes it collects into memory it keeps, entry chunks decode into a
// reused buffer ([schema.EntryDecoder]), and each indexed chunk goes back
// to a [Syncer] that takes blocks back (an ingest/ipnisync client reads the
// next bodies into them). In a node ingesting 10M multihashes this cut
// what it allocates to a sixth and its garbage collections, each of which
// stops its lookups too, from 187 to 50 (docs/performance.md).
//
// A walk longer than the depth limit ([DefaultAdDepthLimit],
// [WithDepthLimits]) is abandoned, with nothing of it applied; so is a
// walk whose collected blocks would take more than the spill limit
// ([DefaultSpillLimit], and [DefaultFirstSpillLimit] for a publisher whose
// first walk it is; [WithSpillLimits]; the limit counts the blocks'
// bytes, though the walker keeps the advertisements in fewer). A cycle
// cannot occur with verified blocks (an advertisement cannot link to a CID
// that depends on its own bytes); the walker still checks for a CID met
// twice and fails with [ErrCycle], without a marker per advertisement:
// it remembers one CID of the walk, moved ever further apart (Brent's
// algorithm), and a walk round a cycle of n advertisements comes back
// to it within about 2n steps, unless a limit stops it first.
//
// # Persistence and restart
//
// The walker's state lives in a go-datastore (on disk, go-ds-pebble or
// go-ds-leveldb: their batches are atomic, which the walker relies on),
// under /walk/<publisher>/:
//
//	lastHead, head, tail    CIDs, as above
//	count, applied          advertisements collected and applied (uvarint)
//	spilled                 bytes of the blocks collected (uvarint)
//	q/<%016x>               collected advertisement i (0 = newest): flags,
//	                        CID, verified signer and the advertisement
//	                        as decoded, in a compact binary form (earlier
//	                        versions kept its block, which this one still
//	                        reads: applying it decodes the block again)
//	seen/<cid>              written by earlier versions for each
//	                        advertisement collected; dropped when the walk
//	                        ends
//	done/<cid>              applied while not frozen (kept for good, next
//	                        to the entries it indexed, so that a walk
//	                        asked for an old head does nothing)
//	heads                   the heads of the last 16 walks that finished:
//	                        a walk stops at them, as at the last head
//	rm/<provider>.<ctx>     contexts removed in this walk (a walk with at
//	                        most 65,536 holds them in memory as well, and
//	                        looks none up)
//	addrs                   the publisher's verified addresses (its signed
//	                        head was fetched from them), used after a
//	                        restart by an announce or sync that names none
//	backoff                 consecutive failures and the next try
//
// plus /walking/<publisher> while a walk is unfinished. Each collected
// advertisement is persisted with the tail in one batch. Applying
// checkpoints every [DefaultCheckpointEvery] advertisements or
// [DefaultCheckpointInterval] ([WithCheckpoint]), and before returning: it
// writes the provider records whose LastAdvertisement it deferred, flushes
// the store, then records the applied advertisements. (An advertisement
// that changes nothing in its provider's record but LastAdvertisement and
// its time, the common case of a chain of small advertisements, leaves
// the record to the checkpoint: it lags by at most one checkpoint. A
// record another writer, such as a handoff, changed meanwhile keeps its
// other fields.) A process
// killed at any moment therefore resumes where it stopped, applying again
// at most the advertisements since the last checkpoint; applying a
// sequence of advertisements again over a store that already holds their
// effects ends in the same store (puts and metadata updates repeat, and a
// removal in the sequence clears what came before it), so the store ends
// as if nothing had happened. Walks resume on the next [Ingester.Run] (or
// Walk, Sync) without a new announce. The flush before the record is also
// what lets a store keep no write-ahead log (store/pebble's WithoutWAL):
// a kill then loses the store's writes since the last checkpoint, which
// is exactly what the walk applies again (TestCrash runs both ways).
//
// A node whose state an earlier version kept in another datastore moves
// it with [MigrateDatastore], once, so that a kill at any point of the
// move leaves either the old state or the whole new one.
//
// # Frozen nodes
//
// A node that is frozen (its disk is nearly full; see the freeze package)
// keeps walking chains but stores no new multihashes. [WithFrozen] gives
// the Ingester a function that says whether the node is frozen; the walker
// consults it once per advertisement, as it hands it to the [Applier]
// ([Ad].Frozen). A frozen advertisement with entries is applied as a
// metadata update of its context: no entry block is fetched, no multihash
// is put. Removals, metadata updates and provider records (addresses,
// LastAdvertisement, extended providers) are applied as always.
//
// A frozen node walks for as long as its publishers publish, the ones it
// handed off included, so nothing it keeps may grow with the
// advertisements it walks: an advertisement applied while frozen leaves no
// done/<cid> marker, and walks stop at the last head or at the head of
// one of the last 16 walks instead. After an unfreeze, which resets the
// walker to the frozen point ([Walker.Reset] forgets the recent heads),
// the next walk therefore applies the frozen-period advertisements again,
// with their entries. The price is paid only by a publisher that goes
// back to an advertisement it published while the node was frozen and is
// not one of the last 16 heads: the walk from it applies again, metadata
// only, the frozen-period advertisements before it (removals and puts
// repeat to the same end; a metadata update of a context may go back to
// that advertisement's until the publisher's next one).
//
// # Scheduling and lifecycle
//
// [New] starts nothing. The owner calls [Ingester.Run] once, typically
// under an errgroup; it walks announced publishers until its context ends
// and returns only after every walk it started has stopped (each persisted
// where it was). [Ingester.Announce] (from announce receivers, gossip, a
// poller) queues a publisher's new head: a newer announce replaces a
// pending one, and one made during a walk is taken when the walk ends. Run
// walks at most [DefaultWorkers] ([WithWorkers]) publishers at once, one
// walk per publisher, the publisher queued longest first; every Head and
// Block request is bounded by [DefaultRequestTimeout]
// ([WithRequestTimeout]) and optionally rate-limited per publisher
// ([WithRequestRate]); a failed publisher waits an exponential backoff
// ([WithBackoff]) before its next walk. No publisher can starve the
// others, however long or slow its chain:
//
//   - a walk gets a slot of at most [DefaultSlotTime] and
//     [DefaultSlotAds] advertisements ([WithSlot]); then it is persisted
//     where it is and the publisher goes to the back of the queue;
//   - a publisher that sends less than [DefaultMinTransferRate] bytes per
//     second of waiting on it ([WithMinTransferRate]) is stopped with
//     [ErrTooSlow] and backs off;
//   - half the workers ([WithReservedWorkers]) are kept for publishers
//     that have finished a walk before, so a flood of new publishers
//     cannot hold them all.
//
// [Ingester.Sync] walks one publisher in the caller's goroutine (an admin
// "sync now"), without a slot.
//
// A consumer that is not a store (the piece sampler) keeps all of this
// scheduling and gives the Ingester its own [Applier] with [WithApplier];
// the applier reads an advertisement's multihashes with [Ingester.Entries]
// (or the first blocks of them with [Ingester.FirstEntries]).
//
// The [Policy] allows or denies publishers ([WithPolicy],
// [Ingester.SetPolicy]); Announce and Sync refuse denied ones with
// [ErrNotAllowed].
//
// The Ingester's methods are safe for concurrent use. A [Walker] runs one
// walk at a time; its State and Progress may be read at any time.
//
// # Options
//
// [New] takes [Option]s. The walker settings among them (logger, hooks,
// unsigned ads, depth, request timeout and rate, checkpoints, frozen,
// spill limits) reach every Walker the Ingester makes; a Walker made alone
// with [NewWalker], to walk a chain into an Applier of one's own without
// the scheduler, takes [WalkerOption]s, which are those settings alone
// (WithWalkerLogger, WithWalkerRequestTimeout, ...). No option is accepted
// and ignored.
//
// # Observability
//
// [Ingester.Status] and [Ingester.Statuses] return a snapshot per
// publisher: advertisements walked and applied, entries indexed, current
// head, lastHead, lag (advertisements pending), last error and its time.
// Progress goes to the [WithLogger] logger with the keys publisher,
// provider and cid. [Hooks] report each advertisement walked and applied,
// entries indexed, walks done and failed, for metrics.
//
// # Why the surface is this large
//
// ingest exports more names than most packages (over 60, counting
// methods) because it is one job, a publisher's advertisements into a
// store, with several seams an embedder plugs or reads:
//
//   - the [Ingester] with its [Option]s and, beside each option, the
//     Default constant it documents;
//   - the single-publisher [Walker] with its own [WalkerOption]s
//     (NewWalker, WithWalker...): the Ingester hands its walker settings
//     on (rule 5 of the root package's "Constructing things"), and a
//     caller that walks one chain by hand uses them directly;
//   - the seams: [Syncer] and [SyncerFunc] (how blocks are fetched),
//     [Applier] (where they go), [Positions] (where walks are kept),
//     [AnnounceSource], [Policy] and [Hooks];
//   - what it reports: [Status], [WalkState], [UnverifiedStats], [Ad],
//     [AdError] and the sentinels of errors.go.
//
// The wire formats, codecs and transports it builds on already live in
// subpackages (schema, metadata, ipnisync, announce, netpolicy, admin,
// chaingen). The walker is not split off: it shares the Ingester's state
// keys, hooks and limits, which a subpackage would have to export.
package ingest
