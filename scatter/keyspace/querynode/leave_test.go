package querynode_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/store"
)

// A node leaves: the nodes that stay gain its ranges, copy them through
// their guards (a node already on both rings), and the leaver, stopped
// and restarted mid-change, serves exports as before.
func TestCopyLeave(t *testing.T) {
	names := []string{"q1", "q2", "q3"}
	c := cluster(t, "memory", names...)
	l1 := keyspace.Layout{Epoch: 1, Replication: 2, Nodes: nodesOf(c, names...), Current: names, Phase: keyspace.PhaseStable}
	l2, err := l1.Leave("q3")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range names {
		startNode(t, c[q], l1)
	}
	ch := &change{c: c, l1: l1, l2: l2, w: newTW("w1"), o: newOracle()}
	ch.preload(t)
	for _, q := range names {
		if err := c[q].SetLayout(l2); err != nil {
			t.Fatal(err)
		}
	}
	// Live writes of the change to the staying nodes first.
	race := raceOps(t, ch.gained(t, "q1"))
	ch.apply(race)
	r := route(t, l2, race)
	ch.w.send(t, c["q1"], 2, r["q1"])
	ch.w.send(t, c["q2"], 2, r["q2"])
	// The leaver restarts: it acts on the same layout.
	c["q3"].close(t)
	startNode(t, c["q3"], l2)
	for _, q := range []string{"q1", "q2"} {
		if code, body := postEpoch(t, c[q].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
			t.Fatalf("%s copy: %d %s", q, code, body)
		}
	}
	if code, body := postEpoch(t, c["q3"].srv.URL+keyspace.PathCopy, 2); code != http.StatusConflict {
		t.Fatalf("copy on the leaver, which gains nothing: %d %s", code, body)
	}
	for _, q := range []string{"q1", "q2"} {
		if tk := waitTask(t, c[q], 2, copyTask); tk.Error != "" {
			t.Fatalf("%s copy: %+v", q, tk)
		}
	}
	ch.w.send(t, c["q3"], 2, r["q3"])
	for _, q := range []string{"q1", "q2"} {
		ch.check(t, q)
	}
	// Once stable without q3, q1 and q2 each hold every key.
	l3, _ := l2.Advance()
	l4, _ := l3.Advance()
	for _, q := range []string{"q1", "q2"} {
		for _, l := range []keyspace.Layout{l3, l4} {
			if err := c[q].SetLayout(l); err != nil {
				t.Fatal(err)
			}
		}
		for _, mh := range ch.keys {
			if have, want := got(t, c[q].st, mh), ch.o.get(mh); !slices.Equal(have, want) {
				t.Fatalf("%s: key %x: have %v, want %v", q, []byte(mh), have, want)
			}
		}
	}
}

// A leave where every staying node gains: each source scans its store
// once for all of them (its exports spooled), and every gaining node ends
// exact, with live writes during the copies.
func TestLeaveScansOnce(t *testing.T) {
	for _, kind := range []string{"memory", "pebble"} {
		t.Run(kind, func(t *testing.T) {
			names := []string{"q1", "q2", "q3", "q4"}
			stay := names[:3]
			c := cluster(t, kind, names...)
			l1 := keyspace.Layout{Epoch: 1, Replication: 2, Nodes: nodesOf(c, names...), Current: names, Phase: keyspace.PhaseStable}
			l2, err := l1.Leave("q4")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range names {
				startNode(t, c[q], l1)
			}
			ch := &change{c: c, l1: l1, l2: l2, w: newTW("w1"), o: newOracle()}
			ch.preload(t)
			for _, q := range names {
				if err := c[q].SetLayout(l2); err != nil {
					t.Fatal(err)
				}
			}
			// Live writes that reach every gaining node as the real writer
			// sends them: removals of gained keys, and context-wide ops.
			var race []keyspace.Op
			for _, q := range stay {
				g := ch.gained(t, q)
				for p := 1; p <= 3; p++ {
					race = append(race, removeOp(t, p, p, g[:8]...))
				}
			}
			race = append(race,
				keyspace.Op{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: provider(t, 1), ContextID: []byte{1}, Metadata: []byte("md-updated")}},
				keyspace.Op{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: provider(t, 2), ContextID: []byte{2}}},
			)
			ch.apply(race)
			r := route(t, l2, race)
			for _, q := range stay {
				ch.w.send(t, c[q], 2, r[q])
			}
			before := map[string]int64{}
			for _, q := range names {
				before[q] = querynode.Scans(c[q].Node)
			}
			for _, q := range stay {
				if code, body := postEpoch(t, c[q].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
					t.Fatalf("%s copy: %d %s", q, code, body)
				}
			}
			for _, q := range stay {
				if tk := waitTask(t, c[q], 2, copyTask); tk.Error != "" || tk.Keys == 0 {
					t.Fatalf("%s copy: %+v", q, tk)
				}
			}
			for _, q := range names {
				if n := querynode.Scans(c[q].Node) - before[q]; n != 1 {
					t.Errorf("%s scanned its store %d times for the exports of the leave, want 1", q, n)
				}
			}
			ch.w.send(t, c["q4"], 2, r["q4"])
			for _, q := range stay {
				ch.check(t, q)
			}
		})
	}
}
