package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode/memory"
	"github.com/indexkit/indexkit/examples/fleetnode/tabletest"
	"github.com/indexkit/indexkit/lease"
)

func TestTables(t *testing.T) {
	tabletest.Run(t, memory.New(), "fleet:")
}

// Two holders of a prefix share one store, which closes with the last.
func TestStoreShared(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	a, err := b.NewStore("fleet:")
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.NewStore("fleet:")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, lease.Item{ID: "repo-1", Size: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "repo-1"); err != nil {
		t.Fatalf("the other holder's Get: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := c.Get(ctx, "repo-1"); err != nil {
		t.Fatalf("Get after the first holder closed: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "repo-1"); !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("Get after the last Close: %v, want lease.ErrClosed", err)
	}
	other, err := b.NewStore("fleet:")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Get(ctx, "repo-1"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("a new store of the prefix: %v, want an empty one", err)
	}
}
