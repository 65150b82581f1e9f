package writer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store/memory"
)

// rejoinWay says how the node that left comes back.
type rejoinWay struct {
	// oldStore: the node restarts on its old store and Dir (else both are
	// fresh).
	oldStore bool
	// restartWriter: the writer is closed and opened again over its
	// outbox on disk between the leave and the rejoin.
	restartWriter bool
}

// TestRejoinFreshStore: q2 leaves the layout through a Coordinator, its
// outbox is removed, and it rejoins under the same name with a fresh
// store and Dir. The writer starts a new stream towards it, so the node
// takes it from Seq 1; every node ends exact.
func TestRejoinFreshStore(t *testing.T) { testRejoin(t, rejoinWay{}) }

// TestRejoinWriterRestart: as TestRejoinFreshStore, with the writer
// restarted between the leave and the rejoin, its outbox reopened from
// disk (where the removed queue left nothing behind).
func TestRejoinWriterRestart(t *testing.T) { testRejoin(t, rejoinWay{restartWriter: true}) }

func testRejoin(t *testing.T, way rejoinWay) {
	c := newCluster(t, 4)
	w := newWorld(t, 21)
	w.keepContexts = true
	for range 400 {
		w.step(t, c.w)
	}
	c.drained(t)

	path := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(path, c.layout); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards c.layout, c.w and the world
	ws := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := c.w.Handler()
		mu.Unlock()
		h.ServeHTTP(rw, r)
	}))
	defer ws.Close()
	reload := func(ctx context.Context, l keyspace.Layout) error {
		mu.Lock()
		defer mu.Unlock()
		for _, q := range c.q {
			if q.srv == nil {
				continue
			}
			if err := q.node.SetLayout(l); err != nil {
				return fmt.Errorf("%s: %w", q.name, err)
			}
		}
		c.layout = l
		return c.w.SetLayout(l)
	}
	var actions []string
	co, err := keyspace.NewCoordinator(keyspace.CoordinatorConfig{
		LayoutPath: path, Ingest: map[string]string{"w1": ws.URL}, Token: token,
		Reload: reload, Poll: 20 * time.Millisecond,
		OnAction: func(a keyspace.Action) { actions = append(actions, a.Kind.String()) },
	})
	if err != nil {
		t.Fatal(err)
	}

	// Writes go on through the leave and the rejoin.
	writing := func() (stop func() int64) {
		quit, done := make(chan struct{}), make(chan struct{})
		var n atomic.Int64
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				mu.Lock()
				w.step(t, c.w)
				if i%50 == 0 {
					c.w.Flush(context.Background())
				}
				mu.Unlock()
				n.Add(1)
				if i%50 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
		return func() int64 { close(quit); <-done; return n.Load() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	q2 := c.q[1]
	stop := writing()
	err = co.Drive(ctx, keyspace.Goal{Leave: q2.name})
	during := stop()
	if err != nil {
		t.Fatalf("leave: %v (actions %v)", err, actions)
	}
	c.drained(t)
	q2.halt()
	q2.srv = nil
	if st := c.ob.Status(q2.name); st.Head != 0 || st.Pending != 0 {
		t.Fatalf("the outbox of %s, which left, is still there: %+v", q2.name, st)
	}
	// Writes while q2 is away, removals among them, which its old store
	// does not see.
	for range 300 {
		w.step(t, c.w)
	}
	c.drained(t)

	if way.restartWriter {
		c.restartWriter(t)
	}
	if !way.oldStore {
		q2.dir, q2.st = t.TempDir(), memory.New()
	}
	startQ(t, q2, c.layout)
	stop = writing()
	err = co.Drive(ctx, keyspace.Goal{Join: &keyspace.Node{Name: q2.name, URL: "http://" + q2.addr}})
	during += stop()
	if err != nil {
		t.Fatalf("rejoin: %v (actions %v); outbox towards %s: %+v", err, actions, q2.name, c.w.Status().Owners[q2.name])
	}
	c.drained(t)
	deadline := time.Now().Add(10 * time.Second)
	for !q2.node.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the rejoined node never became ready: %+v", q2.node.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d writes during the changes; actions %v; ring %v; %s at %+v", during, actions, c.layout.Current, q2.name, q2.node.Status().Writers["w1"])
	w.verify(t, c)
}

// restartWriter closes the writer and its outbox and opens both again
// from the outbox's directory, with the layout in force.
func (c *cluster) restartWriter(t *testing.T) {
	t.Helper()
	c.stopW()
	c.wg.Wait()
	if err := c.w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(c.obDir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob, Token: token,
		BatchBytes: 4 << 10, Heartbeat: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	c.ob, c.w, c.stopW = ob, w, stop
	c.wg.Add(1)
	go func() { defer c.wg.Done(); w.Run(ctx) }()
}

// TestRejoinOldStore: q2 rejoins on its old store and Dir, holding what
// it held when it left, while removals went on without it. It empties
// both when it is named again, so nothing stale survives the join.
func TestRejoinOldStore(t *testing.T) { testRejoin(t, rejoinWay{oldStore: true}) }
