package piecetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/piece"
)

// walksOf returns s as a [piece.Walks], skipping the test if the store
// does not keep walk positions (an optional capability).
func walksOf(t *testing.T, s piece.Store) piece.Walks {
	t.Helper()
	w, ok := s.(piece.Walks)
	if !ok {
		t.Skip("the store does not implement piece.Walks")
	}
	return w
}

// testWalks checks the walk positions of [piece.Walks]: a fresh position,
// a step that moves it and adds counters, a stale step that changes
// nothing, claims that exclude other owners until they expire, argument
// validation and Close.
func testWalks(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	w := walksOf(t, s)
	pub, prov := Provider(40), Provider(41)
	const ttl = time.Minute
	p0, err := w.ClaimWalk(ctx(t), pub, "a", ttl)
	if err != nil || p0 != (piece.WalkPosition{}) {
		t.Fatalf("ClaimWalk of a new publisher: %+v, %v; want the zero position", p0, err)
	}
	h, tail := CID("head"), CID("tail")
	p1 := piece.WalkPosition{Head: h, Tail: h}
	if err := w.StepWalk(ctx(t), pub, "a", ttl, piece.WalkStep{From: p0, To: p1}); err != nil {
		t.Fatalf("StepWalk starting a walk: %v", err)
	}
	p2 := piece.WalkPosition{Head: h, Tail: tail, Walked: 1}
	add := piece.Counters{AdsWalked: 1, AdsWithoutPiece: 1}
	if err := w.StepWalk(ctx(t), pub, "a", ttl, piece.WalkStep{From: p1, To: p2, Provider: prov, Add: add}); err != nil {
		t.Fatalf("StepWalk: %v", err)
	}
	// The same step again starts from a position that is gone.
	if err := w.StepWalk(ctx(t), pub, "a", ttl, piece.WalkStep{From: p1, To: p2, Provider: prov, Add: add}); !errors.Is(err, piece.ErrWalkMoved) {
		t.Fatalf("stale StepWalk: %v, want ErrWalkMoved", err)
	}
	st, err := s.Status(ctx(t), prov)
	if err != nil || st.Counters != add {
		t.Fatalf("provider status after one step and a stale one: %+v, %v; want counters %+v", st, err, add)
	}
	if got, err := w.ClaimWalk(ctx(t), pub, "a", ttl); err != nil || got != p2 {
		t.Fatalf("ClaimWalk: %+v, %v; want %+v", got, err, p2)
	}
	// Another owner is kept out while a's claim lasts, by both methods.
	if _, err := w.ClaimWalk(ctx(t), pub, "b", ttl); !errors.Is(err, piece.ErrWalkClaimed) {
		t.Fatalf("ClaimWalk by another owner: %v, want ErrWalkClaimed", err)
	}
	p3 := piece.WalkPosition{LastHead: h}
	if err := w.StepWalk(ctx(t), pub, "b", ttl, piece.WalkStep{From: p2, To: p3, Provider: prov, Add: add}); !errors.Is(err, piece.ErrWalkClaimed) {
		t.Fatalf("StepWalk by another owner: %v, want ErrWalkClaimed", err)
	}
	if st, _ := s.Status(ctx(t), prov); st.Counters != add {
		t.Fatalf("counters changed by refused steps: %+v", st.Counters)
	}
	// Other publishers are not claimed.
	if _, err := w.ClaimWalk(ctx(t), Provider(42), "b", ttl); err != nil {
		t.Fatalf("ClaimWalk of another publisher: %v", err)
	}
	// A short claim expires, and then another owner may step.
	if _, err := w.ClaimWalk(ctx(t), pub, "a", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := w.ClaimWalk(ctx(t), pub, "b", ttl)
		if err == nil {
			break
		}
		if !errors.Is(err, piece.ErrWalkClaimed) || time.Now().After(deadline) {
			t.Fatalf("ClaimWalk after the claim's TTL: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.StepWalk(ctx(t), pub, "b", ttl, piece.WalkStep{From: p2, To: p3}); err != nil {
		t.Fatalf("StepWalk by the new owner: %v", err)
	}
	if got, err := w.ClaimWalk(ctx(t), pub, "b", ttl); err != nil || got != p3 {
		t.Fatalf("position after the walk: %+v, %v; want %+v", got, err, p3)
	}

	for name, call := range map[string]func() error{
		"empty owner": func() error { _, err := w.ClaimWalk(ctx(t), pub, "", ttl); return err },
		"zero TTL":    func() error { return w.StepWalk(ctx(t), pub, "a", 0, piece.WalkStep{}) },
		"empty publisher": func() error {
			_, err := w.ClaimWalk(ctx(t), "", "a", ttl)
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ClaimWalk(ctx(t), pub, "b", ttl); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("ClaimWalk after Close: %v, want ErrClosed", err)
	}
	if err := w.StepWalk(ctx(t), pub, "b", ttl, piece.WalkStep{From: p3, To: p0}); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("StepWalk after Close: %v, want ErrClosed", err)
	}
}

// testWalksConcurrent races many steps from one position: exactly one
// wins, and the counters count it once.
func testWalksConcurrent(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	w := walksOf(t, s)
	pub := Provider(43)
	const ttl = time.Minute
	h := CID("race head")
	var pos piece.WalkPosition
	const rounds, racers = 20, 8
	for r := range rounds {
		next := piece.WalkPosition{Head: h, Tail: CID(string(rune('a' + r))), Walked: int64(r + 1)}
		var won atomic.Int64
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				err := w.StepWalk(ctx(t), pub, "a", ttl, piece.WalkStep{From: pos, To: next, Provider: pub, Add: piece.Counters{AdsWalked: 1}})
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, piece.ErrWalkMoved):
					t.Errorf("StepWalk: %v", err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("round %d: %d racers moved the position, want 1", r, won.Load())
		}
		pos = next
	}
	if st, err := s.Status(ctx(t), pub); err != nil || st.AdsWalked != rounds {
		t.Fatalf("AdsWalked %d (%v), want %d", st.AdsWalked, err, rounds)
	}
}
