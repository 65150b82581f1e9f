package keyspace_test

import (
	"fmt"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// A join, step by step: the layout of each epoch, where a key's writes
// and reads go, and what the coordinator decides once every process has
// taken the epoch.
func Example() {
	l := keyspace.Layout{
		Epoch: 1, Replication: 2, Phase: keyspace.PhaseStable,
		Nodes:   []keyspace.Node{{Name: "q1", URL: "http://q1"}, {Name: "q2", URL: "http://q2"}, {Name: "q3", URL: "http://q3"}},
		Current: []string{"q1", "q2", "q3"},
		Writers: []string{"ingest-1"},
	}
	// A key that moves to q4 when it joins.
	joining, _ := l.Join(keyspace.Node{Name: "q4", URL: "http://q4"})
	jp, _ := keyspace.NewPlacement(joining)
	var mh multihash.Multihash
	for i := 0; mh == nil; i++ {
		k, _ := multihash.Sum(fmt.Appendf(nil, "key-%d", i), multihash.SHA2_256, -1)
		if jp.Gains(jp.Node("q4"), k) {
			mh = k
		}
	}
	show := func(l keyspace.Layout) {
		p, err := keyspace.NewPlacement(l)
		if err != nil {
			panic(err)
		}
		names := func(idx []int) []string {
			var out []string
			for _, i := range idx {
				out = append(out, p.Nodes()[i].Name)
			}
			return out
		}
		fmt.Printf("epoch %d %-6s writes %v reads %v\n", l.Epoch, l.Phase,
			names(p.AppendWriteOwners(nil, mh)), names(p.AppendReadOwners(nil, mh)))
	}
	show(l)

	// Every process reports epoch 1, and nothing waits in an outbox: the
	// coordinator publishes the start of the join.
	everyone := func(l keyspace.Layout, st func(name string) keyspace.Status) keyspace.Observation {
		obs := keyspace.Observation{Layout: l, Query: map[string]keyspace.Status{}, Ingest: map[string]keyspace.Status{}}
		for _, n := range l.Nodes {
			obs.Query[n.Name] = st(n.Name)
		}
		obs.Ingest["ingest-1"] = keyspace.Status{Epoch: l.Epoch}
		return obs
	}
	goal := keyspace.Goal{Join: &keyspace.Node{Name: "q4", URL: "http://q4"}}
	at := func(l keyspace.Layout) func(string) keyspace.Status {
		return func(string) keyspace.Status { return keyspace.Status{Epoch: l.Epoch} }
	}
	a := keyspace.NextAction(everyone(l, at(l)), goal)
	fmt.Println(a.Kind, "-", a.Why)
	l = a.Layout
	show(l)

	// Everyone has taken epoch 2: the new node copies its ranges.
	a = keyspace.NextAction(everyone(l, at(l)), goal)
	fmt.Println(a.Kind, a.Nodes, "-", a.Why)

	// Its copy is done: reads move.
	copied := func(name string) keyspace.Status {
		return keyspace.Status{Epoch: l.Epoch, Copy: &keyspace.Task{Epoch: l.Epoch, Done: true}}
	}
	a = keyspace.NextAction(everyone(l, copied), goal)
	fmt.Println(a.Kind, "-", a.Why)
	l = a.Layout
	show(l)

	a = keyspace.NextAction(everyone(l, at(l)), goal)
	fmt.Println(a.Kind, "-", a.Why)
	l = a.Layout
	show(l)

	// Output:
	// epoch 1 stable writes [q2 q1] reads [q2 q1]
	// publish - join q4
	// epoch 2 copy   writes [q2 q1 q4] reads [q2 q1]
	// copy [q4] - gaining nodes copy their new ranges
	// publish - copies complete: reads move
	// epoch 3 moved  writes [q2 q1 q4] reads [q4 q2]
	// publish - everyone reads the new ring
	// epoch 4 stable writes [q4 q2] reads [q4 q2]
}
