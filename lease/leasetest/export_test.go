package leasetest

import (
	"testing"
	"time"
)

// RunRenewLapsed runs the RenewLapsed case alone on a fake clock, so the
// tests can show that it fails on a broken store.
func RunRenewLapsed(t *testing.T, newStore Factory) {
	testRenewLapsed(t, &suite{newStore: newStore, u: time.Second})
}
