// Command fleet runs an in-memory serving fleet on package lease: nodes
// that win git repositories at auction from a catalog in Redis or etcd
// (-store), shallow-clone each at the catalog's commit, index it in
// memory for substring search, serve the queries for what they own and route the others to the
// owner. It is the prototype step of the in-memory fleet design: a demo,
// and a simulation that measures coverage, claim latency and reindexing.
//
// The node is package examples/fleetnode, a library: `fleet node` maps its
// flags onto fleetnode.Config, picks the Backend (fleetnode/redis or
// fleetnode/etcd) and adds what only a program has: Prometheus metrics at
// GET /metrics (fed by fleetnode.Hooks), the -trace-file exporter, and
// signals. The index and its snapshot format are examples/fleetnode/codeindex;
// the generated repositories of demo and sim, examples/fleetnode/repogen.
//
// # Usage
//
//	fleet node [flags]   one fleet node
//	fleet demo [flags]   3 nodes, 50 generated repos: ownership as it settles, routed queries
//	fleet sim  [flags]   4 nodes, 500 generated repos, one SIGKILLed (twice: cloning, then with snapshots): the figures
//	fleet set  -max-bids N | -rehydrate on|off -redis ADDR -prefix P   change a running fleet's settings
//
// Each runs on Redis (-store redis, the default: lease/redis) or on etcd
// (-store etcd: lease/etcd); see "Stores" below.
//
// For example, from the module root:
//
//	go run ./examples/fleet demo
//	go run ./examples/fleet sim
//	go run ./examples/fleet sim -nodes 6 -max-bids 0 -ttl 2s
//	go run ./examples/fleet demo -replicas 2
//	go run ./examples/fleet sim -store etcd
//	go run ./examples/fleet sim -store etcd -etcd-members 3
//	go run ./examples/fleet sim -autoscale both -nodes 8 -autoscale-start 2
//
// demo and sim need git and, unless -redis ADDR is given, redis-server on
// the PATH: they start their own on a free 127.0.0.1 port and stop it by
// PID at the end. With -store etcd and no -etcd they start their own etcd
// the same way (etcd on the PATH, else Debian etcd-server's /usr/bin/etcd):
// -etcd-members (default 1) members on free 127.0.0.1 ports, data
// directories in their temporary directory, a 50 ms heartbeat and a
// 500 ms election timeout (so the server's smallest lease TTL is 1 s),
// stopped by PID at the end. With -redis or -etcd they use a random key
// prefix under -prefix and delete its keys at the end. They generate the
// repos (bare repositories made with git fast-import, one commit of text files of
// log-uniform sizes between -min-size and -max-size, and a binary file in
// every fifth) in a temporary directory they remove, and run the nodes as
// child processes of the same binary, stopped by PID (SIGTERM, then
// SIGKILL if a node does not exit). -duration bounds the whole run.
//
// # The node
//
// A node (fleet node -name N -redis ADDR -prefix P -listen 127.0.0.1:0
// -budget 256MiB) runs an agent.Manager (lease/agent) over lease/redis,
// or with -store etcd -etcd ENDPOINTS over lease/etcd. The Manager
// heartbeats, bids its free memory (budget minus used) on claimable items,
// holds and renews the leases it wins, evicts over budget and, on SIGINT
// or SIGTERM, drains: marks its items draining, lets indexing finish (at
// most -drain-timeout) and releases them, so other nodes can win them at
// once. The node's agent.Indexer fetches the row's commit with git fetch
// --depth 1 over the clone URL the catalog keeps, checks that the checked-
// out commit is Row.Commit, indexes the tree and deletes the clone; its
// size (the Index's accounted bytes) is what the Manager charges to the
// budget and reports to the catalog.
//
// # Private repositories
//
// A node fetches with git's own configuration (the user's and the
// system's), so the credential helpers, proxies and URL rewrites
// configured there apply; git never asks on a terminal
// (GIT_TERMINAL_PROMPT=0), so a fetch without credentials fails at once
// with git's message. -git-credential-helper HELPER (repeatable) adds a
// helper for the node's fetches only, in git's own syntax, for example
//
//	fleet node -git-credential-helper 'store --file=/run/secrets/git-credentials' …
//
// where the file holds lines such as https://USER:TOKEN@git.example.com.
// Keep credentials out of clone URLs: the node hides the user and
// password of any URL in its error messages, but the catalog's side table
// keeps URLs as they were given.
//
// # Snapshots and rehydration
//
// A node started with -snapshot-dir DIR writes each index it builds from
// git to DIR as a snapshot of the repo at its commit (one file per repo,
// the repo's snapshot of an older commit removed), and, with -rehydrate
// (the default), a node that wins a repo at a commit DIR has a snapshot
// of loads it instead of cloning and indexing: in milliseconds, with no
// git process. The nodes of a fleet share DIR (demo and sim give theirs
// one under their work directory; machines can share a network file
// system), so that the node that takes over a killed or drained node's
// repos loads what that node built. Replica slots load their repo's
// snapshot.
//
// A snapshot is versioned and checksummed: a CRC-64 of the whole file,
// and, once decoded, every line and posting reference bounds-checked, the
// accounted size recounted and the index checked against the checksum
// taken when it was first built (the on-load check). A snapshot that
// fails any of these, or was written by another version, is never
// served: it is removed, logged (msg="snapshot corrupt"), counted
// (snapshots_corrupt), and the repo is cloned and indexed, which writes a
// good one in its place. Files are written under a temporary name and
// renamed, so that a reader sees a whole snapshot or none; a node killed
// while writing leaves a temporary file, not a torn snapshot. The line
// msg=indexed says from=git or from=snapshot; /status and /metrics count
// snapshots_loaded and snapshot_errors (a write or read that failed).
//
// The fleet's rehydrate setting (fleet set -rehydrate on|off) turns the
// loading on or off at every node at its next heartbeat, as max-bids;
// snapshots are written either way. GET /status says "rehydrate".
//
// # Handoff on SIGTERM
//
// Without a shared directory, a drain still costs no clone: on SIGTERM a
// node first offers each ready index it holds (an entry item → "commit
// node" in the handoffs side table), then drains, and keeps serving the
// offered indexes at GET /snapshot?item=ID&commit=SHA, in the snapshot
// format. A node that wins an offered repo at that commit (with
// -rehydrate) fetches it from there before it looks in a snapshot
// directory, checks it as it checks a snapshot file (and that it is of
// the offered commit), deletes the entry, and indexes from git only if
// anything fails. The stopping node waits until every entry was fetched,
// for at most -handoff-wait (10s; 0 offers nothing) and at most two
// auction windows and a TTL without a fetch (when the whole fleet
// stops, nobody fetches), then deletes what is left, logs msg="handoff:
// done" offered=N fetched=M left=K, and stops. msg=indexed says
// from=handoff; /status and /metrics count handoffs_loaded.
//
// When the catalog row of a repo a node holds names a new commit (a Put
// by the catalog's administrator), the node's next scan sees it and
// indexes the new commit under the same lease; until the new index is
// built the old one answers (the answer's "commit" says which), then the
// new one replaces it and the row is marked Ready again. A node that loses
// a lease keeps the repo's index for one TTL, counted in its used memory
// and dropped first when it needs room: if it wins the repo back at the
// same commit, it serves that index at once (msg=reused) without a clone.
// Repos whose catalog size or minimum bid exceeds a node's budget are
// never bid on: the node logs msg=starved once per repo, lists them in
// GET /status ("starved") and counts them in GET /metrics
// (indexkit_fleet_items_starved); sim prints those every node reports.
//
// # Settings at runtime
//
// Every node reads the fleet's settings table (the Redis hash
// P+"fleet:settings", or the etcd keys P+"fleet/settings/…") at each
// heartbeat. Its entry max-bids, when present, replaces the node's -max-bids as the
// static short-circuit threshold (lease.MaxBidsSetter on the node's
// store): the next bid or evaluation uses it, and an open auction that
// already has that many bids closes at its next evaluation. Set it with
//
//	fleet set -max-bids N -redis ADDR -prefix P   (0: no short circuit)
//	fleet set -rehydrate off -redis ADDR -prefix P (load no snapshots; on: load them)
//	fleet set -unset -redis ADDR -prefix P        (back to each node's flag)
//	fleet set -max-bids N -store etcd -etcd ENDPOINTS -prefix P
//
// A fleet started with -max-bids 0 (dynamic: the live nodes) uses the
// static value only while no node is live.
//
// The index maps each trigram (three bytes) to the lines that contain it;
// a query intersects the posting lists of its trigrams and checks each
// candidate line, and a query shorter than three bytes scans every line.
// Files with a NUL byte in their first 8000 bytes (binary, as git judges)
// and files over 1 MiB are skipped. Matching is by bytes, case-sensitive,
// within a line; a line matches once however many times it contains the
// query.
//
// The node logs its bound address as msg=listening name=http addr=…,
// then msg=starting, and one line per event: msg=won, msg=indexed (item,
// size, commit, files, took), msg=reused, msg=evicted, msg=lost,
// msg=starved, msg="max-bids set", and at debug level msg=bid.
//
// # HTTP API of a node
//
//	GET /search?repo=ID&q=SUBSTRING[&limit=N]
//	    200 {"status":"ok","repo","query","commit","served_by","routed_by","matches":[{"path","line","text"}],"truncated"}
//	    503 {"status":"warming","owner":…}     the owner has not finished its first index of the repo,
//	                                           or is rebuilding one found corrupt (another ready copy answers if there is one)
//	    503 {"status":"unassigned"}            nobody holds the repo
//	    503 {"status":"unreachable","owner":…} the owner did not answer
//	    404 {"status":"unknown"}               not in the catalog
//	    400 {"status":"bad query","error":…}   no repo, empty query, a line break, over 256 bytes, limit not in 1..1000
//	GET /status   {"node","addr","budget","used","items":[{"item","fence","ready","size","files","commit"}],"starved":[{"item","need"}],"rehydrate","counters":{…}}
//	GET /metrics  the counters and gauges in the Prometheus text format
//	GET /snapshot?item=ID&commit=SHA  the node's index of ID at SHA in the snapshot format (404: none here)
//
// Besides the event counters, /metrics has the load an operator or an
// autoscaler acts on (lease/agent's Signals, from the node's last scan):
// indexkit_fleet_unclaimed_items, _saturated_items (unclaimed items that
// fit a node but found no room: no claim for -saturation-rounds scans),
// _stalled_scans, _unclaimed_too_large_items and
// _last_served_timestamp_seconds; and the histograms
// _claim_latency_seconds (how long each win had waited unclaimed),
// _bid_window_seconds (from each bid to its auction's close),
// _index_seconds{from="git"|"snapshot"|"handoff"|"failed"} and _index_bytes. With
// -autoscale the node runs the agent's Scaler and logs each decision
// (msg=scale decision=grow: start a node; decision=shrink: stop this
// one, idle for -idle-after with nothing waiting), counted in
// _autoscale_decisions_total; whatever runs the nodes acts on them.
//
// A node answers a query for a repo it holds and has indexed. Otherwise
// it looks the owner up in the catalog and routes the query to the owner's
// address, which every node publishes in the address table at start (and
// checks at each heartbeat, writing it again if it is missing), and relays
// the answer (routed_by names the node that routed it). A routed query is
// never routed again: a node that receives one for a repo it no longer
// serves answers 503 "moved". Clone URLs live in the repos table (item →
// file:// URL), beside the lease store's keys.
//
// # Stores
//
// The catalog is a lease store; beside it the fleet keeps three side
// tables of strings: addresses (node → HTTP address), repos (item → clone
// URL) and settings (max-bids). With -store redis (the default) the
// catalog is lease/redis under the prefix P and each side table is a hash:
//
//	P{item}:…, P nodes, P items   lease/redis's own keys
//	P fleet:addrs                 node → address
//	P fleet:repos                 item → clone URL
//	P fleet:settings              max-bids → N, rehydrate → on|off
//
// With -store etcd -etcd ENDPOINTS (comma-separated host:port) the catalog
// is lease/etcd under P+"lease/" and each side-table entry is one key:
//
//	P lease/r/<item>, P lease/o/<item>, …   lease/etcd's own keys
//	P fleet/addrs/<node>                    address
//	P fleet/repos/<item>                    clone URL
//	P fleet/settings/max-bids               N
//	P fleet/settings/rehydrate              on|off
//
// The catalog sits under its own P+"lease/" so that lease/etcd's watch of
// its prefix never sees a side table's write. Side-table writes of many
// entries (the clone URLs of a catalog) go in transactions of at most 100
// puts, below etcd's default --max-txn-ops of 128; a listing reads pages
// of 256 keys at the revision of the first page.
//
// lease/etcd keeps the TTL, the auction window and the liveness window as
// etcd lease TTLs, which are whole seconds: with -store etcd, -ttl,
// -window and -liveness must be whole seconds of at least 1 s, and node,
// demo and sim refuse other values with an error naming the flag. The
// demo and sim defaults qualify (demo: ttl 5s, window 1s, liveness 3s;
// sim: ttl 4s, window 1s, liveness 2s). A server raises a lease TTL below
// its minimum (3/2 of its election timeout, rounded up to seconds: 2 s
// with etcd's defaults, 1 s for the etcd demo and sim start) to that
// minimum. -loss-guard is ignored on etcd: etcd loses no acknowledged
// write.
//
// With -replicas N (default 1) each repo is N catalog items, the primary
// and N-1 replica slots (lease.PutReplicated), which the Managers
// (agent.WithReplication) place on N different nodes, each indexing its
// copy proactively. A query is answered by any copy the node holds, else
// routed to the ready copies in slot order, the primary first, falling
// back to the next while an owner does not answer: reads survive the loss
// of the primary's node without waiting for a reindex.
//
// # Flags
//
// Shared by node, demo and sim (all nodes of a fleet must agree on the
// first three and on -replicas):
//
//	-ttl 10s             lease time to live (demo 5s, sim 4s)
//	-window 2s           auction window, the backstop (demo and sim 1s)
//	-max-bids 0          bids that close an auction at once; 0: the live nodes (sim 2)
//	-liveness 5s         heartbeat age that counts a node as live
//	-heartbeat 1s        heartbeat interval
//	-scan 250ms          mean interval between scans for claimable items
//	-index-concurrency 2 concurrent clone+index per node
//	-backoff 100ms       base of the jittered backoff after a lost or rejected bid
//	-backoff-max 2s      its cap
//	-replicas 1          copies of each repo
//	-feed true           learn of catalog changes from the store's change feed
//	                     (lease.Watcher: a Redis stream, an etcd watch) and list
//	                     the whole catalog only to reconcile; false: list it at
//	                     every scan, as before the feed
//	-reconcile 0         interval of those full listings; 0: half the TTL, at most 30s
//	-verify-every 1m     interval of the integrity check: each index against the
//	                     checksum (CRC-64 of its files, line records and posting
//	                     lists) taken when it was built; a corrupted one stops
//	                     answering at once, is logged (msg="index corrupt"),
//	                     counted (index_corrupt) and rebuilt from its repository
//	                     at its commit (0: never)
//
// Shared by node, demo, sim and set: -store (redis), -redis, -etcd
// (comma-separated endpoints; node and set 127.0.0.1:2379, demo and sim ""
// starts one).
//
// node only: -name, -redis (127.0.0.1:6379), -prefix (fleet:), -listen
// (127.0.0.1:0), -budget (256MiB), -work-dir (for clones), -snapshot-dir
// ("": no snapshots), -rehydrate (true), -git-credential-helper (none),
// -drain-timeout (10s), -handoff-wait (10s), -log-level (info), -autoscale (false: run the
// agent's Scaler and log its decisions), -saturation-rounds (0: the
// agent's 20), -idle-after (0: 1m), -scale-cooldown (0: 30s), -trace-file
// ("": none; else the node's OpenTelemetry spans, agent.claim,
// agent.index and agent.serve, appended as JSON, from a tracer provider
// of its own). demo and sim only: -redis ("" starts one),
// -etcd-members (1: members of the etcd they start), -prefix, -nodes (3; sim 4), -repos (50; sim 500), -min-size (2KiB),
// -max-size (64KiB; sim 256KiB), -budget (0: the catalog's estimated
// index size × replicas × 1.5 over nodes-1), -seed, -duration (demo 2m,
// sim 5m), -v (echo the nodes' log lines), -oversize (demo 0, sim 1: extra
// catalog rows larger than every budget, reported starved and left out of
// coverage), -rehydration (demo on; sim both): "on" gives the nodes a
// shared snapshot directory and loads snapshots, "off" gives them none,
// and sim's "both" kills twice (see below). sim only: -steady (10s; 0
// skips it), the window after full coverage over which it measures the
// store's load; -autoscale (off; on, both: see below), -autoscale-start
// (2), -scale-gap (2s), -saturation-rounds (20), -idle-after (5s),
// -scale-cooldown (2s).
//
// # What the sim reports
//
// The sim starts the nodes, puts the catalog (t0), and polls it until
// every row is ready at a live node: the initial time to full coverage.
// It then SIGKILLs the node holding the most and polls until every row
// is ready again at a live node: the time to recover, which is at least
// the TTL, since the dead node's leases must lapse before they are
// auctioned. With -rehydration both (sim's default) the nodes write
// snapshots from the start but load none; after the first recovery the
// sim starts a fresh node under the killed one's name (so the second kill
// has as many survivors), turns rehydrate on through the settings table,
// waits until every node reports it, and kills the node that then holds
// the most: the report gives both recoveries side by side, with the
// rebuilds of each loaded from a snapshot or cloned, and their ratio.
// Unless -rehydration is off, it last sends SIGTERM to the node then
// holding the most and polls until every row is ready again: the drain,
// whose repos the other nodes fetch from the draining node (see Handoff
// on SIGTERM). Claim latency is measured per item from the nodes' log lines
// (as the parent reads them): from the catalog put, or the kill, to the
// msg=indexed of the winner, and from the first msg=bid on the item to
// the same. It counts Index calls against catalog items (items indexed
// more than once), wins, leases lost by survivors, and evictions, then
// stops the survivors with SIGTERM and checks that every row is idle.
//
// Between the first full coverage and the kill, the sim sends nothing to
// the store for -steady and reads the server's own request count before
// and after: Redis's total_commands_processed (INFO stats), or etcd's
// grpc_server_msg_received_total summed over its endpoints and methods
// (each message a client sends, stream messages included). The line
// "steady state: the redis server handled N requests/s over 10s, M per
// node" is the fleet's standing cost: heartbeats, renewals, the feed's
// reads and the reconciling listings (or, with -feed=false, a listing of
// the catalog at every scan).
//
// # The autoscaling sim
//
// With -autoscale on or both the sim runs no kills. It starts
// -autoscale-start nodes with -autoscale, for a catalog whose budget is
// sized for -nodes, and acts on their msg=scale lines as an orchestrator
// would: a grow starts as many nodes as the asking node's signals want
// (nodes_wanted: the unclaimed bytes over a node's budget), up to -nodes
// and at most one batch per -scale-gap; a shrink stops the node that
// asked with SIGTERM, while more than -autoscale-start run. With both it
// first ignores the decisions until no repo has become ready for three
// TTLs, and reports the coverage a fleet that never grows reaches; then
// it acts, and reports the time to full coverage from then. Last it
// starts a spare node, which finds nothing to claim, and waits for the
// spare to ask to be stopped and stop.
package main
