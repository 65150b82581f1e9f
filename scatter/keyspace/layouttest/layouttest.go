package layouttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Run runs the suite; newStore returns an empty store (no layout yet)
// for each subtest. A store's Watch must notice a publish within 5 s.
func Run(t *testing.T, newStore func(t *testing.T) keyspace.LayoutStore) {
	t.Run("PublishIsCompareAndSwap", func(t *testing.T) { publishCAS(t, newStore(t)) })
	t.Run("RefusesInvalid", func(t *testing.T) { refusesInvalid(t, newStore(t)) })
	t.Run("WatchSeesEachEpoch", func(t *testing.T) { watchSeesEachEpoch(t, newStore(t)) })
	t.Run("ConcurrentPublishersOneWins", func(t *testing.T) { oneWins(t, newStore(t)) })
}

// Layout returns a valid stable layout of epoch 1 over n nodes.
func Layout(n int) keyspace.Layout {
	l := keyspace.Layout{Epoch: 1, Replication: 2, Phase: keyspace.PhaseStable, Writers: []string{"w1"}}
	for i := range n {
		name := fmt.Sprintf("q%d", i+1)
		l.Nodes = append(l.Nodes, keyspace.Node{Name: name, URL: "http://127.0.0.1:1/" + name})
		l.Current = append(l.Current, name)
	}
	return l
}

func publishCAS(t *testing.T, st keyspace.LayoutStore) {
	ctx := context.Background()
	if _, _, err := st.Load(ctx); err == nil {
		t.Fatal("Load of an empty store succeeded")
	}
	l1 := Layout(3)
	r1, err := st.Publish(ctx, 0, l1)
	if err != nil {
		t.Fatalf("first publish: %v", err)
	}
	if _, err := st.Publish(ctx, 0, l1); !errors.Is(err, keyspace.ErrConflict) {
		t.Fatalf("a second publish over revision 0: err %v, want ErrConflict", err)
	}
	got, rev, err := st.Load(ctx)
	if err != nil || rev != r1 || got.Epoch != 1 {
		t.Fatalf("Load = epoch %d rev %d err %v, want epoch 1 rev %d", got.Epoch, rev, err, r1)
	}
	l2, err := l1.Join(keyspace.Node{Name: "q9", URL: "http://127.0.0.1:1/q9"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := st.Publish(ctx, r1, l2)
	if err != nil {
		t.Fatalf("publish epoch 2 over %d: %v", r1, err)
	}
	if r2 <= r1 {
		t.Fatalf("revision went from %d to %d; revisions must grow", r1, r2)
	}
	l3, _ := l2.Advance()
	if _, err := st.Publish(ctx, r1, l3); !errors.Is(err, keyspace.ErrConflict) {
		t.Fatalf("publish over the replaced revision %d: err %v, want ErrConflict", r1, err)
	}
	if got, _, _ := st.Load(ctx); got.Epoch != 2 || got.Phase != keyspace.PhaseCopy {
		t.Fatalf("after a refused publish the store holds epoch %d %s, want 2 copy", got.Epoch, got.Phase)
	}
}

func refusesInvalid(t *testing.T, st keyspace.LayoutStore) {
	ctx := context.Background()
	r1, err := st.Publish(ctx, 0, Layout(3))
	if err != nil {
		t.Fatal(err)
	}
	bad := Layout(3)
	bad.Epoch = 2
	bad.Replication = 0
	if _, err := st.Publish(ctx, r1, bad); !errors.Is(err, keyspace.ErrInvalidLayout) {
		t.Fatalf("publish of a layout with replication 0: err %v, want ErrInvalidLayout", err)
	}
	if got, rev, _ := st.Load(ctx); got.Epoch != 1 || rev != r1 {
		t.Fatalf("after a refused publish: epoch %d rev %d, want 1 at %d", got.Epoch, rev, r1)
	}
}

func watchSeesEachEpoch(t *testing.T, st keyspace.LayoutStore) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := Layout(3)
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []uint64
	got := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() {
		done <- st.Watch(ctx, func(l keyspace.Layout) error {
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != l.Epoch {
				seen = append(seen, l.Epoch)
			}
			mu.Unlock()
			got <- struct{}{}
			return nil
		}, nil)
	}()
	wait := func(epoch uint64) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			mu.Lock()
			last := uint64(0)
			if len(seen) > 0 {
				last = seen[len(seen)-1]
			}
			mu.Unlock()
			if last == epoch {
				return
			}
			select {
			case <-got:
			case <-deadline:
				t.Fatalf("the watch did not see epoch %d in 5 s (saw %v)", epoch, seen)
			}
		}
	}
	wait(1)
	// Each epoch is published only once the watcher saw the one before,
	// as a coordinator does: then none may be skipped.
	for range 4 {
		next, err := l.Join(keyspace.Node{Name: fmt.Sprintf("n%d", l.Epoch), URL: "http://127.0.0.1:1/n"})
		if l.Phase != keyspace.PhaseStable {
			next, err = l.Advance()
		}
		if err != nil {
			t.Fatal(err)
		}
		if rev, err = st.Publish(ctx, rev, next); err != nil {
			t.Fatal(err)
		}
		l = next
		wait(l.Epoch)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch returned %v after its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return within 5 s of its context ending")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, e := range seen {
		if e != uint64(i+1) {
			t.Fatalf("the watch saw epochs %v, want 1..5 in order", seen)
		}
	}
}

func oneWins(t *testing.T, st keyspace.LayoutStore) {
	ctx := context.Background()
	l := Layout(3)
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			next, _ := l.Join(keyspace.Node{Name: fmt.Sprintf("c%d", i), URL: "http://127.0.0.1:1/c"})
			_, errs[i] = st.Publish(ctx, rev, next)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, keyspace.ErrConflict):
			t.Fatalf("publisher %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent publishes over one revision succeeded, want exactly 1", won, n)
	}
}
