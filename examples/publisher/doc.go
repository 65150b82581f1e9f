// Command publisher runs generated IPNI publishers: each has its own
// Ed25519 identity (its peer ID is also the provider ID of its ads),
// publishes a signed advertisement every -interval, serves its chain over
// the ipnisync HTTP protocol on 127.0.0.1, and announces each new head over
// HTTP to the -announce URLs (an assigner's /announce, or indexers'
// /ingest/announce). Everything derives from -seed, so a test knows the
// ground truth an indexer must reach, which each publisher also serves at
// GET /truth. It is the publisher role of examples/pool and of its fault
// tests.
//
// # Usage
//
//	publisher [-config FILE] [flags]
//
// Flags override the JSON config file, whose keys are the flags' names in
// CamelCase (Listen, Publishers, Seed,
// Interval, InitialAds, MaxAds, Entries, ChunkSize, RemoveEvery,
// UpdateEvery, Announce, Dir, Fault, LogLevel, ShutdownTimeout; durations
// as "1s"); unknown keys are an error.
//
//	flag               default          meaning
//	-config            ""               JSON config file
//	-listen            127.0.0.1:3100   HTTP address of publisher 0; publisher i: port+i (port 0: a free port each)
//	-publishers        1                number of publishers
//	-seed              1                seed of everything; publisher i uses PublisherSeed(seed, i)
//	-interval          1s               time between two ads of each publisher
//	-initial-ads       1                ads each publisher has at a fresh start, announced at once
//	-max-ads           0                stop producing at this many ads (keep serving); 0: never
//	-entries           100              multihashes per ad with entries
//	-chunk-size        100              multihashes per entry chunk
//	-remove-every      10               every nth ad removes an earlier context (0: never)
//	-update-every      7                every nth ad updates an earlier context's metadata (0: never)
//	-piece-context-every 0           every nth new context names its piece in the ContextID, dag-cbor [size, pieceCID] (0: never)
//	-announce          ""               comma-separated base URLs to announce to (repeatable)
//	-dir               ""               keeps the positions across restarts ("" : none)
//	-fault             ""               bad-signature, corrupt or huge: a malicious publisher
//	-log-level         info             debug, info, warn or error
//	-shutdown-timeout  5s               how long requests in flight may take on SIGTERM
//	-max-conns         1024             open connections per publisher; a new one evicts the longest exchange (0: no cap)
//	-max-conns-per-ip  64               open connections per publisher from one IP (IPv6 /64); more are closed (0: no cap)
//
// The servers cut a request whose header takes over 10s or whose body over
// 30s, and an answer that takes over 60s to write.
//
// # HTTP
//
// Each publisher listens on its own address and answers:
//
//	GET /ipni/v1/ad/head    the signed head (204 before the first ad)
//	GET /ipni/v1/ad/{cid}   an advertisement or entry chunk (dag-json)
//	GET /truth              {"Publisher","Head","Ads","Fault","Multihashes","Digest"}: the
//	                        ground truth at the head; ?entries=1 adds "Entries", every
//	                        multihash (base58) with its values (ProviderID, ContextID and
//	                        Metadata, base64), sorted by multihash; ?pieces=1 adds "Pieces"
//	POST /halt              publish no more ads (keep serving), so that the truth holds
//	                        still; 204. Only to a loopback Host and from no web page:
//	                        421 or 403 otherwise (internal/localonly)
//
// A faulty publisher's truth is empty: nothing it publishes may be
// indexed. The faults: bad-signature (ads altered after signing),
// corrupt (entry chunks that do not hash to their CIDs), huge (an entry
// chunk over the 4 MiB block limit per ad; about 7 MB of memory per ad,
// so bound it with -max-ads).
//
// # Restart
//
// Identities and chains are regenerated from -seed at each start. With
// -dir the publishers' ad counts are kept in publisher-state.json, so a
// restart serves the same heads and continues the same chains; a state
// file of another seed, entries, chunk size, removal or update rate or
// fault is an error.
//
// # Logs and signals
//
// Logs are slog text lines on standard error: one
// msg=listening name=publisher-<i> addr=HOST:PORT line per publisher, a
// msg=publisher line with its index, peer ID (publisher=) and fault, then
// msg=starting; at debug level each ad published and announced; announce
// failures at warn level. SIGINT or SIGTERM stops producing and the
// servers (requests in flight get -shutdown-timeout, then their
// connections are closed); the exit status is 0 after a shutdown, 1 after
// an error (a port already in use: "publisher: -listen: publisher-<i>: ...").
//
// # In process
//
// The program itself is Main in examples/internal/cmd/publishercmd; this
// command only calls it under a context that SIGINT and SIGTERM cancel, so
// a whole pool can run the same role in goroutines (examples/pool). Main
// is flags and listeners around the typed publishernode.Node
// (publishernode.New, Run, Close), which a Go program or test embeds
// directly: examples/publishernode imports no flag parsing, signal
// handling or Prometheus.
package main
