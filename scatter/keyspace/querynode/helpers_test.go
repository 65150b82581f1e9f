package querynode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

const token = "s3cret"

func mhOf(t testing.TB, i int) multihash.Multihash {
	t.Helper()
	mh, err := multihash.Sum([]byte(fmt.Sprintf("key-%d", i)), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return mh
}

func provider(t testing.TB, i int) peer.ID {
	t.Helper()
	mh, err := multihash.Sum([]byte(fmt.Sprintf("provider-%d", i)), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return peer.ID(mh)
}

// backend opens a fresh store of the named kind in t.TempDir.
func backend(t testing.TB, kind string) store.Store {
	t.Helper()
	var st store.Store
	switch kind {
	case "memory":
		st = memory.New()
	case "pebble":
		s, err := pebble.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		st = s
	case "pebble-prefix":
		s, err := pebble.Open(t.TempDir(), pebble.WithDigestPrefixKeys())
		if err != nil {
			t.Fatal(err)
		}
		st = s
	case "pebble-nopop": // a query node's own: drops by ranges
		s, err := pebble.Open(t.TempDir(), pebble.WithDigestPrefixKeys(), pebble.WithSortedRuns(4<<20), pebble.WithoutPopulations())
		if err != nil {
			t.Fatal(err)
		}
		st = s
	default:
		t.Fatalf("unknown backend %q", kind)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// server is an httptest server on 127.0.0.1 whose handler can be swapped
// (a node restarted on the same address).
type server struct {
	*httptest.Server
	h atomic.Pointer[http.Handler]
}

func newServer(t testing.TB) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := s.h.Load()
		if h == nil {
			http.Error(w, "no node", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) set(h http.Handler) { s.h.Store(&h) }

// node is a running query node of a test.
type node struct {
	*querynode.Node
	name  string
	dir   string
	st    store.Store
	srv   *server
	stop  context.CancelFunc
	runWG sync.WaitGroup
}

func startNode(t testing.TB, n *node, l keyspace.Layout, mods ...func(*querynode.Config)) {
	t.Helper()
	cfg := querynode.Config{Name: n.name, Dir: n.dir, Store: n.st, Token: token}
	for _, m := range mods {
		m(&cfg)
	}
	qn, err := querynode.New(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	n.Node = qn
	n.srv.set(qn.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.runWG.Add(1)
	go func() {
		defer n.runWG.Done()
		if err := qn.Run(ctx); err != nil {
			t.Errorf("run %s: %v", n.name, err)
		}
	}()
}

func (n *node) close(t testing.TB) {
	t.Helper()
	if n.Node == nil {
		return
	}
	n.stop()
	n.runWG.Wait()
	if err := n.Node.Close(); err != nil {
		t.Error(err)
	}
	n.Node = nil
}

// cluster makes named nodes with servers (not started), and the layout
// skeleton naming them.
func cluster(t testing.TB, kind string, names ...string) map[string]*node {
	out := map[string]*node{}
	for _, name := range names {
		n := &node{name: name, dir: t.TempDir(), st: backend(t, kind), srv: newServer(t)}
		out[name] = n
		t.Cleanup(func() { n.close(t) })
	}
	return out
}

func nodesOf(c map[string]*node, names ...string) []keyspace.Node {
	var out []keyspace.Node
	for _, name := range names {
		out = append(out, keyspace.Node{Name: name, URL: c[name].srv.URL})
	}
	return out
}

// post sends the raw body to url with the token tok and decodes the
// answer.
func post(t testing.TB, url, tok string, body []byte) (int, keyspace.BatchAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans keyspace.BatchAnswer
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, ans
}

func postBatch(t testing.TB, base string, b keyspace.Batch) (int, keyspace.BatchAnswer) {
	t.Helper()
	body, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return post(t, base+keyspace.PathBatch, token, body)
}

func mustPost(t testing.TB, base string, b keyspace.Batch) {
	t.Helper()
	if code, ans := postBatch(t, base, b); code != http.StatusOK || ans.Applied != b.Seq {
		t.Fatalf("batch %d of %s: %d %+v", b.Seq, b.Writer, code, ans)
	}
}

func postEpoch(t testing.TB, url string, epoch uint64) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(fmt.Appendf(nil, `{"Epoch":%d}`, epoch)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// waitTask polls the node's status until the task picked by which is done
// for epoch.
func waitTask(t testing.TB, n *node, epoch uint64, which func(keyspace.Status) *keyspace.Task) keyspace.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if tk := which(n.Status()); tk != nil && tk.Epoch == epoch && tk.Done {
			return *tk
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: task of epoch %d not done: %+v", n.name, epoch, n.Status())
	return keyspace.Task{}
}

func copyTask(s keyspace.Status) *keyspace.Task { return s.Copy }
func dropTask(s keyspace.Status) *keyspace.Task { return s.Drop }

// oracle is the reference: what a store holds after the writes, by plain
// maps.
type oracle struct {
	meta    map[string][]byte          // ctx -> metadata
	members map[string]map[string]bool // ctx -> mh set
	ctxs    map[string]store.Value     // ctx -> provider and context
}

func newOracle() *oracle {
	return &oracle{meta: map[string][]byte{}, members: map[string]map[string]bool{}, ctxs: map[string]store.Value{}}
}

func okey(p peer.ID, c []byte) string { return string(p) + "\x00" + string(c) }

func (o *oracle) apply(op keyspace.Op) {
	v := op.Value
	k := okey(v.ProviderID, v.ContextID)
	switch op.Kind {
	case keyspace.OpPut:
		o.meta[k] = v.Metadata
		o.ctxs[k] = store.Value{ProviderID: v.ProviderID, ContextID: v.ContextID}
		if o.members[k] == nil {
			o.members[k] = map[string]bool{}
		}
		for _, mh := range op.Multihashes {
			o.members[k][string(mh)] = true
		}
	case keyspace.OpRemove:
		for _, mh := range op.Multihashes {
			delete(o.members[k], string(mh))
		}
	case keyspace.OpRemoveContext:
		delete(o.members, k)
	case keyspace.OpRemoveProvider:
		for ck, v := range o.ctxs {
			if v.ProviderID == op.Value.ProviderID {
				delete(o.members, ck)
			}
		}
	case keyspace.OpUpdateMetadata:
		o.meta[k] = v.Metadata
	}
}

// get is what a store should answer for mh: values sorted.
func (o *oracle) get(mh multihash.Multihash) []string {
	var out []string
	for k, set := range o.members {
		if set[string(mh)] {
			v := o.ctxs[k]
			out = append(out, fmtValue(store.Value{ProviderID: v.ProviderID, ContextID: v.ContextID, Metadata: o.meta[k]}))
		}
	}
	sort.Strings(out)
	return out
}

func got(t testing.TB, st store.Store, mh multihash.Multihash) []string {
	t.Helper()
	vs, err := st.Get(context.Background(), mh)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		out = append(out, fmtValue(v))
	}
	sort.Strings(out)
	return out
}

// tw is a test writer: it routes ops as an ingest node does and numbers
// its batches per receiver. It is test scaffolding, not the real writer.
type tw struct {
	name   string
	stream uint64
	seq    map[string]uint64
}

func newTW(name string) *tw { return &tw{name: name, stream: 7, seq: map[string]uint64{}} }

// route splits ops by the nodes of l they go to.
func route(t testing.TB, l keyspace.Layout, ops []keyspace.Op) map[string][]keyspace.Op {
	t.Helper()
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		t.Fatal(err)
	}
	nodes := p.Nodes()
	out := map[string][]keyspace.Op{}
	for _, op := range ops {
		switch op.Kind {
		case keyspace.OpPut, keyspace.OpRemove:
			per := map[int][]multihash.Multihash{}
			for _, mh := range op.Multihashes {
				for _, o := range p.AppendWriteOwners(nil, mh) {
					per[o] = append(per[o], mh)
				}
			}
			for o, mhs := range per {
				c := op
				c.Multihashes = mhs
				out[nodes[o].Name] = append(out[nodes[o].Name], c)
			}
		default:
			for _, o := range p.WriteNodes() {
				out[nodes[o].Name] = append(out[nodes[o].Name], op)
			}
		}
	}
	return out
}

// send posts ops to node n as the writer's next batch.
func (w *tw) send(t testing.TB, n *node, epoch uint64, ops []keyspace.Op) {
	t.Helper()
	if len(ops) == 0 {
		return
	}
	w.seq[n.name]++
	mustPost(t, n.srv.URL, keyspace.Batch{Writer: w.name, Stream: w.stream, Epoch: epoch, Seq: w.seq[n.name], Ops: ops})
}

// heartbeat tells n the writer is drained.
func (w *tw) heartbeat(t testing.TB, n *node, epoch uint64) {
	t.Helper()
	code, ans := postBatch(t, n.srv.URL, keyspace.Batch{Writer: w.name, Stream: w.stream, Epoch: epoch, Seq: w.seq[n.name], Drained: true})
	if code != http.StatusOK {
		t.Fatalf("heartbeat: %d %+v", code, ans)
	}
}

// sendAll routes ops under l and posts them to every node, in names order
// (the nodes not started are skipped).
func (w *tw) sendAll(t testing.TB, c map[string]*node, l keyspace.Layout, ops []keyspace.Op, order ...string) {
	t.Helper()
	r := route(t, l, ops)
	if len(order) == 0 {
		for name := range r {
			order = append(order, name)
		}
		slices.Sort(order)
	}
	for _, name := range order {
		w.send(t, c[name], l.Epoch, r[name])
	}
}

func newNode(n *node, l keyspace.Layout, maxBatch int64) (*querynode.Node, error) {
	return querynode.New(querynode.Config{Name: n.name, Dir: n.dir, Store: n.st, Token: token, MaxBatchBytes: maxBatch}, l)
}

func httptestRecorder(h http.Handler) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/multihash/x", nil))
	return rec
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func peerInfo(t testing.TB, i int) peer.AddrInfo {
	return peer.AddrInfo{ID: provider(t, i)}
}

// fmtValue shows a value as provider…/context/metadata.
func fmtValue(v store.Value) string {
	p := v.ProviderID.String()
	return fmt.Sprintf("p…%s/ctx%x/%s", p[len(p)-4:], v.ContextID, v.Metadata)
}
