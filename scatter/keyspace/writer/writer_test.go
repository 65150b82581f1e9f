package writer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

const token = "s3cret"

// qnode is a real query node over a memory store on a real listener,
// which a test can stop and start again on the same address and state.
type qnode struct {
	t     *testing.T
	name  string
	dir   string
	st    store.Store
	addr  string
	node  *querynode.Node
	srv   *http.Server
	stop  context.CancelFunc
	wg    sync.WaitGroup
	state keyspace.Layout
}

func startQ(t *testing.T, q *qnode, l keyspace.Layout) {
	t.Helper()
	// Group commit, as examples/query runs: a batch is answered applied
	// at once and made durable within the interval.
	n, err := querynode.New(querynode.Config{Name: q.name, Dir: q.dir, Store: q.st, Token: token, CommitInterval: 30 * time.Millisecond}, l)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", q.addr)
	if err != nil {
		t.Fatal(err)
	}
	q.node = n
	q.srv = &http.Server{Handler: n.Handler()}
	ctx, stop := context.WithCancel(context.Background())
	q.stop = stop
	q.wg.Add(2)
	go func() { defer q.wg.Done(); q.srv.Serve(ln) }()
	go func() { defer q.wg.Done(); n.Run(ctx) }()
}

// crash stops the node without its last commit: its positions on disk
// are those of its last commit, as after a kill.
func (q *qnode) crash() {
	q.srv.Close()
	q.stop()
	q.wg.Wait()
}

func (q *qnode) halt() {
	q.srv.Close()
	q.stop()
	q.wg.Wait()
	q.node.Close()
}

// cluster is n query nodes with R = 2 and one writer.
type cluster struct {
	layout keyspace.Layout
	q      []*qnode
	w      *writer.Writer
	ob     *outbox.Outbox
	obDir  string
	stopW  context.CancelFunc
	wg     sync.WaitGroup
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{layout: keyspace.Layout{Epoch: 1, Replication: 2, Vnodes: 64, Phase: keyspace.PhaseStable, Writers: []string{"w1"}}}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		q := &qnode{t: t, name: fmt.Sprintf("q%d", i+1), dir: t.TempDir(), st: memory.New(), addr: addr}
		c.q = append(c.q, q)
		c.layout.Nodes = append(c.layout.Nodes, keyspace.Node{Name: q.name, URL: "http://" + addr})
		c.layout.Current = append(c.layout.Current, q.name)
	}
	for _, q := range c.q {
		startQ(t, q, c.layout)
	}
	c.obDir = t.TempDir()
	ob, err := outbox.Open(c.obDir)
	if err != nil {
		t.Fatal(err)
	}
	c.ob = ob
	w, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob, Token: token,
		BatchBytes: 4 << 10, Heartbeat: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	c.w = w
	ctx, stop := context.WithCancel(context.Background())
	c.stopW = stop
	c.wg.Add(1)
	go func() { defer c.wg.Done(); w.Run(ctx) }()
	t.Cleanup(func() {
		c.stopW()
		c.wg.Wait()
		c.w.Close()
		c.ob.Close()
		for _, q := range c.q {
			if q.srv != nil {
				q.halt()
			}
		}
	})
	return c
}

// drained waits until the writer's outbox is empty towards every node.
func (c *cluster) drained(t *testing.T) {
	t.Helper()
	if err := c.w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := c.w.Status()
		pending := 0
		for _, o := range st.Owners {
			pending += o.Pending
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not delivered: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type world struct {
	// keepContexts turns context removals into puts, so that what a
	// node holds by mistake is not swept away by the next removal.
	keepContexts bool
	rng          *rand.Rand
	provs        []peer.ID
	mhs          []multihash.Multihash
	oracle       store.Store // a memory store given the same calls
}

func newWorld(t *testing.T, seed uint64) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 1)), oracle: memory.New()}
	for range 3 {
		_, pub, _ := crypto.GenerateEd25519Key(nil)
		id, _ := peer.IDFromPublicKey(pub)
		w.provs = append(w.provs, id)
	}
	for i := range 600 {
		mh, _ := multihash.Sum(fmt.Appendf(nil, "mh%d", i), multihash.SHA2_256, -1)
		w.mhs = append(w.mhs, mh)
	}
	return w
}

