package querynode_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// A node that left the layout and is named again empties its store and
// forgets its writer positions before it takes a batch of the new layout,
// and becomes ready once the writers speak again; a node restarted in the
// middle of its own join keeps what it has. Each case on Pebble, on disk,
// with populations (emptied key by key) and without (by one range).
func TestRejoinCleanSlate(t *testing.T) {
	for _, kind := range []string{"pebble", "pebble-nopop"} {
		t.Run(kind, func(t *testing.T) { testRejoinCleanSlate(t, kind) })
	}
}

func testRejoinCleanSlate(t *testing.T, kind string) {
	ctx := context.Background()
	c := cluster(t, kind, "q1", "q2")
	base := stable(c, []string{"w1"}, "q1", "q2") // epoch 1, q1 and q2
	// join returns the copy (or moved) layout of epoch e in which q2
	// joins a ring of q1.
	join := func(e uint64, phase keyspace.Phase) keyspace.Layout {
		return keyspace.Layout{Epoch: e, Replication: 1, Nodes: nodesOf(c, "q1", "q2"), Current: []string{"q1"}, Next: []string{"q1", "q2"}, Phase: phase, Writers: []string{"w1"}}
	}
	without := keyspace.Layout{Epoch: 3, Replication: 1, Nodes: nodesOf(c, "q1"), Current: []string{"q1"}, Phase: keyspace.PhaseStable, Writers: []string{"w1"}}
	q2 := c["q2"]
	held := func() int {
		n := 0
		for _, err := range q2.st.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	fill := func() {
		t.Helper()
		mustPost(t, q2.srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: q2.Layout().Epoch, Seq: 1, Drained: true, Ops: []keyspace.Op{putOp(t, 1, 1, "a", 1, 2, 3)}})
		if err := q2.st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peerInfo(t, 1)}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("left, then named again", func(t *testing.T) {
		t.Cleanup(func() { q2.close(t) })
		startNode(t, q2, base)
		fill()
		if err := q2.SetLayout(without); err != nil {
			t.Fatal(err)
		}
		if held() != 3 {
			t.Fatalf("a node out of the layout holds %d keys, want its 3 until it comes back", held())
		}
		if !q2.Ready() {
			t.Fatal("not ready after the writer drained")
		}
		if err := q2.SetLayout(join(4, keyspace.PhaseCopy)); err != nil {
			t.Fatal(err)
		}
		if n := held(); n != 0 {
			t.Fatalf("named again: %d keys left, want none", n)
		}
		if _, err := q2.st.Provider(ctx, peerInfo(t, 1).ID); err == nil {
			t.Fatal("named again: a provider record left")
		}
		if p, ok := q2.Status().Writers["w1"]; ok {
			t.Fatalf("named again: position of w1 kept: %+v", p)
		}
		if q2.Ready() {
			t.Fatal("ready before the writer spoke again")
		}
		// The writer's new stream for it, from Seq 1.
		mustPost(t, q2.srv.URL, keyspace.Batch{Writer: "w1", Stream: 9, Epoch: 4, Seq: 1, Drained: true, Ops: []keyspace.Op{putOp(t, 1, 1, "b", 4)}})
		if !q2.Ready() || held() != 1 {
			t.Fatalf("after the new stream's first batch: ready %v, %d keys; want ready, 1", q2.Ready(), held())
		}
		// A restart in the middle of its own join keeps what it has.
		q2.close(t)
		startNode(t, q2, join(5, keyspace.PhaseMoved))
		if n := held(); n != 1 {
			t.Fatalf("restarted mid-join: %d keys, want the 1 it had", n)
		}
		if p := q2.Status().Writers["w1"]; p.Stream != 9 || p.Applied != 1 {
			t.Fatalf("restarted mid-join: position %+v, want stream 9 applied 1", p)
		}
		q2.close(t)
	})

	t.Run("stopped, removed unseen, restarted into a join", func(t *testing.T) {
		t.Cleanup(func() { q2.close(t) })
		// Its membership says epoch 5, named; the layout it starts with
		// is a join of q2 that began at epoch 8: it left in between.
		startNode(t, q2, join(5, keyspace.PhaseMoved))
		mustPost(t, q2.srv.URL, keyspace.Batch{Writer: "w1", Stream: 9, Epoch: 5, Seq: 2, Ops: []keyspace.Op{putOp(t, 1, 1, "c", 5, 6)}})
		q2.close(t)
		if held() != 3 {
			t.Fatalf("before the restart: %d keys, want 3", held())
		}
		startNode(t, q2, join(9, keyspace.PhaseMoved))
		if n := held(); n != 0 {
			t.Fatalf("restarted into a later join: %d keys left, want none", n)
		}
		code, ans := postBatch(t, q2.srv.URL, keyspace.Batch{Writer: "w1", Stream: 10, Epoch: 9, Seq: 1, Drained: true, Ops: []keyspace.Op{putOp(t, 1, 1, "d", 7)}})
		if code != http.StatusOK || ans.Applied != 1 {
			t.Fatalf("first batch of the new stream: %d %+v", code, ans)
		}
	})
}
