// Command piece is the piece sampler: it walks the advertisement chains of
// the providers an IPNI indexer lists (and of publishers given on the
// command line, and of those that announce to it), keeps a bounded sample of
// payload CIDs for every (provider, PieceCID), and answers
//
//	GET /sample/{providerId}/{pieceCid}?seed={seed}[&n={n}]   signed samples
//	GET /ingestion-status/{providerId}                        walk status and counters
//	PUT /announce, PUT /ingest/announce                       IPNI HTTP announces
//
// on --listen. It is thin wiring of [piece.Tracker] (learning providers,
// walking, extraction) and [piece.Handler] (the signed REST API); see the
// piece package for what they do.
//
// # Flags
//
//	--listen          127.0.0.1:3000  REST API and announces (:0 picks a port)
//	--providers-url   https://cid.contact/providers; empty disables polling
//	--poll-interval   1m
//	--publishers      comma list of publisher base URLs or multiaddrs
//	--store           memory | redis
//	--redis           Redis address (default $REDIS_ADDR, else 127.0.0.1:6379)
//	--redis-prefix    prefix of every Redis key (default "piece:")
//	--dir             state directory (default indexkit/piece under the user
//	                  cache directory, else under the temporary directory)
//	--key             signing key file, created if absent (default <dir>/key)
//	--concurrency     publishers walked at once (default 10)
//	--capacity        payloads kept per (provider, piece) (default 16)
//	--entry-chunks    entry chunks of each advertisement read and sampled
//	                  (default 1, the first; 0: all)
//	--request-timeout bound of each request to a publisher (default 10s)
//	--request-rate    requests per second to each publisher (default 10)
//	--allow-private-addrs  dial publishers on loopback and private addresses
//	                  (default false; see below)
//	--log-level       debug | info | warn | error
//	--max-conns       open connections of the listener; a new one evicts the longest exchange (default 1024; 0: no cap)
//	--max-conns-per-ip open connections from one IP (IPv6 /64); more are closed (default 64; 0: no cap)
//	--announce-rate   PUT /announce a second per source IP, twice that at once; more get 429 (default 10; 0: no limit)
//	--announce-rate-exempt CIDRs --announce-rate does not limit (default none)
//
// The server cuts a request whose header takes over 10s or whose body over
// 30s, and an answer that takes over 60s to write. Announces are not
// rate-limited per source (the indexer and the assigner are).
//
// Publishers' addresses come from /providers records and announces, so
// the sampler connects only to public addresses by default (checked after
// name resolution), follows no redirect, and its statuses quote no
// publisher's error answer. For publishers on a private network or on
// this machine, --allow-private-addrs also lets it dial loopback, private,
// link-local and CGNAT addresses, and logs a WARN at start; cloud metadata
// addresses stay refused. The --providers-url endpoint, the operator's
// choice, is not restricted.
//
// # State
//
// With --store redis the pieces and the walk positions live in Redis, so a
// restarted (even killed) process resumes every walk where it stopped,
// with exact counters; a LevelDB under <dir>/walk keeps the publishers'
// verified addresses, their backoff and the sampler's claim name. Several
// samplers on one Redis and --redis-prefix, each with its own --dir,
// share the walks: each publisher is walked by one of them at a time
// (a claim that lapses a minute after the last step), and each chain about
// once overall. With --store memory nothing outlives the process: every
// start walks every chain from its head again. The Ed25519 key in --key is
// kept across restarts in both cases, so answers stay verifiable with the
// same public key.
//
// # Logs and lifecycle
//
// It logs with slog on stderr: msg=starting, msg=listening name=api
// addr=<host:port>, a line per finished walk, a status line every 30 s per
// walk in progress or failing, and warnings for publishers that fail. SIGINT
// or SIGTERM stops it gracefully: the API drains (for up to
// --shutdown-timeout, then its connections are closed), walks stop and
// persist their position, the last statuses are written; the exit status
// is 0. An error at start exits 1 with "piece: <error>" on stderr: a --key
// file that holds no key, a --dir whose walker state another sampler
// holds (--store redis), a --listen port already in use.
//
// # In process
//
// The program itself is Main in examples/internal/cmd/piececmd; this
// command only calls it under a context that SIGINT and SIGTERM cancel, so
// a whole pool can run the same role in goroutines (examples/pool). Main
// is flags, stores, key and listener around the typed piecenode.Sampler
// (piecenode.New, Run, Close), which a Go program or test embeds directly:
// examples/piecenode imports no flag parsing, signal handling or
// Prometheus.
package main