// step makes one random call on both st and the oracle.
func (w *world) step(t *testing.T, st store.Store) {
	ctx := context.Background()
	p := w.provs[w.rng.IntN(len(w.provs))]
	cx := []byte{byte('a' + w.rng.IntN(4))}
	md := []byte{0x80, 0x12, byte(w.rng.IntN(3))}
	pick := func(n int) []multihash.Multihash {
		out := make([]multihash.Multihash, 0, n)
		for range n {
			out = append(out, w.mhs[w.rng.IntN(len(w.mhs))])
		}
		return out
	}
	var do func(store.Store) error
	switch r := w.rng.IntN(100); {
	case r < 70:
		v, mhs := store.Value{ProviderID: p, ContextID: cx, Metadata: md}, pick(1+w.rng.IntN(40))
		do = func(s store.Store) error { return s.Put(ctx, v, mhs...) }
	case r < 82:
		mhs := pick(1 + w.rng.IntN(10))
		do = func(s store.Store) error { return s.Remove(ctx, p, cx, mhs...) }
	case r < 90:
		do = func(s store.Store) error {
			err := s.UpdateMetadata(ctx, p, cx, md)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			}
			return err
		}
	case r < 96 && !w.keepContexts:
		do = func(s store.Store) error { return s.RemoveProviderContext(ctx, p, cx) }
	case r < 96:
		v, mhs := store.Value{ProviderID: p, ContextID: cx, Metadata: md}, pick(1+w.rng.IntN(40))
		do = func(s store.Store) error { return s.Put(ctx, v, mhs...) }
	default:
		info := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: p}, LastError: fmt.Sprint("e", w.rng.IntN(9))}
		do = func(s store.Store) error { return s.PutProvider(ctx, info) }
	}
	if err := do(w.oracle); err != nil {
		t.Fatalf("oracle: %v", err)
	}
	if err := do(st); err != nil {
		t.Fatalf("writer: %v", err)
	}
}

// verify checks every query node against the oracle: each owner of a
// multihash holds exactly the oracle's values; no other node holds any.
func (w *world) verify(t *testing.T, c *cluster) {
	t.Helper()
	ctx := context.Background()
	p, err := keyspace.NewPlacement(c.layout)
	if err != nil {
		t.Fatal(err)
	}
	for _, mh := range w.mhs {
		want, err := w.oracle.Get(ctx, mh)
		if err != nil {
			t.Fatal(err)
		}
		owners := p.AppendReadOwners(nil, mh)
		for _, q := range c.q {
			i := p.Node(q.name)
			if i < 0 {
				continue // not in the layout (left)
			}
			got, err := q.st.Get(ctx, mh)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(owners, i) {
				if len(got) > 0 {
					t.Fatalf("%s holds %s without owning it: %v", q.name, mh.B58String(), got)
				}
				continue
			}
			if !sameValues(got, want) {
				t.Fatalf("%s, an owner of %s: got %v, want %v", q.name, mh.B58String(), got, want)
			}
		}
	}
	for info, err := range w.oracle.Providers(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range c.q {
			if p.Node(q.name) < 0 {
				continue
			}
			got, err := q.st.Provider(ctx, info.AddrInfo.ID)
			if err != nil || got.LastError != info.LastError {
				t.Fatalf("%s: provider %s = %+v, %v; want LastError %q", q.name, info.AddrInfo.ID, got, err, info.LastError)
			}
		}
	}
}

func sameValues(a, b []store.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, x.Equal) {
			return false
		}
	}
	return true
}

// TestDifferential: random writes through the Writer land on exactly the
// owners, as a memory store given the same calls holds them.
func TestDifferential(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := newCluster(t, 4)
			w := newWorld(t, seed)
			for i := range 1500 {
				w.step(t, c.w)
				if i%200 == 0 {
					if err := c.w.Flush(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.drained(t)
			w.verify(t, c)
		})
	}
}

