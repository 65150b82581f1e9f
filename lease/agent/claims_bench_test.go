package agent_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// BenchmarkFleetClaims measures how fast a fleet claims a catalog nobody
// holds, which is what a recovery after a node's death is bound by once
// the rebuilds are cheap (snapshots): 8 Managers in one process, each
// with a store of its own, a no-op indexer and room for everything, claim
// 800 items with the fleet sim's timings (TTL 4s, window 1s, max-bids 2,
// 100ms scans, a change feed). The baseline in the same run is the
// store's own grant rate: 8 goroutines granting as many items, one bid
// each on rows whose auctions close at one bid, with no view, scan or
// auction to wait for. It reports both rates, their ratio and the store
// requests per claim. Run it alone (about a minute a backend):
//
//	go test -run '^$' -bench FleetClaims -benchtime 1x ./lease/agent/
func BenchmarkFleetClaims(b *testing.B) {
	const (
		nodes = 8
		items = 800
	)
	for _, be := range []struct {
		name string
		open func(b *testing.B, opts []lease.Option) loadBackend
	}{{"redis", redisLoad}, {"etcd", etcdLoad}} {
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				raw := rawGrants(b, be.open, nodes, items)
				claims, perClaim := fleetClaims(b, be.open, nodes, items, 0)
				b.ReportMetric(raw, "raw-grants/s")
				b.ReportMetric(claims, "claims/s")
				b.ReportMetric(claims/raw, "claims/raw")
				b.ReportMetric(perClaim, "reqs/claim")
			}
		})
	}
}

// BenchmarkFleetClaimsUnderRenewals is BenchmarkFleetClaims on a store
// that also keeps 4,200 other leases alive, renewed every TTL/3 by 8 more
// holders: the steady state of the fleet sim at 5,000 repositories, where
// a dead node's 800 items are claimed while the survivors renew theirs.
// It logs the renewals per second and fails if a background lease was
// lost. etcd runs twice: as configured by default, and with
// lease.WithoutRowExpiry (renewals write nothing), as the fleet runs it.
//
//	go test -run '^$' -bench FleetClaimsUnderRenewals -benchtime 1x ./lease/agent/
func BenchmarkFleetClaimsUnderRenewals(b *testing.B) {
	const (
		nodes = 8
		items = 800
		held  = 4200
	)
	for _, be := range []struct {
		name string
		open func(b *testing.B, opts []lease.Option) loadBackend
	}{{"redis", redisLoad}, {"etcd", etcdLoad}, {"etcd-without-row-expiry", func(b *testing.B, opts []lease.Option) loadBackend {
		return etcdLoad(b, append(opts, lease.WithoutRowExpiry()))
	}}} {
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				claims, perClaim := fleetClaims(b, be.open, nodes, items, held)
				b.ReportMetric(claims, "claims/s")
				b.ReportMetric(perClaim, "reqs/claim")
			}
		})
	}
}

// claimOpts are the store options of the fleet sim.
func claimOpts() []lease.Option {
	return []lease.Option{lease.WithTTL(4 * time.Second), lease.WithAuctionWindow(time.Second), lease.WithMaxBids(2)}
}

func putCatalog(b *testing.B, s lease.Store, items, maxBids int) {
	b.Helper()
	forEach(b, items, func(i int) error {
		return s.Put(context.Background(), lease.Item{ID: fmt.Sprintf("repo-%05d", i), Size: 1 << 10, MaxBids: maxBids})
	})
}

// startManagers runs n Managers, the i-th on node(i) (which it closes
// when the manager stops) with opts(i, that store), until stop.
func startManagers(b *testing.B, n int, node func(i int) listingStore, opts func(i int, s listingStore) []agent.Option) (ms []*agent.Manager, stop func()) {
	b.Helper()
	ms = make([]*agent.Manager, n)
	runCtx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for i := range n {
		s := node(i)
		m, err := agent.NewManager(s, fmt.Sprintf("node-%d", i), opts(i, s)...)
		if err != nil {
			cancel()
			running.Wait()
			s.Close()
			b.Fatal(err)
		}
		ms[i] = m
		running.Go(func() {
			defer s.Close()
			if err := m.Run(runCtx); err != nil {
				b.Error(err)
			}
		})
	}
	return ms, func() { cancel(); running.Wait() }
}

