package pebble

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

func TestLimitCompactions(t *testing.T) {
	rng := func() (int, int) { return 1, 3 }
	for _, c := range []struct {
		rng          func() (int, int)
		limit        int
		lower, upper int
	}{
		{rng, math.MaxInt, 1, 3},
		{rng, 2, 1, 2},
		{rng, 1, 1, 1},
		{rng, 0, 1, 1}, // below 1 counts as 1
		{nil, math.MaxInt, 1, 1},
	} {
		lower, upper := limitCompactions(c.rng, func() int { return c.limit })()
		if lower != c.lower || upper != c.upper {
			t.Errorf("range %v capped at %d: (%d, %d), want (%d, %d)", c.rng != nil, c.limit, lower, upper, c.lower, c.upper)
		}
	}
}

// Pebble asks the limit as it schedules compactions, and never runs more
// at once than it says.
func TestCompactionLimitAsked(t *testing.T) {
	var asked atomic.Int64
	s, err := Open(filepath.Join(t.TempDir(), "db"), WithMemTableSize(MinMemTableSize), WithCompactionLimit(func() int {
		asked.Add(1)
		return 1
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putBatches(t, s, 200, func() {
		if m := s.Pebble().Metrics(); m.Compact.NumInProgress > 1 {
			t.Fatalf("%d compactions in progress with a limit of 1", m.Compact.NumInProgress)
		}
	})
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	if asked.Load() == 0 {
		t.Error("Pebble never asked the compaction limit")
	}
}

// With WithCompactionThreads, compactions still run as Pebble wants them
// and call the hook first thing on their goroutines.
func TestCompactionThreadsHook(t *testing.T) {
	var calls atomic.Int64
	s, err := Open(filepath.Join(t.TempDir(), "db"), WithMemTableSize(MinMemTableSize),
		WithCompactionThreads(func() { calls.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	last := putBatches(t, s, 300, func() {})
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	// A manual compaction goes through the scheduler too.
	if err := s.Pebble().Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	m := s.Pebble().Metrics()
	if m.Compact.Count == 0 {
		t.Fatal("no compaction ran")
	}
	if calls.Load() == 0 {
		t.Errorf("%d compactions, the hook never called", m.Compact.Count)
	}
	vals, err := s.Get(ctx, last)
	if err != nil || len(vals) != 1 {
		t.Errorf("Get after the compactions: %v, %v; want the last Put's value", vals, err)
	}
	if err := s.Close(); err != nil { // the scheduler stops with the database
		t.Fatal(err)
	}
}

// putBatches puts n batches of 100 multihashes into s, a context each,
// calling each after every Put, and returns a multihash of the last one.
func putBatches(t *testing.T, s *Store, n int, each func()) multihash.Multihash {
	t.Helper()
	batch := make([]multihash.Multihash, 100)
	for i := range n {
		for j := range batch {
			batch[j], _ = multihash.Sum(fmt.Appendf(nil, "%d/%d", i, j), multihash.SHA2_256, -1)
		}
		if err := s.Put(context.Background(), store.Value{ProviderID: "p", ContextID: []byte{byte(i)}, Metadata: []byte{1}}, batch...); err != nil {
			t.Fatal(err)
		}
		each()
	}
	return batch[0]
}
