package agent_test

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/redistest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// BenchmarkFleetLoad measures what a fleet costs Redis in steady state: 8
// Managers with a no-op indexer over one lease/redis catalog of 5,000
// items, every item held, TTL 10s and 250ms scans as in examples/fleet.
// It runs the fleet in one process, first scanning by listing every
// row (an item source that hides Watch, as before the change feed), then
// on the feed, and reports the Redis commands each node sends per second
// (counted by a go-redis hook on each node's own client; a pipeline
// counts each of its commands) over 10s of steady state (35s for the
// second feed run), and the ratios.
// The feed runs twice: with the default reconciliation (half the TTL,
// 5s here: a listing of 5,000 rows every 5s dominates its cost) and with
// a 30s one (the view's expiries of held items go stale between listings,
// and nodes bid on them, each refused bid confirmed by one Get). It takes
// about a minute; run it alone:
//
//	go test -run '^$' -bench FleetLoad -benchtime 1x ./lease/agent/
func BenchmarkFleetLoad(b *testing.B) {
	const (
		nodes   = 8
		items   = 5000
		ttl     = 10 * time.Second
		measure = 10 * time.Second
	)
	redistest.Client(b, redistest.Addr()) // skip or fail once
	for b.Loop() {
		scan := fleetLoad(b, nodes, items, ttl, measure, false, 0)
		feed := fleetLoad(b, nodes, items, ttl, measure, true, 0)
		// Over 35s, so that one listing and the stale stretch fall in it.
		feed30 := fleetLoad(b, nodes, items, ttl, 35*time.Second, true, 30*time.Second)
		b.ReportMetric(scan, "scan-cmds/s/node")
		b.ReportMetric(feed, "feed-cmds/s/node")
		b.ReportMetric(scan/feed, "scan/feed")
		b.ReportMetric(feed30, "feed30s-cmds/s/node")
		b.ReportMetric(scan/feed30, "scan/feed30s")
	}
}

// cmdCounter is a go-redis hook that counts the commands a client sends.
type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

type nopIndexer struct{}

func (nopIndexer) Index(_ context.Context, r lease.Row) (int64, error) { return r.Size, nil }
func (nopIndexer) Drop(string)                                         {}

// rowsOnly hides a store's Watch: a manager given it scans by listing.
type rowsOnly struct{ l lease.Lister }

func (o rowsOnly) Rows(ctx context.Context) iter.Seq2[lease.Row, error] { return o.l.Rows(ctx) }

// fleetLoad runs one fleet on a fresh prefix and returns the mean commands
// per second per node in steady state.
func fleetLoad(b *testing.B, nodes, items int, ttl, measure time.Duration, feed bool, reconcile time.Duration) float64 {
	b.Helper()
	ctx := context.Background()
	admin := redistest.Client(b, redistest.Addr())
	prefix := redistest.Prefix(b, admin, "load")
	opts := []lease.Option{lease.WithTTL(ttl), lease.WithAuctionWindow(2 * time.Second)}
	as, err := leaseredis.New(admin, prefix, opts...)
	if err != nil {
		b.Fatal(err)
	}
	// Every item granted to a node up front (one-bid auctions), so the
	// fleet starts in steady state: each manager picks its grants up at its
	// first scan.
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < items; i += 16 {
				id := fmt.Sprintf("repo-%05d", i)
				if err := as.Put(ctx, lease.Item{ID: id, MaxBids: 1}); err != nil {
					errc <- err
					return
				}
				if _, err := as.Bid(ctx, id, fmt.Sprintf("node-%d", i%nodes), 1<<20); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}

	counters := make([]*cmdCounter, nodes)
	ms := make([]*agent.Manager, nodes)
	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	for i := range nodes {
		c := goredis.NewClient(&goredis.Options{Addr: redistest.Addr(), MaxRetries: -1})
		counters[i] = &cmdCounter{}
		c.AddHook(counters[i])
		s, err := leaseredis.New(c, prefix, opts...)
		if err != nil {
			b.Fatal(err)
		}
		mopts := []agent.Option{
			agent.WithIndexer(nopIndexer{}), agent.WithTTL(ttl), agent.WithScanInterval(250 * time.Millisecond),
			agent.WithHeartbeatInterval(time.Second), agent.WithDrainTimeout(-1),
		}
		if !feed {
			mopts = append(mopts, agent.WithItemSource(rowsOnly{s}))
		}
		if reconcile > 0 {
			mopts = append(mopts, agent.WithReconcileInterval(reconcile))
		}
		m, err := agent.NewManager(s, fmt.Sprintf("node-%d", i), mopts...)
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = m
		running.Go(func() {
			defer c.Close()
			if err := m.Run(runCtx); err != nil {
				b.Error(err)
			}
		})
	}
	defer func() { stop(); running.Wait() }()

	held := func() int {
		n := 0
		for _, m := range ms {
			n += len(m.Held())
		}
		return n
	}
	deadline := time.Now().Add(ttl)
	for held() < items {
		if time.Now().After(deadline) {
			b.Fatalf("feed %v: %d of %d items held after %v", feed, held(), items, ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the Ready updates
	sum := func() int64 {
		var n int64
		for _, c := range counters {
			n += c.n.Load()
		}
		return n
	}
	before, began := sum(), time.Now()
	time.Sleep(measure)
	per := float64(sum()-before) / time.Since(began).Seconds() / float64(nodes)
	if h := held(); h != items {
		b.Errorf("feed %v: %d of %d items held at the end of the measurement", feed, h, items)
	}
	b.Logf("feed %v (reconcile %v): %.0f commands/s per node over %v, %d items held by %d nodes",
		feed, reconcile, per, measure, items, nodes)
	return per
}
