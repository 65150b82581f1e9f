// Package pace lets a node's lookups go first while it ingests.
//
// A node that serves lookups and ingests on the same cores answers late
// when its ingest keeps every one of the Go runtime's processors (Ps)
// busy: the scheduler notices a request that arrives then only when a P
// next looks for work, which a CPU-bound goroutine lets it do at the
// latest after a 10 ms time slice, and the request then queues behind
// ingest goroutines. A [Pacer] keeps processors free for lookups while
// they come:
//
//   - a lookup marks itself ([Pacer.Lookups] wraps a find handler, or
//     [Pacer.Lookup]);
//   - ingest workers take a turn before each piece of CPU-heavy work and
//     give it back after ([Pacer.Acquire], [Pacer.Release]): while
//     lookups came within [Config.Quiet], only [Config.Workers] turns are
//     out at once;
//   - the store runs at most [Config.Compactions] compactions at once
//     meanwhile ([Pacer.CompactionLimit]);
//   - the program runs with more processors than cores ([Procs]), so
//     that a request finds a free P and the operating system, which runs
//     a thread waking from sleep ahead of threads that used their share,
//     takes the lookup at once. Ingest loses only the CPU the lookups
//     take.
//
// When lookups stop, ingest takes every processor again.
//
// The pacer is a building block: ingest takes it through its WithPacer
// option, store/pebble through WithCompactionLimit, and the indexer node
// (examples/indexernode) wires all of them when its QueriesFirst setting
// is on; examples/indexer sets GOMAXPROCS to [Procs]. What it buys, and
// what it does not yet, is measured by examples/scale (make scale), which
// runs the node with queries first on and off in the same run:
// docs/performance.md has the figures and the execution traces behind
// them.
package pace
