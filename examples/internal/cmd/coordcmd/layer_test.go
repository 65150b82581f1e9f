package coordcmd_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

const token = "s3cret"

// layer is a keyspace layer whose processes follow an etcd layout: query
// nodes over memory stores on real listeners, and one writer, each
// watching the layout and keeping its status under a lease, as the
// reference binaries do with -layout etcd://. The coordinator under test
// is a real process; these run in the test's process so that the test
// can read their stores directly (its oracle).
type layer struct {
	t     *testing.T
	st    *etcdlayout.Store
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	nodes map[string]*qnode
	w     *writer.Writer
	prov  peer.ID
	// holds are gates of query nodes started after they are set, by
	// name: a test holds a change in a phase with them (see hold).
	holds map[string]hold
}

// hold keeps a query node from going on until gate is closed: by default
// every request to it waits; with path, only the requests to that path
// (a coordinator's [keyspace.PathDrop], say); with phase, no request but
// the node's taking of a layout of that phase, so that it goes on
// reporting the epoch before and a coordinator, which publishes nothing
// until every process reports the epoch in force, stays in that phase.
type hold struct {
	gate  <-chan struct{}
	path  string
	phase keyspace.Phase
}

type qnode struct {
	name string
	url  string
	st   store.Store
	node *querynode.Node
}

func newLayer(t *testing.T, st *etcdlayout.Store, nodes int) *layer {
	return newLayerVia(t, st, nodes, nil)
}

// newLayerVia is newLayer whose query nodes named in via follow the
// layout through the store given there (a client of their own).
func newLayerVia(t *testing.T, st *etcdlayout.Store, nodes int, via map[string]*etcdlayout.Store) *layer {
	ctx, stop := context.WithCancel(context.Background())
	y := &layer{t: t, st: st, ctx: ctx, stop: stop, nodes: map[string]*qnode{}}
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if y.prov, err = peer.IDFromPublicKey(pub); err != nil {
		t.Fatal(err)
	}
	l := keyspace.Layout{Epoch: 1, Replication: 2, Vnodes: 64, Phase: keyspace.PhaseStable, Writers: []string{"w1"}}
	for i := range nodes {
		name := fmt.Sprintf("q%d", i+1)
		l.Nodes = append(l.Nodes, keyspace.Node{Name: name, URL: "http://" + freeAddr(t)})
		l.Current = append(l.Current, name)
	}
	if _, err := st.Publish(ctx, 0, l); err != nil {
		t.Fatal(err)
	}
	for _, n := range l.Nodes {
		s := st
		if v := via[n.Name]; v != nil {
			s = v
		}
		y.startQOn(n.Name, n.URL, l, s)
	}
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	y.w, err = writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob, Token: token,
		BatchBytes: 4 << 10, Heartbeat: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, l)
	if err != nil {
		t.Fatal(err)
	}
	y.follow(keyspace.RoleIngest, "w1", y.w.SetLayout, y.w.Status)
	y.wg.Go(func() { y.w.Run(ctx) })
	t.Cleanup(func() {
		y.stop()
		y.wg.Wait()
		y.w.Close()
		ob.Close()
		for _, q := range y.nodes {
			q.node.Close()
		}
	})
	return y
}

