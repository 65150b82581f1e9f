package redis_test

import (
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease/leasetest"
)

// Concurrent histories on real time against a real redis-server (REDIS_ADDR
// or the machine's), each on a fresh key prefix, checked with porcupine
// against the sequential model, and the fenced-register check. The store's
// clock is the server's: the model allows it 5 ms from the test's, which
// covers the millisecond steps of Redis key expiry (pending-bid markers).
func TestLinearizable(t *testing.T) {
	redistest.Client(t, redistest.Addr()) // fail or skip once, not in every history
	leasetest.RunLinearizable(t, newStore)
}
