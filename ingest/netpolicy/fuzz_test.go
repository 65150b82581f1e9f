package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// FuzzCheck checks, for any address, that its IPv4-mapped and NAT64
// forms get the same decision as the IPv4 address, that AllowPrivate
// never refuses what the default policy allows, and that neither policy
// allows an address Classify puts outside their ranges.
func FuzzCheck(f *testing.F) {
	for _, c := range rangeCases {
		f.Add(netip.MustParseAddr(c.addr).WithZone("").AsSlice())
	}
	def := mustNew(f)
	pri := mustNew(f, netpolicy.AllowPrivate())
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		r := netpolicy.Classify(a)
		dErr, pErr := def.Check(a), pri.Check(a)
		if (dErr == nil) != (r == netpolicy.RangePublic) {
			t.Fatalf("default Check(%s) = %v for range %q", a, dErr, r)
		}
		if dErr == nil && pErr != nil {
			t.Fatalf("AllowPrivate refuses %s (%v), which the default policy allows", a, pErr)
		}
		switch r {
		case netpolicy.RangeMetadata, netpolicy.RangeUnspecified, netpolicy.RangeMulticast, netpolicy.RangeBroadcast, netpolicy.RangeReserved:
			if pErr == nil {
				t.Fatalf("AllowPrivate allows %s in range %q", a, r)
			}
		}
		if a.Is4() {
			for _, f := range []netip.Addr{mapped(a), nat64(a)} {
				if got := netpolicy.Classify(f); got != r {
					t.Fatalf("Classify(%s) = %q, Classify(%s) = %q", f, got, a, r)
				}
				if (def.Check(f) == nil) != (dErr == nil) || (pri.Check(f) == nil) != (pErr == nil) {
					t.Fatalf("%s and %s get different decisions", f, a)
				}
			}
		}
	})
}
