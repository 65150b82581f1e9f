package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/memory"
)

func TestReplicaID(t *testing.T) {
	for _, c := range []struct {
		item string
		slot int
		id   string
	}{
		{"repo", 0, "repo"},
		{"repo", -1, "repo"},
		{"repo", 1, "repo#1"},
		{"org/repo", 12, "org/repo#12"},
	} {
		if got := lease.ReplicaID(c.item, c.slot); got != c.id {
			t.Errorf("ReplicaID(%q, %d) = %q, want %q", c.item, c.slot, got, c.id)
		}
		if item, slot := lease.SplitReplicaID(c.id); item != c.item || slot != max(c.slot, 0) {
			t.Errorf("SplitReplicaID(%q) = %q, %d", c.id, item, slot)
		}
	}
	// IDs without a well-formed slot suffix are slot 0 of themselves.
	for _, id := range []string{"", "#", "#1", "a#", "a#0", "a#01", "a#-1", "a#x", "a#1x", "a#+1"} {
		if item, slot := lease.SplitReplicaID(id); item != id || slot != 0 {
			t.Errorf("SplitReplicaID(%q) = %q, %d; want itself, 0", id, item, slot)
		}
	}
}

func TestPutReplicated(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New(lease.WithMaxBids(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, c := range map[string]struct {
		id string
		n  int
	}{"no copies": {"a", 0}, "separator in ID": {"a#b", 2}, "empty ID": {"", 1}} {
		if err := lease.PutReplicated(ctx, s, lease.Item{ID: c.id}, c.n); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	it := lease.Item{ID: "repo", Commit: "abc", Size: 10, MaxBids: 1, MinBid: 5}
	if err := lease.PutReplicated(ctx, s, it, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Replicas(ctx, s, "repo", 4); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Replicas of 4 with 3 put: %v, want ErrNotFound", err)
	}
	rows, err := lease.Replicas(ctx, s, "repo", 3)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range rows {
		want := it
		want.ID = lease.ReplicaID("repo", k)
		if r.Item != want {
			t.Errorf("slot %d: %+v, want %+v", k, r.Item, want)
		}
	}
	if _, ok := lease.Serving(rows); ok {
		t.Error("Serving found a ready copy before any grant")
	}

	// Slot 2 ready, then slot 1, then the primary: Serving prefers the
	// lowest slot that is ready.
	ready := func(slot int, node string) lease.Ref {
		t.Helper()
		id := lease.ReplicaID("repo", slot)
		res, err := s.Bid(ctx, id, node, 10)
		if err != nil || res.Result == nil || res.Result.Grant == nil {
			t.Fatalf("Bid(%s): %+v, %v", id, res, err)
		}
		yes := true
		if _, err := s.Update(ctx, res.Result.Grant.Ref, lease.Mutation{Ready: &yes}); err != nil {
			t.Fatal(err)
		}
		return res.Result.Grant.Ref
	}
	serving := func() string {
		t.Helper()
		rows, err := lease.Replicas(ctx, s, "repo", 3)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := lease.Serving(rows)
		if !ok {
			return ""
		}
		return r.ID + "@" + r.Owner
	}
	ready(2, "n2")
	if got := serving(); got != "repo#2@n2" {
		t.Errorf("serving %q, want repo#2@n2", got)
	}
	ready(1, "n1")
	if got := serving(); got != "repo#1@n1" {
		t.Errorf("serving %q, want repo#1@n1", got)
	}
	primary := ready(0, "n0")
	if got := serving(); got != "repo@n0" {
		t.Errorf("serving %q, want repo@n0", got)
	}
	if err := s.Release(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if got := serving(); got != "repo#1@n1" {
		t.Errorf("after the primary's release: serving %q, want repo#1@n1", got)
	}
}
