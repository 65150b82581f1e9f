// Package freeze stops an indexer node from filling its disk: a [Monitor]
// of the disk usage of the directories the node writes, and a [Freezer]
// that holds the node's persisted frozen state and freezes it when usage
// reaches the limit (the "Indexer Frozen Mode" of the IPNI scaling design);
// and [SplitBudget], how a node given a disk budget instead of a disk
// divides it among the stores the [Monitor] watches.
//
// The package is a leaf: it imports nothing of indexkit and knows nothing
// of providers or publishers. It reports through callbacks, which the
// indexer binary connects to ingest and the store.
//
// # Model
//
// A [Monitor] checks the usage of each monitored directory's filesystem
// (directories on one device, by st_dev, are read once) and reports the
// highest, in percent. The [DiskReader] is injectable; the default
// [StatfsReader] counts like df. The time to the next check shrinks as
// usage nears the limit:
//
//	next = max × (freezeAt − usage)/100, at least min   (defaults 1h, 30s)
//
// and is the retry interval (30s) after a failed check. Each check logs:
// ERROR "disk usage critical" within 2 points of the limit (and at or
// above it), WARN "disk usage alert" within 10, otherwise INFO "disk usage
// ok" on a change of level and at most once an hour. [Monitor.Usage] is
// the last figure, −1 before the first check or after a failed one, as the
// reference's /status reports it.
//
// A [Freezer] is in one of four states ([State]), persisted through a small
// [Store] ([FileStore], or a key of the node's datastore):
//
//	Unfrozen ──freeze──▶ Freezing ──OnFreeze ok──▶ Frozen
//	   ▲                                            │ Open with
//	   └──OnUnfreeze ok── Unfreezing ◀──────────────┘ WithUnfreezeOnStart
//
// [Freezer.Frozen] is true in every state but Unfrozen: the node then
// stores no new multihashes and accepts no new publisher assignments, but
// still serves queries, walks chains, and applies removals, metadata and
// provider updates (the binary's job). The node freezes when a check
// finds usage at or above the limit ([Freezer.Run], [Freezer.Check]), or
// on [Freezer.Freeze] (the admin API's PUT /freeze; already frozen gives
// false and no error, so the handler answers 200; disabled gives
// [ErrDisabled], answered 400 "freezing disabled").
//
// # Crash ordering
//
// A freeze persists the intent (Freezing, with the time) first, then runs
// the OnFreeze snapshot (each provider's FrozenAt and FrozenAtTime), then
// persists Frozen. Each other order loses something in a crash: a snapshot
// before any record leaves FrozenAt on providers of a node that restarts
// unfrozen; Frozen before the snapshot leaves a frozen node without
// FrozenAt, whose publishers a handoff would re-ingest from the start.
// With the intent first, a node that finds Freezing at [Open] runs OnFreeze
// again with the original time, so OnFreeze must be idempotent (a provider
// that has a FrozenAt keeps it). A failing snapshot leaves the node
// Freezing (frozen, ingestion stopped, still serving); Run retries it
// every retry interval.
//
// An unfreeze on start persists Unfreezing, runs OnUnfreeze (reset each
// publisher's walker to FrozenAt, so the ads walked while frozen are
// ingested again with their entries; clear FrozenAt), then persists
// Unfrozen. A node that finds Unfreezing at Open completes the unfreeze,
// with or without the option: it was decided. A node still Freezing is
// not unfrozen before its snapshot completes, or providers without
// FrozenAt would keep ads indexed metadata-only.
//
// [FileStore] writes a temporary file, syncs it, renames it over the state
// file and syncs the directory, so the state file is never torn.
//
// # Lifecycle and concurrency
//
// The node makes a Monitor ([NewMonitor], which reads nothing), then opens
// the Freezer ([Open]) after the stores its callbacks use and before
// ingestion starts: Open loads the state, completes an interrupted
// transition and unfreezes on start when configured. Then [Freezer.Run]
// runs under the node's errgroup until its context ends; it starts no
// other goroutine and returns nil. [Monitor.Run] measures and logs without
// freezing, for a node without a Freezer; one Run per Monitor at a time
// ([ErrRunTwice]). Every method of both types is safe for concurrent use;
// callbacks run one transition at a time and must not call Freeze or
// Check.
//
// Time is the standard library's; the package's tests drive the schedule
// with testing/synctest, and [Freezer.Check] lets callers check on demand.
//
// # Errors
//
// [ErrDisabled], [ErrRunTwice], [ErrInvalidOption] (constructors),
// [ErrInvalidState] (a persisted state that does not decode) and
// [ErrDiskUsage] (wrapped by failed checks) are the sentinels; callback
// and [Store] errors are wrapped with %w.
//
// # Differences from the reference (storetheindex)
//
//   - The default limit is the design's 90%, not 95% (its config) or 99%
//     (its package fallback). 0 means the default; negative disables.
//   - Critical usage logs at ERROR, not WARN, so alerting can key on it.
//   - Unfreeze on start works with freezing disabled (reference #2671),
//     and is never attempted while usage is unknown.
//   - The freeze is a persisted two-step transition, so a crash during the
//     snapshot cannot leave a half-frozen node.
//   - Once frozen (and with freezing disabled), checks go on every 5
//     minutes, for the usage figure, with one log an hour.
//   - The check schedule's bounds are options.
//
// # Why the surface is this large
//
// freeze exports a little over 60 names, counting methods: the [Monitor]
// and the [Freezer], each with its option type and the Default constants
// the options document, the disk readers ([DiskReader], [DeviceReader],
// [StatfsReader], [Budget]), the persisted state ([Store], [FileStore],
// [State], [Status]) and the sentinels.
package freeze
