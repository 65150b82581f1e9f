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
//   - ingest workers run each piece of CPU-heavy work in a turn
//     ([Pacer.Run], or [Pacer.Acquire] and [Pacer.Release]): while
//     lookups came within [Config.Quiet], only [Config.Workers] turns are
//     out at once;
//   - the store runs at most [Config.Compactions] compactions at once
//     meanwhile ([Pacer.CompactionLimit]);
//   - ingest's walks and the store's compactions run on threads of their
//     own at a lower priority ([Pacer.Background], nice [DefaultNice] on
//     Linux): once a lookup has a processor, the kernel runs its thread
//     ahead of theirs whenever both want a core;
//   - the program runs with more processors than cores ([Procs]), so
//     that a request finds a free P, which the kernel then runs at once.
//
// Ingest loses only the CPU the lookups take, and when lookups stop it
// takes every processor again. Of these, the lower priority of the walks
// and the extra processors are what lowered the latency of finds during
// a 10M ingest on 2 cores; the turns, at their default, hold a
// processor free only when more publishers are walked than there are
// cores (docs/performance.md).
//
// The pacer is a building block: ingest takes it through its WithPacer
// option (and calls Background at the start of each walk),
// store/pebble through WithCompactionLimit and WithCompactionThreads
// (which calls Background on each compaction goroutine), and the indexer node
// (examples/indexernode) wires all of them when its QueriesFirst setting
// is on; examples/indexer sets GOMAXPROCS to [Procs]. What it buys, and
// what it does not yet, is measured by examples/scale (make scale), which
// runs the node with queries first on and off in the same run:
// docs/performance.md has the figures and the execution traces behind
// them.
package pace
