package querynode_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
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
