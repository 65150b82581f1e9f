package localpool_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// TestShardedFreezeKeepsBudget runs a sharded pool whose indexer-0 (an
// ingest node: provider records, walker state and the outbox towards the
// query nodes under its directory) freezes on its disk budget and walks
// its publishers frozen, each advertisement a metadata update and a
// provider record for every query node. Once it has walked to its
// publishers' heads and its outbox has delivered everything, its
// directory must be within its budget, as a plain pool's frozen indexer
// is: the outbox's delivered batches must not stay on its disk.
//
// The usage is not sampled while the node still walks or delivers: that
// is not bounded by the budget. The freeze trips on a poll that reads
// 90% or more, a reading that may already be past 100% (an undelivered
// backlog, a compaction's inputs beside its output); a frozen node that
// walks swings by a quarter of so small a budget (Pebble logs, flushes
// and compactions, sealed outbox segments waiting for their query node);
// and what the outbox holds undelivered grows for as long as a query node
// is slow to take it.
func TestShardedFreezeKeepsBudget(t *testing.T) {
	lane.Integration(t, "starts a whole sharded pool")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	// An ingest node's directory holds no index: it grows more slowly
	// than a plain indexer's, and freezes on a smaller budget than the
	// demo's within the test's time.
	const budget = 256 << 10
	// frozenAds is how many advertisements indexer-0 applies frozen: each
	// adds to the outbox of every query node, what delivered batches kept
	// on its disk would pile up.
	const frozenAds = 100
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
	t.Cleanup(func() { // before the pool's Close, registered first
		if t.Failed() {
			convDumpLogs(t, p)
		}
	})
	name := localpool.IndexerName(0)
	dir := p.Dir(name)
	ac, err := admin.NewClient(p.URLs().Indexers[0].Admin, admin.WithClientToken(p.AdminToken()))
	if err != nil {
		t.Fatal(err)
	}
	applied := func() (uint64, error) {
		sts, err := ac.IngestStatus(ctx)
		var n uint64
		for _, st := range sts {
			n += st.AdsApplied
		}
		return n, err
	}

	var atFreeze uint64
	poll(ctx, t, "indexer-0 frozen", func() (bool, string) {
		st, err := ac.Status(ctx)
		if err != nil || !st.Frozen {
			return false, fmt.Sprintf("status %+v, %v", st, err)
		}
		if atFreeze, err = applied(); err != nil {
			return false, err.Error()
		}
		t.Logf("indexer-0 frozen at %.0f%% of its budget, %d ads applied", st.Usage, atFreeze)
		return true, ""
	})
	poll(ctx, t, fmt.Sprintf("indexer-0 applying %d ads frozen", frozenAds), func() (bool, string) {
		n, err := applied()
		return err == nil && n >= atFreeze+frozenAds, fmt.Sprintf("%d ads applied, %v", n, err)
	})
	if err := p.HaltPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	// Settled: walked to every head (a lost announce is made up for by a
	// sync), then every batch delivered. Nothing adds to its outbox after
	// the walks: the walker flushes its store before it records a head.
	poll(ctx, t, "indexer-0 at its publishers' heads, its outbox delivered", func() (bool, string) {
		idle, settled, err := behind(ctx, p, ac)
		for _, id := range idle {
			if err := ac.Sync(ctx, id, admin.SyncRequest{}); err != nil {
				return false, fmt.Sprintf("sync %s: %v", id, err)
			}
		}
		if err != nil || !settled {
			return false, fmt.Sprintf("not at the heads (idle behind: %v), %v", idle, err)
		}
		sh, err := p.ShardSnapshot(ctx)
		if err != nil {
			return false, err.Error()
		}
		st, ok := sh.Ingest[name]
		return ok && delivered(st), fmt.Sprintf("outboxes %s", outboxes(st))
	})
	// Delivered, its batches leave its disk once their acknowledgement is
	// written, which follows the acknowledgement its status reports.
	var used uint64
	poll(ctx, t, "settled indexer-0 within its budget", func() (bool, string) {
		var err error
		used, _, err = freeze.Budget(dir, 0).Usage(dir)
		return err == nil && used <= budget, fmt.Sprintf("%d bytes, %.0f%% of its budget of %d (%v): %s",
			used, 100*float64(used)/budget, budget, err, usageBySubdir(dir))
	})
	t.Logf("indexer-0 settled frozen: %d bytes, %.0f%% of its budget of %d: %s",
		used, 100*float64(used)/budget, budget, usageBySubdir(dir))
}

// poll calls cond every 100 ms until it holds, and fails the test with
// cond's last word on what it saw if ctx ends first.
func poll(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, saw := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, context.Cause(ctx), saw)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// behind compares the walks of the indexer of ac with the heads its
// assigned publishers serve (GET /truth): idle are those it is behind on
// with no walk running or announced; settled says it is at every head
// and has no walk to make.
func behind(ctx context.Context, p *localpool.Pool, ac *admin.Client) (idle []peer.ID, settled bool, err error) {
	heads := map[string]string{}
	for i := range p.URLs().Publishers {
		tr, err := p.PublisherTruth(ctx, i)
		if err != nil {
			return nil, false, err
		}
		heads[tr.Publisher] = tr.Head
	}
	assigned, err := ac.Assigned(ctx)
	if err != nil {
		return nil, false, err
	}
	sts, err := ac.IngestStatus(ctx)
	if err != nil {
		return nil, false, err
	}
	walks := map[peer.ID]admin.PublisherStatus{}
	for _, st := range sts {
		walks[st.Publisher] = st
	}
	settled = true
	for _, a := range assigned {
		w := walks[a.Publisher]
		switch {
		case w.Walking || w.Announced.Defined():
			settled = false
		case !w.LastHead.Defined() || w.LastHead.String() != heads[a.Publisher.String()]:
			idle, settled = append(idle, a.Publisher), false
		}
	}
	return idle, settled, nil
}

// delivered reports whether an ingest node's status has outboxes and
// nothing waiting in any of them.
func delivered(st keyspace.Status) bool {
	for _, o := range st.Owners {
		if o.Pending > 0 {
			return false
		}
	}
	return len(st.Owners) > 0
}

// outboxes describes an ingest node's outboxes, for a failure.
func outboxes(st keyspace.Status) string {
	var parts []string
	for _, q := range slices.Sorted(maps.Keys(st.Owners)) {
		o := st.Owners[q]
		parts = append(parts, fmt.Sprintf("%s: %d pending (%d B), acked %d of %d", q, o.Pending, o.Bytes, o.Acked, o.Head))
	}
	return strings.Join(parts, "; ")
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
