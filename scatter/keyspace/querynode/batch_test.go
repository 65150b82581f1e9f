package querynode_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

func stable(c map[string]*node, writers []string, names ...string) keyspace.Layout {
	return keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, names...), Current: names, Phase: keyspace.PhaseStable, Writers: writers}
}

func one(t *testing.T, kind string, writers ...string) (*node, keyspace.Layout) {
	c := cluster(t, kind, "q1")
	l := stable(c, writers, "q1")
	startNode(t, c["q1"], l)
	return c["q1"], l
}

func putOp(t testing.TB, prov, ctx int, md string, keys ...int) keyspace.Op {
	op := keyspace.Op{Kind: keyspace.OpPut, Value: store.Value{ProviderID: provider(t, prov), ContextID: []byte{byte(ctx)}, Metadata: []byte(md)}}
	for _, k := range keys {
		op.Multihashes = append(op.Multihashes, mhOf(t, k))
	}
	return op
}

func removeOp(t testing.TB, prov, ctx int, keys ...int) keyspace.Op {
	op := keyspace.Op{Kind: keyspace.OpRemove, Value: store.Value{ProviderID: provider(t, prov), ContextID: []byte{byte(ctx)}}}
	for _, k := range keys {
		op.Multihashes = append(op.Multihashes, mhOf(t, k))
	}
	return op
}

func batch(seq uint64, ops ...keyspace.Op) keyspace.Batch {
	return keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: seq, Ops: ops}
}

// A batch delivered again after its answer was lost changes nothing: a
// replayed Put does not bring back what a later Remove removed.
func TestBatchAppliesOnce(t *testing.T) {
	n, _ := one(t, "memory")
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1, 2)))
	mustPost(t, n.srv.URL, batch(2, removeOp(t, 1, 1, 1)))
	code, ans := postBatch(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1, 2)))
	if code != http.StatusOK || ans.Applied != 2 {
		t.Fatalf("replay: %d %+v, want 200 with Applied 2", code, ans)
	}
	if g := got(t, n.st, mhOf(t, 1)); len(g) != 0 {
		t.Fatalf("key 1 after Put, Remove and a replayed Put: %v, want nothing (the replay was applied)", g)
	}
	if g := got(t, n.st, mhOf(t, 2)); len(g) != 1 {
		t.Fatalf("key 2: %v", g)
	}
}

// A batch past the next expected one is refused with 409 naming the
// position, and applies nothing.
func TestBatchGap(t *testing.T) {
	n, _ := one(t, "memory")
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	code, ans := postBatch(t, n.srv.URL, batch(3, putOp(t, 1, 1, "a", 3)))
	if code != http.StatusConflict || ans.Applied != 1 || !strings.Contains(ans.Error, "expected 2") {
		t.Fatalf("gap: %d %+v, want 409 with Applied 1 naming 2", code, ans)
	}
	if g := got(t, n.st, mhOf(t, 3)); len(g) != 0 {
		t.Fatalf("batch after a gap was applied: %v", g)
	}
	// A heartbeat claiming more than the node applied is a gap too.
	code, ans = postBatch(t, n.srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: 2, Drained: true})
	if code != http.StatusConflict || ans.Applied != 1 {
		t.Fatalf("heartbeat ahead: %d %+v, want 409", code, ans)
	}
}

