// Package piecetest is the conformance suite of [piece.Store]: a backend is
// done when [Run] passes against it.
//
//	func TestConformance(t *testing.T) {
//		piecetest.Run(t, func(t *testing.T, capacity int) piece.Store {
//			s, err := memory.New(memory.WithCapacity(capacity))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { _ = s.Close() })
//			return s
//		})
//	}
//
// Each subtest asks the factory for a fresh, empty store. The suite checks
// the bottom-k sample against a brute-force model over random offers and
// against a fixed vector computed from [piece.PayloadHash]'s formula,
// idempotence, order independence, capacity, the not-found errors (provider
// vs piece), counters and status updates, concurrent use (run it under
// -race), argument validation and Close; and, for a store that keeps walk
// positions ([piece.Walks], optional: skipped otherwise), conditional
// steps that add counters once, claims that keep other owners out until
// they expire, and racing steps of which exactly one wins. Errors are
// checked with errors.Is.
package piecetest
