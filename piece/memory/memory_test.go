package memory_test

import (
	"testing"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/piece/piecetest"
)

func TestConformance(t *testing.T) {
	piecetest.Run(t, func(t *testing.T, capacity int) piece.Store {
		s, err := memory.New(memory.WithCapacity(capacity))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOptions(t *testing.T) {
	for _, k := range []int{0, -1, memory.MaxCapacity + 1} {
		if _, err := memory.New(memory.WithCapacity(k)); err == nil {
			t.Errorf("WithCapacity(%d): no error", k)
		}
	}
	if _, err := memory.New(memory.WithClock(nil)); err == nil {
		t.Error("WithClock(nil): no error")
	}
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	if s.Capacity() != piece.DefaultCapacity {
		t.Errorf("default capacity %d, want %d", s.Capacity(), piece.DefaultCapacity)
	}
}