// heldBy is the number of leases ms hold.
func heldBy(ms []*agent.Manager) int {
	n := 0
	for _, m := range ms {
		n += len(m.Held())
	}
	return n
}

// forEach calls f for 0..n-1 from 16 goroutines and fails b on the first
// error.
func forEach(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if err := f(i); err != nil {
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
}

// rawGrants returns the grants per second of nodes goroutines, each with
// a store of its own, bidding once on each of its share of the items.
func rawGrants(b *testing.B, open func(*testing.B, []lease.Option) loadBackend, nodes, items int) float64 {
	b.Helper()
	be := open(b, claimOpts())
	putCatalog(b, be.admin, items, 1)
	stores := make([]lease.Store, nodes)
	for i := range stores {
		stores[i] = be.node(i)
		defer stores[i].Close()
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	t0 := time.Now()
	for n := range nodes {
		wg.Go(func() {
			for i := n; i < items; i += nodes {
				res, err := stores[n].Bid(context.Background(), fmt.Sprintf("repo-%05d", i), fmt.Sprintf("node-%d", n), 1<<30)
				if err != nil || res.Result == nil || res.Result.Outcome != lease.Granted {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(t0)
	if n := failed.Load(); n > 0 {
		b.Fatalf("raw grants: %d of %d bids did not grant at once", n, items)
	}
	b.Logf("raw: %d grants by %d goroutines in %v", items, nodes, d.Round(time.Millisecond))
	return float64(items) / d.Seconds()
}

// fleetClaims runs nodes Managers over a fresh catalog of items and
// returns the claims per second until every item is held, and the store
// requests per claim.
// With background > 0 it first grants that many other items to nodes
// more holders, which renew them every TTL/3 until it returns.
func fleetClaims(b *testing.B, open func(*testing.B, []lease.Option) loadBackend, nodes, items, background int) (perSec, perClaim float64) {
	b.Helper()
	var started, short, timed, placed atomic.Int64
	var rejected sync.Map // reason -> *atomic.Int64
	hooks := lease.Hooks{
		AuctionStarted:        func(string, uint64) { started.Add(1) },
		AuctionShortCircuited: func(lease.AuctionResult) { short.Add(1) },
		AuctionTimedOut:       func(lease.AuctionResult) { timed.Add(1) },
		BidPlaced:             func(string, string, int64) { placed.Add(1) },
		BidRejected: func(_, _ string, reason error) {
			c, _ := rejected.LoadOrStore(reason.Error(), new(atomic.Int64))
			c.(*atomic.Int64).Add(1)
		},
	}
	be := open(b, append(claimOpts(), lease.WithHooks(hooks)))
	putCatalog(b, be.admin, items, 0)
	stopRenewing := renewBackground(b, be, nodes, background)
	defer stopRenewing()
	var windows, closedN, scans atomic.Int64
	n0, cpu0 := be.count(), be.cpu()
	t0 := time.Now()
	ms, stop := startManagers(b, nodes, be.node, func(int, listingStore) []agent.Option {
		return []agent.Option{
			agent.WithIndexer(nopIndexer{}), agent.WithTTL(4 * time.Second), agent.WithBudget(1 << 30),
			agent.WithScanInterval(100 * time.Millisecond), agent.WithHeartbeatInterval(500 * time.Millisecond),
			agent.WithDrainTimeout(-1), agent.WithHooks(agent.Hooks{
				BidClosed: func(_ string, w time.Duration) { windows.Add(int64(w)); closedN.Add(1) },
				Scanned:   func(agent.Signals) { scans.Add(1) },
			})}
	})
	defer stop()
	held := func() int { return heldBy(ms) }
	deadline := t0.Add(5 * time.Minute)
	for held() < items {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d items held after 5 minutes", held(), items)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d := time.Since(t0)
	reqs := be.count() - n0
	b.Logf("store server CPU: %.0f%% of one core", 100*(be.cpu()-cpu0)/d.Seconds())
	b.Logf("fleet: %d items claimed by %d managers in %v, %d store requests", items, nodes, d.Round(time.Millisecond), reqs)
	b.Logf("auctions: %d opened, %d short-circuited, %d timed out; bids: %d placed", started.Load(), short.Load(), timed.Load(), placed.Load())
	b.Logf("bid windows: %d, mean %v, %.0f%% of the nodes' time; %d scans", closedN.Load(), time.Duration(windows.Load()/max(1, closedN.Load())), 100*float64(windows.Load())/float64(d)/float64(nodes), scans.Load())
	rejected.Range(func(k, v any) bool { b.Logf("  rejected %v: %d", k, v.(*atomic.Int64).Load()); return true })
	return float64(items) / d.Seconds(), float64(reqs) / float64(items)
}

// renewBackground grants n items (other than putCatalog's) to holders
// with stores of their own, one bid each, and renews each holder's leases
// every TTL/3 from its first grant, as a Manager does, until the returned
// function is called, which logs the renewal rate and fails b if a
// renewal failed.
func renewBackground(b *testing.B, be loadBackend, holders, n int) (stop func()) {
	b.Helper()
	if n == 0 {
		return func() {}
	}
	ctx := context.Background()
	forEach(b, n, func(i int) error {
		return be.admin.Put(ctx, lease.Item{ID: fmt.Sprintf("held-%05d", i), Size: 1 << 10, MaxBids: 1})
	})
	runCtx, cancel := context.WithCancel(ctx)
	var renewed, lost atomic.Int64
	var wg, granting sync.WaitGroup
	t0 := time.Now()
	for h := range holders {
		s := be.node(backgroundNode + h)
		granting.Add(1)
		wg.Go(func() {
			defer s.Close()
			var refs []lease.Ref
			renew := func() bool {
				rs, err := s.Renew(runCtx, refs...)
				if err != nil {
					if runCtx.Err() == nil {
						b.Errorf("background renew: %v", err)
					}
					return false
				}
				for _, r := range rs {
					if r.Err != nil {
						lost.Add(1)
					} else {
						renewed.Add(1)
					}
				}
				return true
			}
			tick := time.NewTicker(4 * time.Second / 3)
			defer tick.Stop()
			// Grant this holder's share, renewing what it holds on time.
			for i := h; i < n; i += holders {
				select {
				case <-tick.C:
					if !renew() {
						granting.Done()
						return
					}
				default:
				}
				res, err := s.Bid(runCtx, fmt.Sprintf("held-%05d", i), fmt.Sprintf("holder-%d", h), 1<<30)
				if err != nil || res.Result == nil || res.Result.Outcome != lease.Granted {
					b.Errorf("background grant of held-%05d: %+v, %v", i, res, err)
					granting.Done()
					return
				}
				refs = append(refs, res.Result.Grant.Ref)
			}
			granting.Done()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-tick.C:
				}
				if !renew() {
					return
				}
			}
		})
	}
	granting.Wait()
	b.Logf("background: %d leases granted in %v", n, time.Since(t0).Round(time.Millisecond))
	return func() {
		cancel()
		wg.Wait()
		d := time.Since(t0)
		b.Logf("background: %d leases by %d holders, %.0f renewals/s, %d failed", n, holders, float64(renewed.Load())/d.Seconds(), lost.Load())
		if lost.Load() > 0 {
			b.Errorf("%d background renewals failed", lost.Load())
		}
	}
}

// backgroundNode numbers the background holders' stores after the
// managers'.
const backgroundNode = 100
