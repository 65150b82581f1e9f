// Package memory is a [lease.Store] held in process memory: for tests,
// simulations and single-process fleets. Nothing is persisted.
//
// # Model
//
// One mutex guards a map of items (each row with its open auction, if any),
// the pending-bid markers by node, and the heartbeat times of live nodes.
// Time comes from the configured [lease.Clock] (lease.WithClock), so tests
// can drive expiry and auction windows; expiry is applied lazily, when an
// operation next touches the row. Fences count up by one per grant.
//
// # Concurrency and lifecycle
//
// A Store is safe for concurrent use and starts no goroutines. Hooks run
// after the lock is released. Close drops everything; every later call
// returns an error wrapping [lease.ErrClosed].
package memory
