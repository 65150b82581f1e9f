package querynode_test

import (
	"crypto/sha512"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// In stores keyed on digest prefixes, a sha2-384 multihash is kept as a
// 20-byte form that the ring places elsewhere than the full multihash:
// the copy must still bring it to the node that gains the full one, and
// the drop must not delete it from the node that owns it.
func TestPrefixFormOfOtherHashes(t *testing.T) {
	c := cluster(t, "pebble-prefix", "q1", "q2", "q3")
	l1 := keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, "q1", "q2"), Current: []string{"q1", "q2"}, Phase: keyspace.PhaseStable}
	l2, err := l1.Join(nodesOf(c, "q3")[0])
	if err != nil {
		t.Fatal(err)
	}
	startNode(t, c["q1"], l1)
	startNode(t, c["q2"], l1)
	w, o := newTW("w1"), newOracle()
	var keys []multihash.Multihash
	op := keyspace.Op{Kind: keyspace.OpPut, Value: store.Value{ProviderID: provider(t, 1), ContextID: []byte("c"), Metadata: []byte("m")}}
	for i := range 200 {
		d := sha512.Sum384(fmt.Appendf(nil, "long-%d", i))
		mh, err := multihash.Encode(d[:], 0x20) // sha2-384
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, mh)
	}
	op.Multihashes = keys
	o.apply(op)
	w.sendAll(t, c, l1, []keyspace.Op{op})
	for _, q := range []string{"q1", "q2"} {
		if err := c[q].SetLayout(l2); err != nil {
			t.Fatal(err)
		}
	}
	startNode(t, c["q3"], l2)
	if code, body := postEpoch(t, c["q3"].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
		t.Fatalf("copy: %d %s", code, body)
	}
	if tk := waitTask(t, c["q3"], 2, copyTask); tk.Error != "" {
		t.Fatalf("copy: %+v", tk)
	}
	p2, _ := keyspace.NewPlacement(l2)
	gained := 0
	for _, mh := range keys {
		if p2.Gains(p2.Node("q3"), mh) {
			gained++
			if have := got(t, c["q3"].st, mh); !slices.Equal(have, o.get(mh)) {
				t.Fatalf("q3 gains %x: have %v, want %v", []byte(mh), have, o.get(mh))
			}
		}
	}
	if gained == 0 {
		t.Fatal("q3 gains no key")
	}
	l3, _ := l2.Advance()
	l4, _ := l3.Advance()
	for _, q := range []string{"q1", "q2", "q3"} {
		for _, l := range []keyspace.Layout{l3, l4} {
			if err := c[q].SetLayout(l); err != nil {
				t.Fatal(err)
			}
		}
		if code, body := postEpoch(t, c[q].srv.URL+keyspace.PathDrop, l4.Epoch); code != http.StatusAccepted {
			t.Fatalf("drop: %d %s", code, body)
		}
	}
	p4, _ := keyspace.NewPlacement(l4)
	for _, q := range []string{"q1", "q2", "q3"} {
		if tk := waitTask(t, c[q], l4.Epoch, dropTask); tk.Error != "" {
			t.Fatalf("drop: %+v", tk)
		}
		for _, mh := range keys {
			if p4.Owns(p4.Node(q), mh) {
				if have := got(t, c[q].st, mh); !slices.Equal(have, o.get(mh)) {
					t.Fatalf("%s owns %x after the drop: have %v, want %v", q, []byte(mh), have, o.get(mh))
				}
			}
		}
	}
}
