package memory_test

import (
	"testing"

	"github.com/indexkit/indexkit/lease/leasetest"
)

// Concurrent histories on real time, checked with porcupine against the
// sequential model, and the fenced-register check.
func TestLinearizable(t *testing.T) { leasetest.RunLinearizable(t, newStore) }
