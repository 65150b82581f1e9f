// Package scale is the scale benchmark of an indexer node, the logic of
// examples/scale (`make scale`): ingest of generated, signed chains served
// over real HTTP into a node that runs as its own process, measured from
// /proc, beside a raw Pebble writing the same keys in the same run.
//
// # What runs
//
// [Run] generates one chain per publisher with ingest/chaingen's
// chaingen.OnDemand (seed Config.Seed+i): ordinary ads of MhsPerAd
// multihashes in chunks of ChunkSize ([ShapeAds]), or many small ads of
// MinMhsPerAd to MhsPerAd multihashes, one context each, as Boost and
// Curio publish ([ShapeContexts]). No chain is held in memory: each keeps
// the digests of its blocks (48 bytes per ad and 36 per entry chunk) and
// makes a block again, signature included, when it is asked for: 100M
// multihashes of the default shape take about 4 MB in the benchmark's
// process, the contexts shape 84 bytes per ad (840 MB for 10M contexts). No
// ground truth is built either: the multihashes to find are derived from
// the seed (chaingen.AppendMultihash).
//
// Each chain is served by an ingest/ipnisync publisher on its own
// listener on 127.0.0.1. The node is this program run again
// ([ChildCommand] "node": examples/indexer's indexercmd.Main) on a
// fresh data directory, every listener on an ephemeral port of
// 127.0.0.1, with the benchmark's flags followed by Config.NodeFlags,
// which override them. It learns of the publishers by HTTP announces to
// its ingest API, and the benchmark polls the admin API's GET
// /ingest/status until the last walk of every publisher ended at its
// head, logging progress every Config.Status.
//
// Then the raw baseline, the program again ([ChildCommand] "rawpebble"),
// writes every multihash of the chains as a key, with an 8-byte record ID
// as its value, into a fresh Pebble (the module's version, v2) with
// default options, 65,536 keys per batch committed without sync as the
// node's store commits, and measures itself the same way. It runs after
// the node has stopped, so that the two never share the CPUs.
//
// # The sharded layer
//
// With Config.Sharded N, after the node has stopped and before the
// baseline, the same chains are ingested again by the keyspace-sharded
// layer of scatter/keyspace: N query nodes ([ChildCommand] "query":
// examples/query's querynode.Main, Pebble, each its own process on a
// port of 127.0.0.1 picked before it starts, since the layout names it)
// on a stable layout with Config.Replication owners per key, and the
// node again as its ingest node (-layout, -shard-name ingest1,
// -shard-token-file, -shard-batch-bytes Config.ShardBatchBytes),
// writing to them through its outbox. The run ends when the ingest node
// has applied every head and its shard status (GET /shard/v1/status on
// its find listener) shows every outbox empty: every multihash is then
// applied on its owners. CPU is summed over the ingest node and every
// query node; RSS likewise; disk is the query nodes' data directories,
// which hold R copies of each multihash. The sharded table sets it
// beside the node's run on the same chains: the target is a
// sharded rate of at least half the local one.
//
// Then, with the query nodes ready, the node's find samples are timed
// through a front end ([ChildCommand] "scatter": examples/scatter
// -layout, its default hedging) and by asking each key's first read
// owner directly. With Config.Join, one more query node is started and
// a keyspace.Coordinator drives its join (Reload: SIGHUP to every process):
// keys copied (the new node's Status.Copy.Keys), the copy's time (from
// the copy request to the publication of PhaseMoved), the total (first
// publication to done, the old owners' drops included) and the CPU of
// every process meanwhile. The node copies what it gains as sorted
// tables; with Config.JoinBaseline one more node then joins copying key
// by key (examples/query -copy-key-by-key), and the report puts the two
// rates side by side. Last, every query node is stopped and its
// store is opened and counted: the keys each holds.
//
// # The figures
//
// On the node process alone, read from /proc/<pid>: CPU-seconds (utime +
// stime) and wall time from the announces to the last head applied,
// VmRSS right after and VmHWM (its peak since start); the bytes
// allocated (st_blocks × 512, not the apparent size: Pebble preallocates
// its write-ahead logs) under its data directory, index, state and
// identity together; and Pebble's estimated compaction debt, from the
// node's indexkit_indexer_pebble_compaction_debt_bytes metric, and its
// write amplification: the bytes Pebble's flushes and compactions wrote
// over the bytes written into it (its log and the tables it ingested),
// indexkit_indexer_pebble_bytes_compacted_total over
// indexkit_indexer_pebble_bytes_in_total, compactions still owed not
// counted. From them, per million multihashes: ingest rate, multihashes
// per CPU-second, CPU-seconds per million, bytes of disk per multihash.
//
// With Config.Settle (-settle), each node run then waits, up to that
// long, until Pebble owes no compaction, and a second table gives the
// ingest's CPU with the settling's: multihashes per CPU-second with
// settling, write amplification with settling, disk once settled. A node
// that leaves compactions owed looks cheaper by its ingest alone; this
// is the figure to compare across sizes (make scale SCALE_FLAGS='-mh 100M
// -settle 30m'). The finds after ingest are then timed on the settled
// index.
//
// With Config.Unpaced (on by default) the node runs a second time, on a
// fresh directory, with -queries-first=false: the baseline of the finds
// during ingest and of the ingest rate that pacing costs. Both runs serve
// the same finds during ingest, whose CPU counts in the node's.
//
// Finds: GET /multihash/<mh> over keep-alive HTTP for Config.Samples
// multihashes picked at random (the last of each chain among them), one
// client at a time, then twice as many from Config.Clients concurrent
// clients, each timed; a find counts as found when it answers 200 with the
// publisher's provider in it. During ingest, a child process of its own
// (ChildCommand "finder", so that the publishers' CPU does not delay the
// client) finds Config.ProbeRate multihashes a second (1,000 by default)
// among those the node's status already counts as indexed, on a fixed
// schedule whatever the answers' latency (an open loop: 64 senders, each
// on a connection of its own with every 64th slot of the schedule): the
// find latency while the node ingests at full rate. A find is timed from
// its slot, so that no slow answer hides the ones it delayed (a sender
// still waiting for an answer when its next slot comes counts that find
// from the slot), except for what the finder itself adds: a sender its
// timer woke after its slot counts from when it woke. Go's timers on Linux
// sleep in whole milliseconds, so that lateness is half a millisecond at
// the median, more when the finder waits for the shared cores; the table
// reports it in a column of its own. The baseline times in-process point
// gets of as many multihashes, from 1 and Config.Clients goroutines.
//
// [Report.WriteTable] prints two markdown tables, ingest (node, raw, and
// their ratio) and finds, under a line naming the shape and the machine.
//
// # Caveats
//
// The publishers run in the benchmark's process and make every block
// again as the node fetches it (about a microsecond per multihash, and a
// signature per ad): on a small machine they take CPU the node could
// have used, which slows its wall time but not its CPU-seconds. The
// figures of one run on a shared machine are noisy: compare ratios
// measured in the same run.
//
// # Lifecycle and errors
//
// Run returns after every child has exited and, unless Config.Keep, after
// removing its temporary directory (the node's log, node.log, is kept
// with it). When its context ends (Ctrl-C in the command) it stops the
// children, SIGTERM then SIGKILL after 30 s, and returns the context's
// error; a child also dies with the benchmark (PR_SET_PDEATHSIG). Errors
// name the phase that failed, and for a child its log file.
package scale
