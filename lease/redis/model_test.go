package redis_test

import (
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease/leasetest"
)

// The model test on a real redis-server: the server's clock cannot be
// moved, so the untimed variant runs the same random operations without
// time steps, every lease and window hours long. Each step is a handful of
// round trips.
func TestModelUntimed(t *testing.T) {
	redistest.Client(t, redistest.Addr()) // fail or skip once, not in every subtest
	leasetest.RunModelUntimed(t, newStore, 1000)
}
