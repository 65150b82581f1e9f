// Command scale is the scale benchmark of an indexer node: it generates
// signed advertisement chains, serves them over HTTP, has a node ingest
// them, measures the node and a raw Pebble baseline writing the same
// keys, and prints the figures as markdown tables.
//
// # Usage
//
//	make scale SCALE_FLAGS='-mh 10M'
//	make scale SCALE_FLAGS='-mh 100M'
//	make scale SCALE_FLAGS='-shape contexts -mh 10M'
//	make scale SCALE_FLAGS='-mh 10M -- -log-level=warn'     # node flags after --
//	make scale SCALE_FLAGS='-mh 10M -sharded 4 -join'       # and the sharded layer, then a join
//	scale [flags] [-- node flags]
//
//	flag            default   meaning
//	-mh             10M       multihashes to ingest (20k, 1M, 10M, 100M, 1.5M ...)
//	-contexts       0         instead of -mh, the number of ads, one context each (-shape contexts -contexts 10M)
//	-shape          ads       ads: 10,000 multihashes per ad in chunks of 1,000; contexts: 1 to 16 per ad
//	-publishers     4         publishers, each its own chain on its own HTTP listener
//	-mh-per-ad      0         most multihashes per ad (0: the shape's)
//	-min-mh-per-ad  0         fewest multihashes per ad (0: -mh-per-ad, or the shape's)
//	-chunk          0         multihashes per entry chunk (0: 1,000)
//	-dag-cbor       false     dag-cbor blocks rather than dag-json
//	-seed           1         seed of the chains (publisher i: seed+i)
//	-samples        3000      finds timed after ingest with 1 client (twice as many with -clients)
//	-clients        64        concurrent keep-alive find clients
//	-probe-rate     1000      finds a second during ingest, open loop from a child process (0: none)
//	-status         5s        interval of the progress lines
//	-raw            true      run the raw Pebble baseline
//	-unpaced        true      run the node again with -queries-first=false, the baseline of finds during ingest
//	-settle         0s        after ingest, wait up to this long for Pebble to owe no compaction; report the CPU with it
//	-sharded        0         also run the keyspace-sharded layer: the node as an ingest node, this many query nodes
//	-replication    0         owners of each key with -sharded (0: 2)
//	-shard-batch-bytes 0      bytes of the ingest node's batches to each query node (0: the writer's 1 MiB)
//	-join           false     with -sharded, then add one query node through a keyspace.Coordinator
//	-join-baseline  true      with -join, then add another that copies key by key (the baseline)
//	-join-after     0s        with -join, wait this long after the ingest (compactions settle)
//	-dir            ""        where the temporary directory goes (default $TMPDIR)
//	-keep           false     keep the temporary directory: the node's data and log
//	-node-flag      (none)    a node flag, repeatable: -node-flag=-log-level=warn
//
// Progress goes to standard error (log/slog text), the tables to standard
// output. Ctrl-C stops the children and removes the temporary directory
// (unless -keep). The documentation of examples/internal/scale says what
// each figure measures; docs/performance.md shows runs.
package main
