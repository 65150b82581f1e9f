package agent_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// BenchmarkFleetLoad measures what a fleet costs its lease store in
// steady state: 8 Managers with a no-op indexer over one catalog of 5,000
// items, every item held, TTL 10s and 250ms scans as in examples/fleet.
// It runs the fleet in one process, first scanning by listing every row
// (an item source that hides Watch, as before the change feed), then on
// the feed, and reports the requests each node sends per second over 10s
// of steady state (35s for the second feed run), and the ratios. On Redis
// a go-redis hook on each node's own client counts the commands (a
// pipeline counts each of its commands); on etcd (one member the
// benchmark starts) the server counts the messages it receives
// (grpc_server_msg_received_total: unary calls and stream messages), all
// nodes together, divided by the nodes.
// The feed runs twice: with the default reconciliation (half the TTL,
// 5s here: a listing of 5,000 rows every 5s dominates its cost) and with
// a 30s one (the view's expiries of held items go stale between listings,
// and nodes bid on them, each refused bid confirmed by one Get). It takes
// a minute or two a backend; run it alone:
//
//	go test -run '^$' -bench FleetLoad -benchtime 1x ./lease/agent/
func BenchmarkFleetLoad(b *testing.B) {
	const (
		nodes   = 8
		items   = 5000
		ttl     = 10 * time.Second
		measure = 10 * time.Second
	)
	for _, be := range []struct {
		name string
		open func(b *testing.B, opts []lease.Option) loadBackend
	}{{"redis", redisLoad}, {"etcd", etcdLoad}} {
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				run := func(measure time.Duration, feed bool, reconcile time.Duration) float64 {
					return fleetLoad(b, be.open, nodes, items, ttl, measure, feed, reconcile)
				}
				scan := run(measure, false, 0)
				feed := run(measure, true, 0)
				// Over 35s, so that one listing and the stale stretch fall in it.
				feed30 := run(35*time.Second, true, 30*time.Second)
				b.ReportMetric(scan, "scan-reqs/s/node")
				b.ReportMetric(feed, "feed-reqs/s/node")
				b.ReportMetric(scan/feed, "scan/feed")
				b.ReportMetric(feed30, "feed30s-reqs/s/node")
				b.ReportMetric(scan/feed30, "scan/feed30s")
			}
		})
	}
}

// loadBackend is one catalog for fleetLoad: a store to set it up with, a
// store of its own for each node, and the requests the nodes sent so far.
type loadBackend struct {
	admin lease.Store
	node  func(i int) listingStore
	count func() int64
	cpu   func() float64 // the server's CPU seconds so far
}

type listingStore interface {
	lease.Store
	lease.Lister
}

func redisLoad(b *testing.B, opts []lease.Option) loadBackend {
	admin := redistest.Client(b, redistest.Addr())
	prefix := redistest.Prefix(b, admin, "load")
	as, err := leaseredis.New(admin, prefix, opts...)
	if err != nil {
		b.Fatal(err)
	}
	var counters []*cmdCounter
	return loadBackend{
		admin: as,
		node: func(int) listingStore {
			c := goredis.NewClient(&goredis.Options{Addr: redistest.Addr(), MaxRetries: -1})
			b.Cleanup(func() { _ = c.Close() })
			cc := &cmdCounter{}
			counters = append(counters, cc)
			c.AddHook(cc)
			s, err := leaseredis.New(c, prefix, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		count: func() int64 {
			var n int64
			for _, c := range counters {
				n += c.n.Load()
			}
			return n
		},
		cpu: func() float64 {
			info, err := admin.Info(context.Background(), "cpu").Result()
			if err != nil {
				b.Fatal(err)
			}
			var sec float64
			for line := range strings.SplitSeq(info, "\n") {
				k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
				if k == "used_cpu_sys" || k == "used_cpu_user" {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						b.Fatal(err)
					}
					sec += f
				}
			}
			return sec
		},
	}
}

func etcdLoad(b *testing.B, opts []lease.Option) loadBackend {
	cl := etcdtest.Start(b)
	eps := cl.Endpoints()
	admin := etcdtest.Client(b, eps...)
	prefix := etcdtest.Prefix(b, admin, "load")
	as, err := leaseetcd.New(admin, prefix, opts...)
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	return loadBackend{
		admin: as,
		node: func(int) listingStore {
			s, err := leaseetcd.New(etcdtest.Client(b, eps...), prefix, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		count: func() int64 {
			var n int64
			for _, ep := range eps {
				m, err := etcdtest.Received(context.Background(), hc, ep)
				if err != nil {
					b.Fatal(err)
				}
				n += m
			}
			return n
		},
		cpu: func() float64 {
			var sec float64
			for _, ep := range eps {
				v, err := etcdtest.Metric(context.Background(), hc, ep, "process_cpu_seconds_total")
				if err != nil {
					b.Fatal(err)
				}
				sec += v
			}
			return sec
		},
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
func fleetLoad(b *testing.B, open func(*testing.B, []lease.Option) loadBackend, nodes, items int, ttl, measure time.Duration, feed bool, reconcile time.Duration) float64 {
	b.Helper()
	ctx := context.Background()
	opts := []lease.Option{lease.WithTTL(ttl), lease.WithAuctionWindow(2 * time.Second)}
	be := open(b, opts)
	as := be.admin
	// Every item granted to a node up front (one-bid auctions), so the
	// fleet starts in steady state: each manager picks its grants up at its
	// first scan.
	forEach(b, items, func(i int) error {
		id := fmt.Sprintf("repo-%05d", i)
		if err := as.Put(ctx, lease.Item{ID: id, MaxBids: 1}); err != nil {
			return err
		}
		_, err := as.Bid(ctx, id, fmt.Sprintf("node-%d", i%nodes), 1<<20)
		return err
	})

	ms, stop := startManagers(b, nodes, be.node, func(_ int, s listingStore) []agent.Option {
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
		return mopts
	})
	defer stop()
	held := func() int { return heldBy(ms) }
	deadline := time.Now().Add(3 * ttl)
	for held() < items {
		if time.Now().After(deadline) {
			b.Fatalf("feed %v: %d of %d items held after %v", feed, held(), items, ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Let the start settle: every manager marks its items Ready, and on a
	// feed each of those 5,000 changes reaches every node (on etcd, with a
	// read of the row per node). Steady state is when two 2s windows in a
	// row differ by less than a fifth (at most 40s).
	rate := func() float64 {
		n0, t0 := be.count(), time.Now()
		time.Sleep(2 * time.Second)
		return float64(be.count()-n0) / time.Since(t0).Seconds()
	}
	for prev, i := rate(), 0; i < 20; i++ {
		r := rate()
		if r < 1.2*prev && prev < 1.2*r {
			break
		}
		prev = r
	}
	before, cpu0, began := be.count(), be.cpu(), time.Now()
	time.Sleep(measure)
	secs := time.Since(began).Seconds()
	per := float64(be.count()-before) / secs / float64(nodes)
	cpuPer := (be.cpu() - cpu0) / secs / float64(nodes) * 1000
	if h := held(); h != items {
		b.Errorf("feed %v: %d of %d items held at the end of the measurement", feed, h, items)
	}
	b.Logf("feed %v (reconcile %v): %.0f requests/s per node over %v, server CPU %.1f ms/s per node, %d items held by %d nodes",
		feed, reconcile, per, measure, cpuPer, items, nodes)
	return per
}
