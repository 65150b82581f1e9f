// Package cli is the plumbing the example binaries (examples/indexer,
// examples/scatter, examples/assigner) share: the main function's signal
// handling and exit codes, the -log-level flag and the stderr logger, the
// -config JSON file under the command-line flags, and HTTP servers run
// under an errgroup with a bounded graceful shutdown.
//
// It holds only what the binaries do identically; their flags, defaults,
// validation and listeners stay in each binary. It imports the standard
// library and golang.org/x/sync/errgroup only.
//
// The indexer and the assigner find the admin API's bearer token the same
// way ([ResolveAdminToken]: -admin-token, -admin-token-file or
// $INDEXKIT_ADMIN_TOKEN), and the indexer refuses a non-loopback admin
// listener without one ([IsLoopback]).
package cli
