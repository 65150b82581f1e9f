package keyspace_test

import (
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// TestNextActionTasksInFlight: a copy or drop that runs is waited for, not
// asked for again; one that failed is asked for again.
func TestNextActionTasksInFlight(t *testing.T) {
	l := keyspace.Layout{Epoch: 4, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "a", URL: "http://a"}, {Name: "b", URL: "http://b"}}, Current: []string{"a", "b"}}
	obs := func(drop keyspace.Task) keyspace.Observation {
		return keyspace.Observation{Layout: l, Query: map[string]keyspace.Status{
			"a": {Epoch: 4, Drop: &keyspace.Task{Epoch: 4, Done: true}},
			"b": {Epoch: 4, Drop: &drop},
		}}
	}
	if a := keyspace.NextAction(obs(keyspace.Task{Epoch: 4, Keys: 7}), keyspace.Goal{}); a.Kind != keyspace.ActWait {
		t.Errorf("drop running on b: %v %v (%s), want wait", a.Kind, a.Nodes, a.Why)
	}
	if a := keyspace.NextAction(obs(keyspace.Task{Epoch: 4, Error: "boom"}), keyspace.Goal{}); a.Kind != keyspace.ActDrop || len(a.Nodes) != 1 || a.Nodes[0] != "b" {
		t.Errorf("drop failed on b: %v %v, want drop [b]", a.Kind, a.Nodes)
	}
	if a := keyspace.NextAction(obs(keyspace.Task{Epoch: 3, Done: true}), keyspace.Goal{}); a.Kind != keyspace.ActDrop {
		t.Errorf("b dropped for an older epoch: %v, want drop", a.Kind)
	}
	if a := keyspace.NextAction(obs(keyspace.Task{Epoch: 4, Done: true}), keyspace.Goal{}); a.Kind != keyspace.ActDone {
		t.Errorf("both dropped: %v, want done", a.Kind)
	}
}
