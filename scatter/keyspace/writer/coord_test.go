package writer_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store/memory"
)

// TestCoordinatedJoinLeave adds a query node while writes go on, then
// removes another, through a Coordinator over real HTTP. Throughout, every
// ready read owner of a key holds what the oracle held when the key's
// writes were last delivered; at the end each node holds exactly its keys.
func TestCoordinatedJoinLeave(t *testing.T) {
	c := newCluster(t, 3)
	w := newWorld(t, 5)
	w.keepContexts = true
	for range 400 {
		w.step(t, c.w)
	}
	c.drained(t)

	path := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(path, c.layout); err != nil {
		t.Fatal(err)
	}
	ws := httptest.NewServer(c.w.Handler())
	defer ws.Close()

	// The fourth node starts outside the layout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	q4 := &qnode{t: t, name: "q4", dir: t.TempDir(), st: memory.New(), addr: addr}
	startQ(t, q4, c.layout)
	c.q = append(c.q, q4)

	var mu sync.Mutex // guards c.layout and the world
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

	// Writes go on through both changes.
	stop := make(chan struct{})
	var writes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			w.step(t, c.w)
			mu.Unlock()
			writes.Add(1)
			if i%50 == 0 {
				c.w.Flush(context.Background())
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := co.Drive(ctx, keyspace.Goal{Join: &keyspace.Node{Name: "q4", URL: "http://" + addr}}); err != nil {
		t.Fatalf("join: %v (actions %v)", err, actions)
	}
	if err := co.Drive(ctx, keyspace.Goal{Leave: "q2"}); err != nil {
		t.Fatalf("leave: %v (actions %v)", err, actions)
	}
	close(stop)
	<-done
	c.drained(t)
	t.Logf("%d writes during the changes; actions %v; final ring %v", writes.Load(), actions, c.layout.Current)
	w.verify(t, c)
	if q4.st == nil {
		t.Fatal("no q4")
	}
}
