package localpool_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestShardedFreezeKeepsBudget runs a sharded pool whose indexer-0 (an
// ingest node: provider records, walker state and the outbox towards the
// query nodes under its directory) freezes on its disk budget, and checks
// that its directory stays within that budget from then on, as a plain
// pool's frozen indexer does: the outbox's delivered batches must not
// pile up on its disk.
func TestShardedFreezeKeepsBudget(t *testing.T) {
	lane.Integration(t, "starts a whole sharded pool")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	// An ingest node's directory holds no index: it grows more slowly
	// than a plain indexer's, and freezes on a smaller budget than the
	// demo's within the test's time.
	const budget = 256 << 10
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "pebble",
		// About 1,000 multihashes a second on each ingest node: indexer-0
		// reaches 90% of its budget within some 30 s (its own stores take some 150 KiB from the start).
		Interval: 100 * time.Millisecond, Entries: 100,
		FreezeBudget: budget, PollInterval: 200 * time.Millisecond,
		Sharded: &localpool.Sharded{QueryNodes: 4, Replication: 2},
		Log:     testLog{t}, LogLevel: 4,
	}
	p := convStart(ctx, t, cfg)
	dir := filepath.Join(cfg.Dir, localpool.IndexerName(0))
	used := func() int64 {
		u, _, _ := freeze.Budget(dir, 0).Usage(dir)
		return int64(u)
	}
	if _, err := p.WaitFor(ctx, "indexer-0 frozen", func(s *localpool.Snapshot) bool {
		ix := s.Indexer(localpool.IndexerName(0))
		return ix != nil && ix.Frozen
	}); err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	// The publishers keep publishing (to indexer-1 now); the frozen node
	// delivers what its outbox holds and must stay within its budget.
	peak := used()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		peak = max(peak, used())
	}
	t.Logf("indexer-0 after its freeze: peak %d bytes, %.0f%% of its budget of %d; now: %s",
		peak, 100*float64(peak)/float64(budget), budget, usageBySubdir(dir))
	if peak > budget {
		t.Fatalf("frozen indexer-0 used %d bytes, %.0f%% of its budget of %d: %s",
			peak, 100*float64(peak)/float64(budget), budget, usageBySubdir(dir))
	}
}

// usageBySubdir lists the bytes allocated under each entry of dir, for a
// failure that says which store took the budget.
func usageBySubdir(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		var n uint64
		if e.IsDir() {
			n, _, _ = freeze.Budget(sub, 0).Usage(sub)
		} else if info, err := e.Info(); err == nil && info.Mode().Type() == fs.FileMode(0) {
			n = uint64(info.Size())
		}
		parts = append(parts, e.Name()+" "+formatKiB(n))
	}
	return strings.Join(parts, ", ")
}

func formatKiB(n uint64) string { return fmt.Sprintf("%d KiB", n>>10) }
