package freeze

// Split is how a node divides one disk budget among the stores under its
// data directory ([SplitBudget]). Each share is what the store is sized
// to, not a quota it is held to: the [Monitor] reading [Budget] is what
// freezes the node when the files, together, reach its threshold.
type Split struct {
	// Index is the budget the index store is sized to: the whole, since
	// the index is what grows (its memtables, preallocated logs and
	// manifest take a bounded part of it; store/pebble WithDiskBudget).
	Index int64
	// State is the budget of the small persisted state (walker
	// positions, assignments: a go-datastore on Pebble), a quarter of
	// the whole: its memtables and logs take most of it, and it holds
	// little besides.
	State int64
	// RunSize is the largest sorted run the index may gather in memory
	// before it writes it as one table: the run asked for, capped at a
	// 16th of the budget as the memtables are (a run becomes a table of
	// about its size), and 0 (no runs) when that leaves less than
	// MinRunSize.
	RunSize int64
	// Outbox is the segment size of an ingest node's outbox (package
	// scatter/keyspace/writer/outbox), a 32nd of the whole: a queue that
	// keeps up leaves up to a 16th of a segment delivered on disk, and a
	// sealed segment until it is delivered, per query node, and the
	// outbox's default (64 MiB) would let that exceed a small budget
	// many times over.
	Outbox int64
}

// MinRunSize is the smallest sorted run [SplitBudget] keeps: below it a
// run is a table too small to be worth its own write.
const MinRunSize = 64 << 10

// SplitBudget divides budget bytes (0: no budget) among a node's stores,
// given the sorted-run size asked for (0: none). Without a budget the
// shares are 0 (unsized) and the runs as asked, if at least MinRunSize.
func SplitBudget(budget, runSize int64) Split {
	s := Split{RunSize: runSize}
	if budget > 0 {
		s.Index, s.State, s.Outbox = budget, max(budget/4, 1), max(budget/32, 1)
		s.RunSize = min(runSize, budget/16)
	}
	if s.RunSize < MinRunSize {
		s.RunSize = 0
	}
	return s
}
