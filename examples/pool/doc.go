// Command pool runs a whole local IPNI pool in one command and shows it
// working: `make demo` runs it with no flags and no external service.
//
// It starts (package examples/localpool) 4 generated publishers that
// publish an ad of 100 multihashes a second each over ipnisync HTTP and
// announce it to an assigner; the assigner, which spreads the publishers
// over 3 indexer nodes on Pebble in a temporary directory; a scatter front
// end over the indexers' find APIs; and a piece sampler tracking the
// providers the front end lists. Everything listens on 127.0.0.1. indexer-0
// has a small disk budget (--freeze-budget): after about 40 s it freezes,
// and the assigner hands its publishers off to the active indexers, which
// resume right after its last ad.
//
// The publishers' ads name Filecoin pieces, most in graphsync metadata
// and every third new context in its ContextID (the dag-cbor [size,
// pieceCID] Curio writes), and the piece sampler walks their chains.
//
// It says first how long it runs (until Ctrl-C, or --duration), then prints
// the front end's page (the URL to open in a browser, with
// a lookup of a CID, and which publisher holds it: a multihash that no ad
// of that publisher up to the end of the run removes or updates
// (publishernode.Spec.Lasting; without --duration, for a day of ads), so
// that the lookup stays valid; the page shows its providers and the pool
// live, see package scatter/web), then the URLs to curl (the
// Delegated Routing V1 providers of that CID, the page's
// /status.json, the find API, the assigner's state API,
// each indexer's admin API with the pool's bearer token, read from
// <dir>/admin-token, the piece API, and a ready GET
// /sample/{provider}/{piece}?seed=demo for a real piece of publisher-0,
// one named in a ContextID), then every --refresh a plain
// view of the pool: per indexer its state (active, FROZEN, down),
// multihashes indexed, disk usage out of its budget and publishers (with
// the frozen indexer a handed-off one came from); per publisher its ads,
// head, lag (ads its owner has not walked yet) and owner; a line per
// handoff as it is seen; and every third view query probes through the
// front end, each saying how many of the expected providers it answered
// and which indexers (frozen or active) hold the multihash, and the piece
// sampler's answer for that piece: how many payloads, whether its
// signature verifies (piece.VerifySample) and whether every sample is a
// payload of the piece in the publisher's ground truth (GET
// /truth?pieces=1). The probes and the sample have their own deadline
// (--probe-timeout), not the refresh interval: they read the publishers'
// whole truth, which grows with the run.
//
// # Sharded
//
// With --sharded the indexers are ingest nodes that write through durable
// outboxes to query nodes (query-0, query-1, ...), each holding its
// ranges of the keyspace with --shard-replication owners per key, and the
// front end asks each key's owners. The banner says so and lists the
// query nodes' find URLs; the probes ask each key's owning query nodes
// and name them (an ingest node holds no index). The view adds the query
// layer: the
// layout's epoch and phase, each query node's share of the keyspace (on
// the ring in force and, during a change, the next one), its state (ready,
// catching up, down), its multihashes and its last copy or drop, and each
// ingest node's outbox backlog. After --join-after a fifth node joins live:
// RING lines show each step (copy, reads moving, the old owners dropping).
//
// # End check
//
// On Ctrl-C (SIGINT or SIGTERM) or after --duration it samples the piece
// again, halts the publishers so that their truth holds still, and waits
// until the front end answers every multihash of that truth in full
// (localpool's Pool.WaitComplete): up to a bound that scales with the
// work, 1 ms a multihash of the truth plus 100 ms an advertisement its
// owners have not walked yet, kept between --check-min and --check-max
// (--check-timeout sets it outright). It prints the bound and how it was
// set, the number of multihashes and ads it waited for, and either
// "complete after <time>" or "INCOMPLETE after <time>", then, when
// incomplete, a "why:" line per cause. Lookups that got no answer in time
// (10 s a try, retried until the bound) are counted apart from wrong
// answers ("timed out"): when they are the only problem the cause named
// is a slow front end, most likely an overloaded machine, not the pool.
// When some answers were wrong, the causes are those a last snapshot
// shows (indexers down or frozen, publishers held by no active indexer or
// behind by so many ads, handoffs not done). A few failing multihashes
// follow, with their answers. Then it stops every role. A second
// Ctrl-C cuts the wait short (the pool counts as incomplete); a third
// kills the process.
//
// # Exit status
//
//	0  the pool answered every multihash of the truth in full (also -h)
//	1  an error: a bad flag, a pool that did not start
//	3  the end check found the pool incomplete (see above; stderr says
//	   "pool: the pool did not answer every multihash of its truth in full")
//
// `make demo` builds this command into a temporary directory and runs it
// as a job of its own (`set -m`: the terminal's foreground process group),
// so that Ctrl-C reaches it alone and its exit status is make's (`go run`
// exits 1 when interrupted, whatever the program returns; make dies of a
// SIGINT it gets itself, status 130). A reader of its output that goes
// away (`pool | tee log`, tee killed by Ctrl-C) does not kill it: it
// ignores SIGPIPE, keeps running, and still checks the pool and removes
// its temporary directory at the end.
//
// # Flags
//
//	--duration       0           run this long, then summarize and stop (0: until Ctrl-C)
//	--refresh        2s          time between two views
//	--publishers     4           honest generated publishers
//	--indexers       3           indexer nodes
//	--replication    1           indexers per publisher
//	--store          pebble      index backend: pebble, leveldb or memory
//	--dir            ""          data directory, kept at exit (default: a temporary one, removed)
//	--processes      false       one OS process per role (this binary re-executed) instead of goroutines
//	--interval       1s          time between two ads of each publisher
//	--entries        100         multihashes per ad
//	--freeze-budget  524288      disk budget of indexer-0 in bytes, frozen at 90% (0: none)
//	--malicious      ""          faults of extra malicious publishers: bad-signature,corrupt,huge
//	--log-level      warn        level of the roles' log lines on stderr
//	--probe-timeout  10s         deadline of the live probes and piece sample of every third view
//	--check-timeout  0           bound of the end check's wait (0: scaled with the work)
//	--check-min      30s         least bound of the end check when scaled
//	--check-max      10m         greatest bound of the end check when scaled
//	--sharded        false       the keyspace-sharded layers: indexers ingest into query nodes (below)
//	--query-nodes    4           query nodes at start (with --sharded)
//	--shard-replication 2        owners of each multihash among the query nodes
//	--join-after     20s         add a query node this long into the run (0: never)
//
// The view goes to standard output, the roles' logs (prefixed role=<name>)
// to standard error.
//
// Since every role listens on 127.0.0.1, the pool starts the roles that
// dial addresses others name (the indexers, the assigner, the piece
// sampler) with their -allow-private-addrs flag, which each logs as a
// WARN at start: by default they refuse loopback and private addresses.
// A deployment whose publishers are on public addresses leaves it off.
package main