// TestQueryNodeDown: a query node stops while writes go on; nothing is
// lost, and once it is back it catches up from the outbox.
func TestQueryNodeDown(t *testing.T) {
	c := newCluster(t, 4)
	w := newWorld(t, 7)
	for range 300 {
		w.step(t, c.w)
	}
	c.drained(t)
	down := c.q[1]
	down.halt()
	for range 600 {
		w.step(t, c.w)
	}
	if err := c.w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The other nodes get theirs; the one down waits in the outbox.
	time.Sleep(200 * time.Millisecond)
	if st := c.w.Status(); st.Owners[down.name].Pending == 0 || st.Owners[down.name].LastError == "" {
		t.Fatalf("nothing waits for the node that is down: %+v", st.Owners[down.name])
	}
	startQ(t, down, c.layout)
	if down.node.Ready() {
		// It may already have caught up; it must not be ready before.
		t.Log("ready at once")
	}
	c.drained(t)
	deadline := time.Now().Add(10 * time.Second)
	for !down.node.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node never became ready: %+v", down.node.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.verify(t, c)
}

// TestWriterRestart: a Writer closed with batches still undelivered and
// opened again over the same outbox delivers them.
func TestWriterRestart(t *testing.T) {
	c := newCluster(t, 3)
	w := newWorld(t, 11)
	for _, q := range c.q {
		q.halt()
	}
	for range 400 {
		w.step(t, c.w)
	}
	if err := c.w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.stopW()
	c.wg.Wait()
	c.w.Close()
	dir := t.TempDir()
	_ = dir
	for _, q := range c.q {
		startQ(t, q, c.layout)
	}
	w2, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: c.ob, Token: token,
		Heartbeat: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond}, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	c.w, c.stopW = w2, stop
	c.wg.Add(1)
	go func() { defer c.wg.Done(); w2.Run(ctx) }()
	c.drained(t)
	w.verify(t, c)
}

// TestWrongToken: a writer without the nodes' token delivers nothing and
// says why.
func TestWrongToken(t *testing.T) {
	c := newCluster(t, 3)
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	bad, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob, Token: "wrong", MinBackoff: 10 * time.Millisecond}, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); bad.Run(ctx) }()
	defer func() { stop(); <-done }()
	w := newWorld(t, 3)
	for range 50 {
		w.step(t, bad)
	}
	if err := bad.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := bad.Status().Owners["q1"]
		if st.LastError != "" {
			if st.Pending == 0 {
				t.Fatalf("batches acknowledged with a wrong token: %+v", st)
			}
			t.Logf("refused: %s", st.LastError)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery error with a wrong token: %+v", bad.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPutMetadataReachesEveryNode: a put with new metadata for a context
// replaces it on every multihash of the context, as a store's Put does,
// also on the query nodes that own none of the put's multihashes.
func TestPutMetadataReachesEveryNode(t *testing.T) {
	c := newCluster(t, 4)
	w := newWorld(t, 1)
	ctx := context.Background()
	p := w.provs[0]
	v1 := store.Value{ProviderID: p, ContextID: []byte("c"), Metadata: []byte{0x80, 0x12, 1}}
	v2 := store.Value{ProviderID: p, ContextID: []byte("c"), Metadata: []byte{0x80, 0x12, 2}}
	for _, s := range []store.Store{c.w, w.oracle} {
		if err := s.Put(ctx, v1, w.mhs[:200]...); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, v2, w.mhs[0]); err != nil {
			t.Fatal(err)
		}
	}
	c.drained(t)
	w.verify(t, c)
}

// TestQueryNodeCrashBeforeCommit: a query node that stops without
// committing what it applied answers, once back, from its last commit; the
// writer, which kept those batches until they were durable, sends them
// again and nothing is lost.
func TestQueryNodeCrashBeforeCommit(t *testing.T) {
	c := newCluster(t, 3)
	w := newWorld(t, 9)
	for range 300 {
		w.step(t, c.w)
	}
	c.drained(t)
	// Writes the nodes apply; then one node crashes before a commit can
	// follow (its commits come every 30 ms: the test stops it at once
	// after its last answer, and checks it lost something).
	victim := c.q[0]
	before := victim.node.Status().Writers["w1"]
	for range 400 {
		w.step(t, c.w)
	}
	if err := c.w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for victim.node.Status().Writers["w1"].Applied < c.ob.Status(victim.name).Head {
		if time.Now().After(deadline) {
			t.Fatal("the victim never applied the new batches")
		}
		time.Sleep(time.Millisecond)
	}
	victim.crash()
	t.Logf("victim applied %d → %d before the crash; outbox acked %d of %d",
		before.Applied, c.ob.Status(victim.name).Head, c.ob.Status(victim.name).Acked, c.ob.Status(victim.name).Head)
	startQ(t, victim, c.layout)
	c.drained(t)
	w.verify(t, c)
}