func TestBatchToken(t *testing.T) {
	n, _ := one(t, "memory")
	b := batch(1, putOp(t, 1, 1, "a", 1))
	body, _ := b.AppendBinary(nil)
	for _, tok := range []string{"", "wrong", token + "x"} {
		code, ans := post(t, n.srv.URL+keyspace.PathBatch, tok, body)
		if code != http.StatusUnauthorized {
			t.Fatalf("token %q: %d %+v, want 401", tok, code, ans)
		}
	}
	if g := got(t, n.st, mhOf(t, 1)); len(g) != 0 {
		t.Fatalf("unauthorised batch applied: %v", g)
	}
	for _, path := range []string{keyspace.PathCopy, keyspace.PathDrop} {
		req, _ := http.NewRequest(http.MethodPost, n.srv.URL+path, strings.NewReader(`{"Epoch":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without token: %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(n.srv.URL + keyspace.PathExport + "?epoch=1&dest=q1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("export without token: %d", resp.StatusCode)
	}
	// The status needs none.
	resp, err = http.Get(n.srv.URL + keyspace.PathStatus)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status: %d", resp.StatusCode)
	}
}

func TestBatchBadBody(t *testing.T) {
	n, _ := one(t, "memory")
	b := batch(1, putOp(t, 1, 1, "a", 1, 2))
	body, _ := b.AppendBinary(nil)
	code, ans := post(t, n.srv.URL+keyspace.PathBatch, token, body[:len(body)-5])
	if code != http.StatusBadRequest || !strings.Contains(ans.Error, "truncated") {
		t.Fatalf("truncated body: %d %+v, want 400 saying truncated", code, ans)
	}
	code, ans = post(t, n.srv.URL+keyspace.PathBatch, token, []byte("hello"))
	if code != http.StatusBadRequest || !strings.Contains(ans.Error, "magic") {
		t.Fatalf("garbage: %d %+v", code, ans)
	}
	if s := n.Status(); s.Writers["w1"].Applied != 0 {
		t.Fatalf("position moved: %+v", s.Writers)
	}
}

func TestBatchTooLarge(t *testing.T) {
	c := cluster(t, "memory", "q1")
	n := c["q1"]
	l := stable(c, nil, "q1")
	qn, err := newNode(n, l, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer qn.Close()
	n.srv.set(qn.Handler())
	var keys []int
	for i := range 40 {
		keys = append(keys, i)
	}
	code, ans := postBatch(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", keys...)))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(ans.Error, "512") {
		t.Fatalf("large body: %d %+v, want 413", code, ans)
	}
}

// A store call that fails answers 500 and leaves the position where it
// was, in memory and on disk, so that the writer's retry applies the batch.
func TestBatchStoreFailure(t *testing.T) {
	n, l := one(t, "memory")
	n.st.Close()
	code, ans := postBatch(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	if code != http.StatusInternalServerError || !strings.Contains(ans.Error, "closed") || ans.Applied != 0 {
		t.Fatalf("failing store: %d %+v, want 500 naming the error, Applied 0", code, ans)
	}
	if a := n.Status().Writers["w1"].Applied; a != 0 {
		t.Fatalf("position advanced to %d past a batch that failed", a)
	}
	n.close(t)
	startNode(t, n, l)
	if a := n.Status().Writers["w1"].Applied; a != 0 {
		t.Fatalf("durable position %d past a batch that failed", a)
	}
}

// A new stream of a writer starts its numbering again.
func TestBatchStreamReset(t *testing.T) {
	n, _ := one(t, "memory")
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	mustPost(t, n.srv.URL, batch(2, putOp(t, 1, 1, "a", 2)))
	b := batch(1, putOp(t, 1, 1, "a", 3))
	b.Stream = 2
	mustPost(t, n.srv.URL, b)
	if g := got(t, n.st, mhOf(t, 3)); len(g) != 1 {
		t.Fatalf("first batch of a new stream not applied: %v", g)
	}
	if p := n.Status().Writers["w1"]; p.Stream != 2 || p.Applied != 1 {
		t.Fatalf("position %+v", p)
	}
}

// A batch routed under an epoch the node has not adopted waits (503).
func TestBatchEpochAhead(t *testing.T) {
	n, _ := one(t, "memory")
	b := batch(1, putOp(t, 1, 1, "a", 1))
	b.Epoch = 2
	if code, ans := postBatch(t, n.srv.URL, b); code != http.StatusServiceUnavailable || !strings.Contains(ans.Error, "epoch 2") {
		t.Fatalf("batch of a newer epoch: %d %+v, want 503", code, ans)
	}
}

// After a restart the node keeps its positions and is not ready until
// every writer has said, since the start, that it is drained.
func TestRestartReadiness(t *testing.T) {
	c := cluster(t, "pebble", "q1")
	n := c["q1"]
	l := stable(c, []string{"w1", "w2"}, "q1")
	startNode(t, n, l)
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	mustPost(t, n.srv.URL, batch(2, putOp(t, 1, 1, "a", 2)))
	n.close(t)

	startNode(t, n, l)
	if p := n.Status().Writers["w1"]; p.Stream != 1 || p.Applied != 2 {
		t.Fatalf("position after restart: %+v, want stream 1 applied 2", p)
	}
	if n.Ready() {
		t.Fatal("ready before any writer spoke")
	}
	find := n.GateFind(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("found")) }))
	rec := httptestRecorder(find)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "catching up") {
		t.Fatalf("gated find: %d %q", rec.Code, rec.Body.String())
	}
	// A first heartbeat of w2 (a fresh outbox) counts.
	mustPost(t, n.srv.URL, keyspace.Batch{Writer: "w2", Stream: 5, Epoch: 1, Seq: 0, Drained: true})
	if n.Ready() {
		t.Fatal("ready before w1 spoke")
	}
	// A replay of w1's last batch, drained, counts; a heartbeat behind
	// does not.
	if code, ans := postBatch(t, n.srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: 1, Drained: true}); code != http.StatusOK || ans.Applied != 2 {
		t.Fatalf("heartbeat behind: %d %+v", code, ans)
	}
	if n.Ready() {
		t.Fatal("ready after a heartbeat behind the position")
	}
	mustPost(t, n.srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: 2, Drained: true})
	if !n.Ready() || !n.Status().Ready {
		t.Fatalf("not ready after both writers drained: %+v", n.Status())
	}
	if rec := httptestRecorder(find); rec.Code != http.StatusOK || rec.Body.String() != "found" {
		t.Fatalf("find once ready: %d %q", rec.Code, rec.Body.String())
	}
	if g := got(t, n.st, mhOf(t, 2)); len(g) != 1 {
		t.Fatalf("key of batch 2 after restart: %v", g)
	}
}

func TestNoWritersReady(t *testing.T) {
	n, _ := one(t, "memory")
	if !n.Ready() {
		t.Fatal("a layout without writers is ready at once")
	}
}

func TestSetLayoutEpochs(t *testing.T) {
	n, l := one(t, "memory")
	if err := n.SetLayout(l); err != nil {
		t.Fatal(err)
	}
	l2 := l.Clone()
	l2.Epoch = 3
	if err := n.SetLayout(l2); err != nil {
		t.Fatal(err)
	}
	if err := n.SetLayout(l); err == nil || !strings.Contains(err.Error(), "epoch 3") {
		t.Fatalf("older layout: %v", err)
	} else if !errorsIs(err, keyspace.ErrStaleEpoch) {
		t.Fatalf("older layout error %v does not wrap ErrStaleEpoch", err)
	}
	if n.Layout().Epoch != 3 || n.Status().Epoch != 3 {
		t.Fatalf("epoch %d", n.Layout().Epoch)
	}
}

func TestPositionFileIsAtomic(t *testing.T) {
	n, _ := one(t, "memory")
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	ents, err := os.ReadDir(filepath.Join(n.dir, "writers"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || strings.HasPrefix(ents[0].Name(), ".") {
		t.Fatalf("writers dir: %v", ents)
	}
}

var _ = multihash.SHA2_256

// A heartbeat without a stream says the writer holds no queue for the
// node (it never had anything for it, or removed the queue when the node
// left): nothing waits, so it counts for readiness, and it leaves the
// position alone. A batch with ops and no stream is refused.
func TestNoQueueHeartbeat(t *testing.T) {
	c := cluster(t, "memory", "q1")
	n := c["q1"]
	l := stable(c, []string{"w1"}, "q1")
	startNode(t, n, l)
	mustPost(t, n.srv.URL, batch(1, putOp(t, 1, 1, "a", 1)))
	n.close(t)

	startNode(t, n, l)
	if n.Ready() {
		t.Fatal("ready before w1 spoke")
	}
	if code, ans := postBatch(t, n.srv.URL, keyspace.Batch{Writer: "w1", Stream: 0, Epoch: 1, Seq: 0, Drained: true}); code != http.StatusOK || ans.Applied != 0 {
		t.Fatalf("heartbeat without a queue: %d %+v", code, ans)
	}
	if !n.Ready() {
		t.Fatalf("not ready after a heartbeat without a queue: %+v", n.Status())
	}
	if p := n.Status().Writers["w1"]; p.Stream != 1 || p.Applied != 1 {
		t.Fatalf("position after a heartbeat without a queue: %+v, want stream 1 applied 1", p)
	}
	b := batch(2, putOp(t, 1, 1, "a", 2))
	b.Stream = 0
	if code, ans := postBatch(t, n.srv.URL, b); code != http.StatusBadRequest || !strings.Contains(ans.Error, "no stream") {
		t.Fatalf("batch with ops and no stream: %d %+v, want 400", code, ans)
	}
}
