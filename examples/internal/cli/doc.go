// Package cli is the plumbing the example binaries (examples/indexer,
// examples/scatter, examples/assigner) share: the main function's signal
// handling and exit codes, the -log-level flag and the stderr logger, the
// -config JSON file under the command-line flags, listeners with a cap on
// connections in total and per source IP ([Listen], [ConnLimitFlags]) for
// the servers of internal/httpserve (read and write deadlines, a shutdown
// bounded whatever the clients do), the -pprof listener; and the
// announce-limit
// defaults of the roles that take announces ([DefaultAnnounceRate],
// [RateBurst], [ParsePrefixes]).
//
// It holds only what the binaries do identically; their flags, defaults,
// validation and listeners stay in each binary. The servers are
// internal/httpserve's, which the role packages use directly: a role
// package never imports this one, which parses flags and takes signals.
//
// The indexer and the assigner find the admin API's bearer token the same
// way ([ResolveAdminToken]: -admin-token, -admin-token-file or
// $INDEXKIT_ADMIN_TOKEN), and the indexer refuses a non-loopback admin
// listener without one ([IsLoopback]).
package cli
