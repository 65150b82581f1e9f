package coordcmd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/netproxy"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// watchdog runs probe rounds and epoch checks on y until stopped: every
// round, each ready read owner of a delivered key must hold it, and no
// two processes may act on epochs more than one apart (read from the
// processes themselves).
type watchdog struct {
	mu       sync.Mutex
	bad      []string
	rounds   int
	partials int
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

func watch(y *layer, keys []string, probe func() ([]string, int)) *watchdog {
	d := &watchdog{stop: make(chan struct{})}
	// A test that fails before end still stops the probes before it
	// completes: a probe's Errorf after that panics the whole binary.
	y.t.Cleanup(d.halt)
	d.wg.Go(func() {
		for {
			select {
			case <-d.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			missing, partial := probe()
			lo, hi := y.spread()
			d.mu.Lock()
			d.rounds++
			d.partials += partial
			d.bad = append(d.bad, missing...)
			if hi > lo+1 {
				d.bad = append(d.bad, fmt.Sprintf("processes at epochs %d and %d", lo, hi))
			}
			d.mu.Unlock()
		}
	})
	return d
}

// halt stops the probes and waits for the one under way.
func (d *watchdog) halt() {
	d.once.Do(func() { close(d.stop) })
	d.wg.Wait()
}

func (d *watchdog) end(t *testing.T) {
	t.Helper()
	d.halt()
	if len(d.bad) > 0 {
		t.Fatalf("%d broken promises in %d rounds, first: %v", len(d.bad), d.rounds, d.bad[:min(5, len(d.bad))])
	}
}

// TestEtcdLeaderKilledMidJoin: the etcd leader of a 3-member cluster is
// SIGKILLed while a join copies; the coordinator and every process go on
// through the other members, and the join finishes with nothing lost.
func TestEtcdLeaderKilledMidJoin(t *testing.T) {
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/coordinator")
	c := etcdtest.Start(t, etcdtest.WithMembers(3))
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "leaderkill")
	st := storeAt(t, prefix, c.Endpoints()...)
	y := newLayer(t, st, 3)
	keys := y.put(0, 2000)
	y.drained()
	q4url := "http://" + freeAddr(t)
	l, _, _ := st.Load(context.Background())
	y.startQ("q4", q4url, l)
	var hosts []string
	for _, e := range c.Endpoints() {
		hosts = append(hosts, strings.TrimPrefix(e, "http://"))
	}
	spec := "etcd://" + strings.Join(hosts, ",") + "/" + prefix
	t.Setenv("INDEXKIT_SHARD_TOKEN", token)
	d := watch(y, nil, func() ([]string, int) { return y.probe(keys) })
	a := proctest.Start(t, bin, "-layout", spec, "-join", "q4="+q4url, "-ttl", "2s", "-poll", "50ms", "-id", "A")
	waitPhase(t, st, keyspace.PhaseCopy)
	leader, err := c.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("etcd leader %s SIGKILLed in phase copy", leader.Name)
	if code := a.Wait(60 * time.Second); code != 0 {
		t.Fatalf("coordinator exited %d:\n%s", code, a.Output())
	}
	d.end(t)
	final, _, err := st.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if final.Phase != keyspace.PhaseStable || !slices.Contains(final.Current, "q4") {
		t.Fatalf("the join did not finish: epoch %d %s %v", final.Epoch, final.Phase, final.Current)
	}
	y.drained()
	exact(t, y, final, keys)
	t.Logf("join finished %v after the leader died; %d probe rounds, %d partial, none incomplete, epochs never more than one apart", time.Since(killed).Round(time.Millisecond), d.rounds, d.partials)
}

// TestQueryNodePartitionedFromEtcd: a query node of the ring (q1) loses
// etcd (its client's connections paused) while a join is under way. Its
// presence expires, so the coordinator waits for it instead of moving on;
// once it is back, the join finishes. No process ever runs more than one
// epoch apart, and probes stay complete.
func TestQueryNodePartitionedFromEtcd(t *testing.T) {
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/coordinator")
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "partition")
	st := storeAt(t, prefix, c.Endpoints()...)
	// q1 reaches etcd only through a proxy the test pauses.
	px, err := netproxy.Listen(strings.TrimPrefix(c.Endpoints()[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	pst := storeAt(t, prefix, "http://"+px.Addr())

	y := newLayerVia(t, st, 3, map[string]*etcdlayout.Store{"q1": pst})
	keys := y.put(0, 2000)
	y.drained()
	q4url := "http://" + freeAddr(t)
	l, _, _ := st.Load(context.Background())
	y.startQ("q4", q4url, l)
	q1 := y.nodes["q1"]
	t.Setenv("INDEXKIT_SHARD_TOKEN", token)
	d := watch(y, nil, func() ([]string, int) { return y.probe(keys) })
	spec := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://") + "/" + prefix
	a := proctest.Start(t, bin, "-layout", spec, "-join", "q4="+q4url, "-ttl", "1s", "-poll", "50ms", "-id", "A")
	copyAt := waitPhase(t, st, keyspace.PhaseCopy)
	px.Pause()
	t.Logf("q1 cut off from etcd at epoch %d (copy)", copyAt.Epoch)
	// While q1 is away its status expires and the layout can move at
	// most one epoch past the one q1 acts on.
	deadline := time.Now().Add(3 * time.Second)
	var gone bool
	for time.Now().Before(deadline) {
		sts, _ := st.Statuses(context.Background())
		gone = !slices.ContainsFunc(sts, func(s keyspace.Status) bool { return s.Name == "q1" })
		cur, _, _ := st.Load(context.Background())
		if e := q1.node.Layout().Epoch; cur.Epoch > e+1 {
			t.Fatalf("the layout moved to epoch %d while q1, cut off, acts on %d", cur.Epoch, e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !gone {
		t.Fatal("q1's status did not expire in 3 s without etcd (TTL 1 s)")
	}
	held, _, _ := st.Load(context.Background())
	px.Resume()
	resumed := time.Now()
	if code := a.Wait(60 * time.Second); code != 0 {
		t.Fatalf("coordinator exited %d:\n%s", code, a.Output())
	}
	d.end(t)
	final, _, _ := st.Load(context.Background())
	if final.Phase != keyspace.PhaseStable || !slices.Contains(final.Current, "q4") {
		t.Fatalf("the join did not finish: epoch %d %s %v", final.Epoch, final.Phase, final.Current)
	}
	y.drained()
	exact(t, y, final, keys)
	t.Logf("layout held at epoch %d (%s) while q1 was away; join finished %v after it came back; %d probe rounds, none incomplete",
		held.Epoch, held.Phase, time.Since(resumed).Round(time.Millisecond), d.rounds)
}

func waitPhase(t *testing.T, st *etcdlayout.Store, ph keyspace.Phase) keyspace.Layout {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if l, _, err := st.Load(context.Background()); err == nil && l.Phase == ph {
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the layout never reached phase %s", ph)
	return keyspace.Layout{}
}
