package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/store/memory"
)

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ds := openLevelDB(t, dir)
	reg, err := handoff.NewRegistry(ds)
	if err != nil {
		t.Fatal(err)
	}
	a, b := peerID(t, "a"), peerID(t, "b")
	if got, err := reg.Assignments(ctx); err != nil || got != nil {
		t.Fatalf("empty registry: %v, %v", got, err)
	}
	if err := reg.Assign(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Assign(ctx, a); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("second Assign: %v, want ErrAlreadyAssigned", err)
	}
	if err := reg.Assign(ctx, ""); !errors.Is(err, handoff.ErrInvalidRequest) {
		t.Errorf("Assign of an empty ID: %v", err)
	}
	if err := reg.Unassign(ctx, b); !errors.Is(err, handoff.ErrNotAssigned) {
		t.Errorf("Unassign of b: %v, want ErrNotAssigned", err)
	}
	if got, ok, err := reg.Assigned(ctx, a); err != nil || !ok || got.Publisher != a || got.Continued != "" {
		t.Errorf("Assigned(a) = %v, %v, %v", got, ok, err)
	}
	if _, ok, err := reg.Assigned(ctx, b); err != nil || ok {
		t.Errorf("Assigned(b) = %v, %v", ok, err)
	}
	if err := reg.Assign(ctx, b); err != nil {
		t.Fatal(err)
	}

	// Persisted: reopen.
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	reg, err = handoff.NewRegistry(openLevelDB(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	want := []handoff.Assignment{{Publisher: a}, {Publisher: b}}
	if want[0].Publisher > want[1].Publisher {
		want[0], want[1] = want[1], want[0]
	}
	checkAssignments(t, reg, want)
	if err := reg.Unassign(ctx, a); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, reg, []handoff.Assignment{{Publisher: b}})
}

// TestAssignmentJSON checks the shape GET /ingest/assigned answers with.
func TestAssignmentJSON(t *testing.T) {
	a, b := peerID(t, "a"), peerID(t, "b")
	got, err := json.Marshal([]handoff.Assignment{{Publisher: a}, {Publisher: b, Continued: a}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"Publisher":"` + a.String() + `"},{"Publisher":"` + b.String() + `","Continued":"` + a.String() + `"}]`
	if string(got) != want {
		t.Errorf("JSON\n%s\nwant\n%s", got, want)
	}
}

// TestReceiverAssign: a plain assignment obeys the frozen state and the
// policy.
func TestReceiverAssign(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	pub := peerID(t, "publisher")
	frozen := false
	r := newReceiver(t, st, &fakeIngest{}, newMapDS(),
		handoff.WithFrozen(func() bool { return frozen }),
		handoff.WithAllowed(func(p peer.ID) bool { return p == pub }))
	frozen = true
	if err := r.Assign(ctx, pub); !errors.Is(err, handoff.ErrFrozen) {
		t.Errorf("Assign when frozen: %v", err)
	}
	frozen = false
	if err := r.Assign(ctx, peerID(t, "denied")); !errors.Is(err, handoff.ErrNotAllowed) {
		t.Errorf("Assign of a denied publisher: %v", err)
	}
	if err := r.Assign(ctx, pub); err != nil {
		t.Fatal(err)
	}
	if err := r.Assign(ctx, pub); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("duplicate Assign: %v", err)
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: pub}})
	if got, err := r.Assignments(ctx); err != nil || len(got) != 1 {
		t.Errorf("Assignments: %v, %v", got, err)
	}
	if err := r.Unassign(ctx, pub); err != nil {
		t.Fatal(err)
	}
	if err := r.Unassign(ctx, pub); !errors.Is(err, handoff.ErrNotAssigned) {
		t.Errorf("second Unassign: %v", err)
	}
}
