// Command query runs a query node of a keyspace-sharded IPNI layer
// (package scatter/keyspace): it holds the index of the ranges a layout file
// gives it, written by ingest nodes (examples/indexer -layout) through an
// authenticated batch API, and answers the find API for them. A front end
// (examples/scatter -layout) routes each lookup to a key's owners.
//
//	query -name q1 -layout layout.json -dir q1-data -listen 127.0.0.1:3100
//
// Flags:
//
//	-dir DIR            data directory: index, writer positions, copy guard (./query-data)
//	-name NAME          the node's name in the layout (required)
//	-layout FILE        layout file, re-read on SIGHUP (layout.json); or
//	                    etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd layout followed by a
//	                    watch, the node's status kept under a lease (see examples/querynode)
//	-layout-poll D      how often to read the layout file for a new layout (0: only on SIGHUP)
//	-presence-ttl D     with an etcd -layout, the lease TTL of the node's status key (0: 5s)
//	-store pebble|memory  index backend (pebble)
//	-listen ADDR        find and shard APIs (127.0.0.1:3100)
//	-pprof ADDR         loopback address of Go's /debug/pprof/ profiles, answering
//	                    no web page or rebound name ("": none, the default)
//	-token-file FILE    the shard API's bearer token (else $INDEXKIT_SHARD_TOKEN);
//	                    a listener off loopback requires one
//	-shard-hosts NAMES  comma-separated Host names under which the shard API
//	                    without a token takes writes, besides loopback ones
//	-index-cache-size N Pebble block cache in bytes (32 MiB)
//	-commit-interval D  how long applied batches may wait to be made durable
//	                    together (5s, or 16 MiB of batches; 0: each batch
//	                    before it is answered)
//	-copy-key-by-key    copy the keys the node gains Put by Put, not as sorted
//	                    tables (a baseline for measurements)
//	-shutdown-timeout D time requests in flight get on SIGTERM (10s)
//	-log-level LEVEL    debug, info, warn or error
//	-max-conns N, -max-conns-per-ip N  connection caps
//
// Without a token the shard API takes writes only to Host 127.0.0.0/8,
// [::1], localhost or a name of -shard-hosts (another Host, such as a
// DNS-rebound web page's, gets 421) and none that a web page sent (an
// Origin header: 403); the find API stays open to every page (CORS).
//
// Finds answer 503 until the node has heard from every writer of its
// layout that nothing older waits for it (after each start), so that no
// lookup gets an answer that looks complete from a node still catching up.
//
// The program is Main in examples/internal/cmd/querycmd: the flags mapped
// onto examples/querynode's Config, the listeners, the profiles and
// SIGHUP around the typed node, which a Go program or test embeds
// directly.
package main
