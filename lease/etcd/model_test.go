package etcd_test

import (
	"flag"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease/leasetest"
)

var long = flag.Bool("etcd.long", false, "run the longer model and linearizability checks")

// The model test on a real etcd: its lease clock cannot be moved, so the
// untimed variant runs the same random operations without time steps,
// every lease and window hours long.
func TestModelUntimed(t *testing.T) {
	endpoints(t)
	steps := 150
	if *long {
		steps = 1000
	}
	leasetest.RunModelUntimed(t, newStore, steps)
}

// Concurrent histories on real time against a real etcd, checked with
// porcupine and the fenced-register check. The unit is a second (TTL 8 s,
// window 4 s, grace 1 s: whole seconds, as etcd leases are), and the
// clock margin a second: an etcd lease lapses up to half a second after
// its TTL (the leader revokes expired leases every 500 ms), and the
// expiries the store reports are the client's send time plus the TTL.
//
// One history of 8 clients × 50 calls, 40-75 s (a client that pauses past
// the TTL sleeps 12 s; the slowest client ends the history). The coverage
// bars that come hardest are a lease lost by its holder and an owner call
// refused as not held: 1-4 of each at 40 calls per client, 4-6 at 60 (which
// took 57 and 93 s); 16 clients at 40 calls took the items from each other
// more often and gave stale-fence refusals instead (1 of each).
func TestLinearizable(t *testing.T) {
	endpoints(t)
	t.Parallel() // with TestConformanceRealTime: both mostly sleep
	opts := []leasetest.LinearOption{
		leasetest.WithUnit(time.Second), leasetest.WithClockMargin(time.Second),
		leasetest.WithRounds(1), leasetest.WithClients(8), leasetest.WithOpsPerClient(50),
	}
	if *long {
		opts = append(opts, leasetest.WithRounds(4), leasetest.WithOpsPerClient(60))
	}
	leasetest.RunLinearizable(t, newStore, opts...)
}