// storeAt is a layout store of prefix on eps, closed at the end of the
// test.
func storeAt(t *testing.T, prefix string, eps ...string) *etcdlayout.Store {
	j, err := etcdjson.New(eps, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := etcdlayout.New(j, prefix)
	t.Cleanup(func() { s.Close(); j.Close() })
	return s
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startQ starts a query node named name at url, following the layout.
func (y *layer) startQ(name, url string, l keyspace.Layout) *qnode {
	return y.startQOn(name, url, l, y.st)
}

// startQOn is startQ with the node following the layout through st (a
// client of its own, behind a proxy, say).
func (y *layer) startQOn(name, url string, l keyspace.Layout, st *etcdlayout.Store) *qnode {
	t := y.t
	q := &qnode{name: name, url: url, st: memory.New()}
	n, err := querynode.New(querynode.Config{Name: name, Dir: t.TempDir(), Store: q.st, Token: token, CommitInterval: 30 * time.Millisecond}, l)
	if err != nil {
		t.Fatal(err)
	}
	q.node = n
	ln, err := net.Listen("tcp", url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	h, apply := n.Handler(), n.SetLayout
	switch hd, ok := y.holds[name]; {
	case ok && hd.phase != "":
		apply = func(l keyspace.Layout) error {
			if l.Phase == hd.phase {
				select {
				case <-hd.gate:
				case <-y.ctx.Done():
					return y.ctx.Err()
				}
			}
			return n.SetLayout(l)
		}
	case ok:
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hd.path == "" || r.URL.Path == hd.path {
				select {
				case <-hd.gate:
				case <-r.Context().Done():
					return
				}
			}
			inner.ServeHTTP(w, r)
		})
	}
	srv := &http.Server{Handler: h}
	y.wg.Go(func() { srv.Serve(ln) })
	y.wg.Go(func() { <-y.ctx.Done(); srv.Close() })
	y.wg.Go(func() { n.Run(y.ctx) })
	y.followOn(st, keyspace.RoleQuery, name, apply, n.Status)
	y.mu.Lock()
	y.nodes[name] = q
	y.mu.Unlock()
	return q
}

// follow has a process take each layout from etcd and keep its status
// there, until the layer stops.
func (y *layer) follow(role, name string, apply func(keyspace.Layout) error, status func() keyspace.Status) {
	y.followOn(y.st, role, name, apply, status)
}

func (y *layer) followOn(st *etcdlayout.Store, role, name string, apply func(keyspace.Layout) error, status func() keyspace.Status) {
	p, err := st.Join(y.ctx, etcdlayout.PresenceConfig{Role: role, Name: name, Status: status, TTL: time.Second, Interval: 20 * time.Millisecond})
	if err != nil {
		y.t.Fatal(err)
	}
	y.wg.Go(func() { <-y.ctx.Done(); p.Close() })
	y.wg.Go(func() { st.Watch(y.ctx, apply, nil) })
}

// spread returns the lowest and highest epoch any process of the layer
// acts on, read from the processes themselves.
func (y *layer) spread() (lo, hi uint64) {
	lo = y.w.Layout().Epoch
	hi = lo
	y.mu.Lock()
	defer y.mu.Unlock()
	for _, q := range y.nodes {
		e := q.node.Layout().Epoch
		lo, hi = min(lo, e), max(hi, e)
	}
	return lo, hi
}

// put writes n new multihashes through the writer and returns them.
func (y *layer) put(from, n int) []multihash.Multihash {
	out := make([]multihash.Multihash, 0, n)
	for i := from; i < from+n; i++ {
		mh, _ := multihash.Sum(fmt.Appendf(nil, "key-%d", i), multihash.SHA2_256, -1)
		out = append(out, mh)
	}
	v := store.Value{ProviderID: y.prov, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12, 0}}
	if err := y.w.Put(context.Background(), v, out...); err != nil {
		y.t.Fatal(err)
	}
	if err := y.w.Flush(context.Background()); err != nil {
		y.t.Fatal(err)
	}
	return out
}

// drained waits until the writer's outboxes are empty.
func (y *layer) drained() {
	y.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending := 0
		for _, o := range y.w.Status().Owners {
			pending += o.Pending
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			y.t.Fatalf("outbox not delivered: %+v", y.w.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// probe is a front end's lookup of each of mhs at the layout in force,
// read from etcd: the read owners in order, each skipped when down or not
// ready, the first ready one answering. It returns the keys a ready owner
// lacked (an incomplete answer that looks complete: never allowed) and
// how many had no ready owner (an answer marked partial).
func (y *layer) probe(mhs []multihash.Multihash) (missing []string, partial int) {
	l, _, err := y.st.Load(context.Background())
	if err != nil {
		y.t.Errorf("probe: %v", err)
		return nil, 0
	}
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		y.t.Errorf("probe: %v", err)
		return nil, 0
	}
	nodes := p.Nodes()
	y.mu.Lock()
	defer y.mu.Unlock()
	for _, mh := range mhs {
		asked := false
		for _, o := range p.AppendReadOwners(nil, mh) {
			q := y.nodes[nodes[o].Name]
			if q == nil || !q.node.Status().Ready {
				continue
			}
			asked = true
			vs, err := q.st.Get(context.Background(), mh)
			if err != nil || len(vs) == 0 {
				missing = append(missing, fmt.Sprintf("%s on %s at epoch %d (%s)", mh.B58String()[:12], q.name, l.Epoch, l.Phase))
			}
			break
		}
		if !asked {
			partial++
		}
	}
	return missing, partial
}
