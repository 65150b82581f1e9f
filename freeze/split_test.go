package freeze_test

import (
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/freeze"
)

func TestSplitBudget(t *testing.T) {
	for _, c := range []struct {
		budget, runs int64
		want         freeze.Split
	}{
		{0, 32 << 20, freeze.Split{RunSize: 32 << 20}},
		{0, 0, freeze.Split{}},
		{0, freeze.MinRunSize - 1, freeze.Split{}},
		{0, freeze.MinRunSize, freeze.Split{RunSize: freeze.MinRunSize}},
		{64 << 20, 32 << 20, freeze.Split{Index: 64 << 20, State: 16 << 20, RunSize: 4 << 20, Outbox: 2 << 20}},
		{1 << 30, 32 << 20, freeze.Split{Index: 1 << 30, State: 256 << 20, RunSize: 32 << 20, Outbox: 32 << 20}},
		// The runs' floor: a 16th of the budget at MinRunSize keeps them,
		// a byte less drops them.
		{16 * freeze.MinRunSize, 32 << 20, freeze.Split{Index: 16 * freeze.MinRunSize, State: 4 * freeze.MinRunSize, RunSize: freeze.MinRunSize, Outbox: freeze.MinRunSize / 2}},
		{16*freeze.MinRunSize - 16, 32 << 20, freeze.Split{Index: 16*freeze.MinRunSize - 16, State: 4*freeze.MinRunSize - 4, Outbox: freeze.MinRunSize/2 - 1}},
		{3, 0, freeze.Split{Index: 3, State: 1, Outbox: 1}},
	} {
		if got := freeze.SplitBudget(c.budget, c.runs); got != c.want {
			t.Errorf("SplitBudget(%d, %d) = %+v, want %+v", c.budget, c.runs, got, c.want)
		}
	}
}

// A node with 64 MiB of disk and 32 MiB sorted runs: the index is sized
// to the whole, the state to a quarter, the runs cut to a 16th.
func ExampleSplitBudget() {
	s := freeze.SplitBudget(64<<20, 32<<20)
	fmt.Printf("index %d MiB, state %d MiB, runs %d MiB\n", s.Index>>20, s.State>>20, s.RunSize>>20)
	// Output: index 64 MiB, state 16 MiB, runs 4 MiB
}
