// Command indexer runs a full IPNI indexer node: it ingests publishers'
// advertisement chains into a local index, answers the IPNI find API,
// takes announces over HTTP and gossip, and serves the admin API an
// assigner uses to assign publishers, freeze the node and hand its
// publishers off. It is thin wiring of indexkit's packages: store (pebble,
// leveldb or memory), ingest and ingest/ipnisync, ingest/announce,
// scatter (the find API over the local store), freeze, handoff and
// ingest/admin.
//
// # Usage
//
//	indexer [-config FILE] [flags]
//
// Flags override the JSON config file, whose keys are the fields of
// the program's configuration in examples/internal/cmd/indexercmd (Dir, Store, Find, Ingest,
// Admin, AdminToken, AdminTokenFile, AdminHosts, HandoffFrom, HandoffFromFile, P2P, Topic,
// FreezeAt, DiskBudget, IndexNoWAL, IndexFullKeys, UnfreezeOnStart, Metrics, UseAssigner, AllowPrivateAddrs,
// LogLevel, Progress, ShutdownTimeout, MaxConns, MaxConnsPerIP, AnnounceRate,
// AnnounceRateExempt, GossipPeerRate; durations as "30s");
// unknown keys are an error.
//
//	flag                default                   meaning
//	-config             ""                        JSON config file
//	-dir                ./indexer-data            data directory
//	-store              pebble                    index backend: pebble, leveldb or memory
//	-find               127.0.0.1:3000            find API listener
//	-ingest             127.0.0.1:3001            ingest API listener (announces)
//	-admin              127.0.0.1:3002            admin API listener
//	-admin-token        ""                        bearer token the admin API requires (shows in ps)
//	-admin-token-file   ""                        file whose first line is that token
//	-admin-hosts        ""                        comma-separated Host names the admin API answers without a token, besides loopback ones
//	-handoff-from       ""                        comma-separated find URLs a handoff may name ("": any)
//	-handoff-from-file  ""                        file of such URLs, one per line, read at every handoff
//	-p2p                /ip4/127.0.0.1/tcp/3003   libp2p listener; "" or "none": no libp2p, no gossip
//	-topic              /indexer/ingest/mainnet   gossip topic of announces
//	-freeze-at          90                        disk usage (%) that freezes the node; negative disables
//	-disk-budget        0                         bytes the node may use: usage = size of -dir / this (0: the filesystem's)
//	-index-no-wal       false                     write a pebble index without Pebble's write-ahead log (below)
//	-sampling           false                     keep each context's multihash set, so the sampling API answers as its spec says (about 2x index disk; off: 501)
//	-index-full-keys    false                     key a new pebble index on whole multihashes (below)
//	-index-cache-size   33554432                  bytes of the pebble index's block cache, 32 MiB (0: pebble's 256 MiB)
//	-index-lookup-cache 0                         bytes of lookups an index keeps read, exact (0: 8 MiB; negative: none)
//	-answer-cache       0                         bytes of find answers kept ready, each while what it shows is unchanged (0: 8 MiB; negative: none)
//	-index-memtable-size 33554432                 bytes of each pebble memtable, 32 MiB; about two are held while ingesting (0: 64 MiB)
//	-index-run-size     33554432                  bytes of multihashes gathered and written as one sorted table, 32 MiB (below; 0: off)
//	-queries-first      true                      while finds come, ingest yields to them (ingest/pace); GOMAXPROCS four per core unless set
//	-unfreeze-on-start  false                     unfreeze at start if usage is below -freeze-at
//	-layout             ""                        layout file, or etcd://HOST:PORT[,...]/PREFIX, of a keyspace-sharded query layer: be an ingest node (below)
//	-shard-name         ""                        the node's name among the layout's writers (with -layout)
//	-shard-token-file   ""                        file whose first line is the query nodes' token (else $INDEXKIT_SHARD_TOKEN)
//	-shard-batch-bytes  0                         bytes of the batches sent to each query node (0: 1 MiB)
//	-shard-presence-ttl 0                         with an etcd -layout, the lease TTL of the node's status key (0: 5s)
//	-metrics            127.0.0.1:3004            Prometheus GET /metrics; "" disables
//	-pprof              ""                        loopback address of Go's /debug/pprof/ profiles, answering no web page or rebound name; "": none
//	-use-assigner       false                     ingest only publishers assigned through the admin API
//	-allow-private-addrs false                    dial publishers and frozen indexers on private addresses (below)
//	-log-level          info                      debug, info, warn or error
//	-progress           30s                       interval of the per-publisher progress lines
//	-poll               1h                        ask every followed publisher for its head this often (0: only at start)
//	-shutdown-timeout   10s                       wait for requests in flight on SIGTERM
//	-max-conns          1024                      open connections per listener; a new one evicts the longest exchange (0: no cap)
//	-max-conns-per-ip   64                        open connections per listener from one IP (IPv6 /64); more are closed (0: no cap)
//	-announce-rate      10                        HTTP announces a second per publisher once verified (20 at once), per source IP before (100 at once); more get 429 (0: no limit)
//	-announce-rate-exempt ""                      CIDRs -announce-rate does not limit (add the assigner's address)
//	-gossip-peer-rate   100                       gossip announces a second per propagating peer, 200 at once (0: no limit)
//
// The HTTP servers cut a request whose header takes over 10s or whose body
// takes over 30s, and an answer that takes over 60s to write (an NDJSON
// find stream gets a minute per line), so that slow clients cannot hold
// connections; with the connection caps, a flood of them cannot exhaust
// the node's file descriptors. Behind a reverse proxy, or in front of a
// scatter front end, one address carries many clients: raise
// -max-conns-per-ip for it (scatter's client keeps to 32 connections per
// backend). In assigner mode add the assigner's address to
// -announce-rate-exempt: it forwards every publisher's announces.
//
// The node dials addresses that others name: publishers' addresses come
// in announces and provider records, a handoff's FrozenURL in an admin
// request. By default it connects only to public addresses (checked after
// name resolution, so a name that resolves to 127.0.0.1 is refused too),
// follows no redirect, and its errors quote no publisher's answer. A pool
// on a private network or on one machine needs -allow-private-addrs,
// which lets it dial loopback, private (RFC 1918, fc00::/7), link-local
// and CGNAT addresses, and logs a WARN at start saying so; cloud metadata
// addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200) stay
// refused. See ingest/netpolicy.
//
// Every listener is on loopback by default, unlike the reference
// (storetheindex listens on 0.0.0.0 for find and ingest). To expose the
// node, give the public address explicitly, e.g. -find 0.0.0.0:3000
// -ingest 0.0.0.0:3001 -p2p /ip4/0.0.0.0/tcp/3003. Keep -admin private (it
// can freeze the node, assign publishers and hand them off). If it listens
// on anything but loopback (0.0.0.0, ::, another address, a host name other
// than localhost), the node refuses to start without a bearer token, which
// it then requires on every admin request (401 otherwise, compared in
// constant time). The token comes from -admin-token, or the first line of
// -admin-token-file (a file readable by group or others is used with a
// WARN), or, without either flag, $INDEXKIT_ADMIN_TOKEN; giving both flags
// is an error. Prefer the file or the environment: a flag shows in ps.
// Give the assigner the same token (its -admin-token-file or the same
// variable). Without a token, loopback keeps other machines out but not
// the web pages of a browser on this one, so the admin API then answers
// only requests whose Host is 127.0.0.0/8, [::1], localhost or a name of
// -admin-hosts (a DNS-rebound page sends its own name: 421 Misdirected
// Request) and that carry no Origin header and no Sec-Fetch-Site other
// than "none" (a page at any origin: 403); see ingest/admin. An
// assigner or a proxy that reaches the node under a name of its own needs
// that name in -admin-hosts, or a token. A port of 0 picks a free port; the node logs every bound
// address at start as
//
//	level=INFO msg=listening name=find addr=127.0.0.1:3000
//
// (names find, ingest, admin, metrics, p2p), then msg=starting with its
// peer ID.
//
// # Listeners
//
// find: the IPNI find API (GET /multihash/{mh}, GET /cid/{cid}, JSON or
// NDJSON, GET /providers, GET /providers/{id} with FrozenAt and
// FrozenAtTime), as find.NewHandler serves it over the local store.
//
// ingest: PUT /announce and PUT /ingest/announce (CBOR by default, JSON
// when Content-Type is application/json; 204), and GET /health. In
// assigner mode an announce from a publisher not assigned here gets 403.
//
// admin: the assigner's API (ingest/admin): POST /ingest/assign/{id},
// PUT /ingest/unassign/{id}, GET /ingest/assigned, GET /ingest/preferred,
// POST /ingest/handoff/{id}, GET /status, PUT /freeze, POST
// /ingest/sync/{id} (queues a walk to the publisher's head; depth and
// resync are ignored), GET /ingest/status?limit=&after= (per-publisher
// progress, sorted by publisher, 100 per page by default and at most 1000,
// with a Link rel="next" header when more follow).
// Assignment routes answer 503 "not configured to work with assigner
// service" without -use-assigner, as the reference does; a frozen node
// refuses assignments and handoffs (500, code "frozen").
//
// metrics: Prometheus metrics, prefix indexkit_indexer_: ads walked and
// applied, multihashes indexed, walks done and failed, apply durations
// (ingest hooks); disk usage and the frozen state (freeze hooks); find
// requests by status and their durations; announces accepted, duplicate,
// denied, malformed and dropped; the compaction debt of a Pebble index
// (pebble_compaction_debt_bytes) and the bytes written into it and
// rewritten by its compactions (pebble_bytes_in_total,
// pebble_bytes_compacted_total: their ratio is its write amplification)
// and its compactions running (pebble_compactions_running);
// with -queries-first, whether ingest is paced for lookups now
// (pace_queried), the turns that waited for them and the threads lowered
// (pace_turn_waits_total, pace_turn_wait_seconds_total,
// pace_lowered_total); Go and process metrics.
//
// p2p: a libp2p host with the node's identity (no bootstrap peers, mDNS,
// NAT port mapping or relay), on which the node joins the gossip topic
// (announces from it are ingested; HTTP announces are republished on it
// with OrigPeer) and reaches publishers that have no HTTP address.
//
// # Ingestion, freezing and handoff
//
// Announces go to the ingester, which walks each publisher's chain from
// the announced head back to the last one processed and applies the ads
// oldest first. Publishers with an HTTP multiaddr are fetched over HTTP,
// others over libp2p. Every -progress, one line per publisher whose
// figures changed: msg=progress publisher=… ads_walked=… ads_applied=…
// multihashes_indexed=… pending=….
//
// At start the node asks every publisher it follows (in assigner mode its
// assignments, otherwise the publishers of its provider records) for its
// head, at the addresses it last used, and walks what was published while
// it was down: announces sent meanwhile are lost, and a publisher that has
// gone quiet would otherwise not be walked to its head until it announces
// again. It asks again every -poll (1h by default; 0: only at start), so an
// announce lost while it runs delays an ad by at most that.
//
// The node freezes when a monitored directory (the data directory and
// the index and datastore under it) reaches -freeze-at, or on PUT /freeze.
// With -disk-budget the usage is instead the size of the files under -dir
// out of that many bytes, checked every 1 to 5 s: a small budget makes a
// node freeze after a known amount of ingestion (examples/pool does that).
// Freezing snapshots every provider record's LastAdvertisement as
// FrozenAt, with the time as FrozenAtTime (a record that has a FrozenAt
// keeps it); then the node persists that it is frozen. A frozen node still
// serves finds, walks chains and applies removals, metadata updates and
// provider addresses, but fetches and stores no entries (ingest.WithFrozen),
// and refuses new publishers. It stays frozen across restarts. With
// -unfreeze-on-start and usage below the limit, it unfreezes at start:
// each publisher's walker is reset to its FrozenAt (ingest.Walker.Reset)
// and the ads walked while frozen are ingested again, with entries.
//
// A handoff (POST /ingest/handoff/{id} with {"FrozenID","FrozenURL"})
// reads the frozen node's GET {FrozenURL}/providers, checks each FrozenAt
// against the publisher (it must be an advertisement the publisher serves,
// signed by it or its provider, of a provider the frozen node lists: 422
// "bad-frozen-at" otherwise, and nothing changes), registers the
// publisher's providers, resumes the walk right after their FrozenAt and
// records the assignment with Continued = FrozenID (package handoff). The
// publisher must be reachable for that check. With -handoff-from (or
// -handoff-from-file, re-read at each handoff so that an indexer joining
// the pool is added without a restart) only those find URLs may be named
// as FrozenURL (403 "unknown-indexer" otherwise, before anything is
// fetched); without either, any is accepted and the node says so at start
// with a WARN in assigner mode.
//
// # Ingest node of a sharded layer
//
// With -layout the node is an ingest node of the keyspace-sharded layer
// (package scatter/keyspace): it does everything above with publishers, but
// indexes into the query nodes the layout names (examples/query) instead
// of its own index. Each multihash goes to its owners on the ring, and
// provider records and context-wide operations to every query node,
// through a durable outbox per query node under -dir/outbox; the walker's
// checkpoints wait for the outbox to hold and sync every write, and a
// killed node resumes the outbox and its walks where they were. Its own
// store keeps the provider records; its find API has no index to answer
// from (ask a front end, examples/scatter -layout). GET /shard/v1/status
// on the find listener reports its epoch and outboxes, and SIGHUP re-reads
// the layout file. With -layout etcd://HOST:PORT[,HOST:PORT...]/PREFIX
// the layout is the etcd one of package scatter/keyspace/etcdlayout: the
// node follows it by a watch and keeps that status under
// PREFIX/live/ingest/<-shard-name>, bound to a lease of
// -shard-presence-ttl, for as long as it runs.
//
// # Data directory
//
//	identity.key   libp2p private key (Ed25519, protobuf), created on first start, mode 0600
//	index/         the index: pebble or leveldb files (absent with -store memory)
//	state/         go-ds-pebble: walker state (/walk/…), assignments (/handoff/assigned/…)
//	freeze.json    the freeze state (freeze.FileStore), written on the first freeze
//
// With -index-no-wal a pebble index is written without Pebble's
// write-ahead log: index writes reach the disk as tables at each ingest
// checkpoint (every 64 ads or 1s of applying, and at the end of a walk;
// the store is flushed before the walk position is recorded) and when a
// memtable fills. A node killed with SIGKILL, or a machine that crashes,
// loses the index writes since the last checkpoint, and applies those
// advertisements again from the publishers' chains when it restarts, as
// it does after any crash. The writes no chain replays (the freeze
// snapshot, an unfreeze, the provider records of a handoff) are flushed
// at once. This writes each multihash once instead of twice and keeps no
// log files (Pebble preallocates some 70 MiB per log), which pays for a
// bulk ingest of long chains; a node that mostly walks one advertisement
// per announce writes a small table per walk instead, and compacting
// those costs far more CPU than syncing a log.
//
// With -index-run-size (on by default, 32 MiB) a pebble index gathers
// the multihashes it indexes in memory and hands them to Pebble as one
// sorted table, which Pebble ingests, instead of inserting each into the
// memtable and its log: inserting random keys into a memtable is most of
// the CPU an index write costs, and a bulk ingest takes about half the
// CPU per multihash with runs (see the Tuning section of store/pebble).
// Finds see each write at once. The durability is that of
// -index-no-wal for the index alone: a node killed loses the index writes
// since its last ingest checkpoint and applies those advertisements again
// when it restarts; records and provider information still go through
// the log. A checkpoint with little gathered (a walk of a few small
// advertisements) commits it through the memtable instead, so a node
// that walks one advertisement per announce writes no small tables.
//
// A new pebble index keys a multihash of a cryptographic hash with a
// digest over 20 bytes (sha2-256 and the like) on its code and the first
// 20 bytes of its digest, 12 bytes less per sha2-256 multihash, unless
// -index-full-keys; find answers are the same, and collisions are
// astronomically unlikely (store.AppendIndexKey argues it). An index
// keeps the layout it was created with.
//
// A data directory of an earlier version, with its state in go-ds-leveldb
// under datastore/, is moved to state/ at start (logged), once; a node
// killed during the move copies again at its next start.
//
// With -store memory the index does not survive a stop while state/
// does: at start the node drops the walker state but the publishers'
// addresses (a WARN line says for how many publishers) and keeps the
// assignments, so it walks its publishers again from the start of their
// chains instead of taking them for up to date.
//
// # Shutdown
//
// SIGINT or SIGTERM stops the listeners (requests in flight get
// -shutdown-timeout, then their connections are closed), stops gossip and the freeze monitor, cancels
// ingestion (each walk persists where it is, and resumes on the next
// start without a new announce), then closes the index and the datastore.
// The exit status is 0 after a shutdown, 1 after an error, with the error
// on stderr as "indexer: <error>": at start, a -dir another node holds
// (its stores are locked), an identity.key that does not decode, or a
// listener port already in use.
//
// # In process
//
// The program itself is Main in examples/internal/cmd/indexercmd, over
// the node of examples/indexernode; this command only calls it under a
// context that SIGINT and SIGTERM cancel, so a pool can run the same
// program in process (examples/localpool).
package main
