package localpool_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// shardAds is each publisher's chain length in the sharded tests.
const shardAds = 60

// shardStart starts a sharded pool in processes mode: 4 query nodes with
// R = 2, two ingest nodes, two publishers that publish shardAds ads
// (with removals and metadata updates), and waits until the front end
// answers their whole truth. It returns the pool and that truth, which
// no longer moves: a stable set that every later lookup must answer in
// full.
func shardStart(ctx context.Context, t *testing.T, tweak func(*localpool.Config)) (*localpool.Pool, localpool.Truth) {
	t.Helper()
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Processes: true,
		Interval: 100 * time.Millisecond, Entries: 20, MaxAds: shardAds, RemoveEvery: 5, UpdateEvery: 3,
		PollInterval: 200 * time.Millisecond,
		Sharded:      &localpool.Sharded{QueryNodes: 4, Replication: 2, BatchBytes: 16 << 10},
		Log:          testLog{t}, LogLevel: 4,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	p := convStart(ctx, t, cfg)
	convSettled(ctx, t, p, shardAds)
	c, err := convWaitComplete(ctx, p)
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first publishers indexed: %v", c)
	return p, truth
}

// prober asks the front end for a stable set again and again until
// stopped, and records every round that was not complete: a lookup for
// an indexed multihash must never come back incomplete, partial or
// failed.
type prober struct {
	p      *localpool.Pool
	set    []publishernode.Entry
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	rounds int
	bad    []string
}

