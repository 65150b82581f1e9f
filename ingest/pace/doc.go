// Package pace lets a node's lookups go first while it ingests.
//
// A node that serves lookups and ingests on the same cores answers late
// when its ingest keeps every processor busy: Go's scheduler notices a
// request that arrives while all its processors (Ps) run ingest work only
// when one of them next looks for work, which a CPU-bound goroutine does
// at the latest after a 10 ms time slice, and the request then queues
// behind ingest goroutines. A [Pacer] keeps a processor free for lookups
// while they come: a lookup marks itself ([Pacer.Lookups] wraps a find
// handler), ingest workers take a turn before each piece of CPU-heavy
// work ([Pacer.Acquire], [Pacer.Release]), and while lookups came within
// [Config.Quiet] only [Config.Workers] turns are handed out at once and
// the store runs at most [Config.Compactions] compactions
// ([Pacer.CompactionLimit]). When
// lookups stop, ingest takes every processor again.
//
// A free processor is not a free core: the operating system still shares
// the cores between the node's threads, and wakes the thread that takes a
// lookup within a fraction of a millisecond, where Go's scheduler would
// queue it for up to a time slice. A node that paces its ingest therefore
// runs with one processor more than it has cores (GOMAXPROCS = cores + 1,
// what [Procs] returns), so that the turns ingest keeps still cover every
// core: ingest loses to lookups only the CPU the lookups themselves take.
//
// The pacer is a building block: ingest takes it through its
// WithPacer option, store/pebble through WithCompactionLimit, and
// the indexer node (examples/indexernode) wires all three when its
// QueriesFirst setting is on. docs/performance.md has the measures.
package pace
