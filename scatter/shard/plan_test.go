package shard_test

import (
	"testing"

	"github.com/indexkit/indexkit/scatter/shard"
)

// TestNextActionTasksInFlight: a copy or drop that runs is waited for, not
// asked for again; one that failed is asked for again.
func TestNextActionTasksInFlight(t *testing.T) {
	l := shard.Layout{Epoch: 4, Replication: 1, Phase: shard.PhaseStable,
		Nodes: []shard.Node{{Name: "a", URL: "http://a"}, {Name: "b", URL: "http://b"}}, Current: []string{"a", "b"}}
	obs := func(drop shard.Task) shard.Observation {
		return shard.Observation{Layout: l, Query: map[string]shard.Status{
			"a": {Epoch: 4, Drop: &shard.Task{Epoch: 4, Done: true}},
			"b": {Epoch: 4, Drop: &drop},
		}}
	}
	if a := shard.NextAction(obs(shard.Task{Epoch: 4, Keys: 7}), shard.Goal{}); a.Kind != shard.ActWait {
		t.Errorf("drop running on b: %v %v (%s), want wait", a.Kind, a.Nodes, a.Why)
	}
	if a := shard.NextAction(obs(shard.Task{Epoch: 4, Error: "boom"}), shard.Goal{}); a.Kind != shard.ActDrop || len(a.Nodes) != 1 || a.Nodes[0] != "b" {
		t.Errorf("drop failed on b: %v %v, want drop [b]", a.Kind, a.Nodes)
	}
	if a := shard.NextAction(obs(shard.Task{Epoch: 3, Done: true}), shard.Goal{}); a.Kind != shard.ActDrop {
		t.Errorf("b dropped for an older epoch: %v, want drop", a.Kind)
	}
	if a := shard.NextAction(obs(shard.Task{Epoch: 4, Done: true}), shard.Goal{}); a.Kind != shard.ActDone {
		t.Errorf("both dropped: %v, want done", a.Kind)
	}
}