func startProber(p *localpool.Pool, set []publishernode.Entry) *prober {
	set = everyThird(set) // quick rounds, even under -race
	pr := &prober{p: p, set: set, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		for {
			select {
			case <-pr.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			c := p.Check(ctx, set)
			cancel()
			pr.mu.Lock()
			pr.rounds++
			if !c.OK() || c.Partial > 0 {
				pr.bad = append(pr.bad, c.String()+": "+strings.Join(c.Examples, "; "))
			}
			pr.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return pr
}

// finish stops the prober and fails t for every incomplete round.
func (pr *prober) finish(t *testing.T, what string) {
	t.Helper()
	close(pr.stop)
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.rounds < 2 {
		t.Errorf("%s: only %d probe rounds", what, pr.rounds)
	}
	for i, b := range pr.bad {
		if i == 5 {
			t.Errorf("... %d more", len(pr.bad)-5)
			break
		}
		t.Errorf("%s: an incomplete round of %d: %s", what, pr.rounds, b)
	}
	t.Logf("%s: %d probe rounds of %d multihashes, %d incomplete", what, pr.rounds, len(pr.set), len(pr.bad))
}

// shardFinal waits for the whole truth through the front end and checks
// each query node on its own: exactly its keys, once, nothing stale.
func shardFinal(ctx context.Context, t *testing.T, p *localpool.Pool) {
	t.Helper()
	c, err := convWaitComplete(ctx, p)
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	t.Logf("front end at the end: %v", c)
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Layout()
	if err != nil {
		t.Fatal(err)
	}
	// Every query node ready and every outbox delivered: a node restarted
	// late may still be catching up when the front end is already
	// complete through the other owners.
	for deadline := time.Now().Add(60 * time.Second); ; {
		st, err := p.ShardSnapshot(ctx)
		if err != nil {
			st = &localpool.ShardState{}
		}
		settled := err == nil
		for _, q := range st.Query {
			settled = settled && q.Ready
		}
		for _, s := range st.Ingest {
			for _, o := range s.Owners {
				settled = settled && o.Pending == 0
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query layer did not settle: %+v %+v", st.Query, st.Ingest)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, name := range l.Current {
		qc, err := p.CheckQueryNode(ctx, name, truth.Queries())
		if err != nil {
			t.Fatal(err)
		}
		if !qc.OK() || qc.Multihashes == 0 {
			t.Errorf("%s on its own keys: %v %v", name, qc, qc.Examples)
			if st, err := p.ShardSnapshot(ctx); err == nil {
				t.Logf("query nodes: %+v", st.Query)
				t.Logf("ingest nodes: %+v", st.Ingest)
			}
			t.Logf("%s:\n%s", name, lines(p.LogLines(name)))
		}
	}
}

// TestShardedKills: a query node killed (SIGKILL) while two more
// publishers are ingested, then an ingest node killed in the middle of
// its batches. Lookups of what was indexed stay complete throughout;
// after the restarts every query node catches up from the outboxes and
// holds exactly the truth of its keys.
func TestShardedKills(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	// No removals or metadata updates: what was once in the truth stays
	// there with the same values, so a set taken while the victim is down
	// can be probed after its restart. TestShardedJoinLeave has them.
	p, stable := shardStart(ctx, t, func(c *localpool.Config) { c.RemoveEvery, c.UpdateEvery = -1, -1 })
	pr := startProber(p, stable.Queries())

	// More publishers: ingestion goes on while the nodes die.
	if _, err := p.AddPublishers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitFor(ctx, "the new publishers ingesting", func(s *localpool.Snapshot) bool {
		return len(s.Publishers) == 4 && s.Publishers[3].Ads >= 10
	}); err != nil {
		t.Fatal(err)
	}
	victim := localpool.QueryName(1)
	if err := p.Kill(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s", victim)
	// What is indexed while it is down: complete through the other
	// owners now, and still complete while the victim catches up after
	// its restart, because it answers no find until it has.
	time.Sleep(3 * time.Second)
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, e := range stable.Entries {
		old[e.Multihash] = true
	}
	var down []publishernode.Entry
	for _, e := range truth.Entries {
		if !old[e.Multihash] {
			down = append(down, e)
		}
	}
	// The truth is what the publishers have published; under a loaded
	// CI machine ingestion can trail it by tens of seconds.
	deadline := time.Now().Add(60 * time.Second)
	for c := p.Check(ctx, down); !c.OK(); c = p.Check(ctx, down) {
		if time.Now().After(deadline) {
			if st, err := p.ShardSnapshot(ctx); err == nil {
				t.Logf("query nodes: %+v", st.Query)
				t.Logf("ingest nodes: %+v", st.Ingest)
			}
			t.Fatalf("what was published while %s was down is not answered in full after 60 s: %v %v", victim, c, c.Examples)
		}
		time.Sleep(200 * time.Millisecond)
	}
	catchUp := startProber(p, down)
	if err := p.Start(ctx, victim); err != nil {
		t.Fatal(err)
	}

	// An ingest node killed in the middle of its work.
	ingest := localpool.IndexerName(1)
	if _, err := p.WaitFor(ctx, "more ads", func(s *localpool.Snapshot) bool { return s.Publishers[3].Ads >= 25 }); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(ingest); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s", ingest)
	time.Sleep(time.Second)
	if err := p.Start(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	convSettled(ctx, t, p, shardAds)
	pr.finish(t, "kills")
	catchUp.finish(t, "indexed while "+victim+" was down")
	shardFinal(ctx, t, p)
}

// TestShardedJoinLeave adds a fifth query node while more publishers are
// ingested, then removes one of the first four: lookups stay complete
// throughout, and at the end each node holds exactly its keys.
func TestShardedJoinLeave(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	shardedJoinLeave(t, nil)
}

// TestShardedJoinLeaveOnEtcd is TestShardedJoinLeave with the layout in
// an etcd member the pool starts: every role watches it and reports its
// status there, and the pool's coordinator is elected.
func TestShardedJoinLeaveOnEtcd(t *testing.T) {
	lane.Integration(t, "starts a whole pool and etcd")
	needEtcd(t)
	shardedJoinLeave(t, func(c *localpool.Config) { c.Sharded.Etcd = localpool.EtcdStart })
}

// needEtcd skips the test without the etcd binary (fails it under CI).
// (internal/testbed/etcdtest cannot be used here: it links etcd's Go
// client, whose protobuf files clash with go-libp2p-pubsub's.)
func needEtcd(t *testing.T) {
	if !localpool.EtcdAvailable() {
		if os.Getenv("CI") != "" {
			t.Fatal("no etcd binary (Debian: apt-get install etcd-server)")
		}
		t.Skip("no etcd binary (Debian: apt-get install etcd-server)")
	}
}

func shardedJoinLeave(t *testing.T, tweak func(*localpool.Config)) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	p, stable := shardStart(ctx, t, tweak)
	if tweak != nil && !p.OnEtcd() {
		t.Fatalf("the pool's layout is %s, not on etcd", p.LayoutSpec())
	}
	pr := startProber(p, stable.Queries())
	if _, err := p.AddPublishers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var steps []string
	log := func(a keyspace.Action) { steps = append(steps, a.Kind.String()+" "+a.Why) }
	name, err := p.AddQueryNode(ctx, log)
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	t.Logf("added %s: %s", name, strings.Join(steps, "; "))
	steps = nil
	if err := p.RemoveQueryNode(ctx, localpool.QueryName(2), log); err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	t.Logf("removed %s: %s", localpool.QueryName(2), strings.Join(steps, "; "))
	l, err := p.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if l.Phase != keyspace.PhaseStable || len(l.Current) != 4 {
		t.Fatalf("layout after the changes: %+v", l)
	}
	convSettled(ctx, t, p, shardAds)
	pr.finish(t, "join and leave")
	shardFinal(ctx, t, p)
}

// TestShardedInProcess runs a small sharded pool in goroutines, as the
// demo does, and adds an ingest node and publishers for it: the new node
// joins the layout's writers in a new epoch, and everything published is
// answered in full.
func TestShardedInProcess(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 1, Indexers: 1,
		Interval: 100 * time.Millisecond, Entries: 10, MaxAds: 30,
		PollInterval: 200 * time.Millisecond,
		Sharded:      &localpool.Sharded{QueryNodes: 3, Replication: 2, Store: "memory"},
		Log:          testLog{t}, LogLevel: 4,
	}
	p := convStart(ctx, t, cfg)
	name, err := p.AddIndexer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.Writers, name) || l.Epoch != 2 {
		t.Fatalf("layout after adding %s: epoch %d, writers %v", name, l.Epoch, l.Writers)
	}
	if _, err := p.AddPublishers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	convSettled(ctx, t, p, 30)
	shardFinal(ctx, t, p)
	st, err := p.ShardSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range st.Query {
		if !q.Up || !q.Ready || q.Epoch != l.Epoch {
			t.Errorf("query node %+v", q)
		}
	}
	if len(st.Ingest) != 2 {
		t.Errorf("ingest nodes reporting: %v", st.Ingest)
	}
}

// everyThird keeps every third entry: enough keys of every query node's.
func everyThird(es []publishernode.Entry) []publishernode.Entry {
	var out []publishernode.Entry
	for i := 0; i < len(es); i += 3 {
		out = append(out, es[i])
	}
	return out
}

// TestShardedProbes probes a sharded pool as the demo does: each probe
// asks the query nodes that own its key (the index lives there, not on
// the ingest nodes), names them as holding it, and leaves no error in
// the ingest nodes' logs.
func TestShardedProbes(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const repl = 2
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 1, Indexers: 1,
		Interval: 100 * time.Millisecond, Entries: 10, MaxAds: 10,
		PollInterval: 200 * time.Millisecond,
		Sharded:      &localpool.Sharded{QueryNodes: 3, Replication: repl, Store: "memory"},
		Log:          testLog{t}, LogLevel: 4,
	}
	p := convStart(ctx, t, cfg)
	convSettled(ctx, t, p, 10)
	if _, err := convWaitComplete(ctx, p); err != nil {
		t.Fatal(err)
	}
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queries := p.QueryNodes()
	for _, e := range everyThird(truth.Entries) {
		pr := p.Probe(ctx, e)
		if pr.Err != "" || !pr.Complete {
			t.Errorf("probe %s: %+v", e.Multihash, pr)
		}
		if len(pr.HeldBy) != repl {
			t.Errorf("probe %s: held by %v, want its %d owners among the query nodes", e.Multihash, pr.HeldBy, repl)
		}
		for _, h := range pr.HeldBy {
			if !slices.Contains(queries, h) {
				t.Errorf("probe %s: held by %s, not a query node (%v)", e.Multihash, h, queries)
			}
		}
	}
	for _, name := range p.Indexers() {
		for _, l := range p.LogLines(name) {
			if strings.Contains(l, "index lives on the query nodes") {
				t.Errorf("%s was asked for the index: %s", name, l)
			}
		}
	}
}
