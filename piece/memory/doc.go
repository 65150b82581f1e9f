// Package memory is an in-process [piece.Store]: per provider a map from
// PieceCID to its bottom-k reservoir of payload CIDs, the provider's status
// and its counters, all behind one read-write mutex.
//
// It is a real, goroutine-safe implementation that passes the conformance
// suite piece/piecetest, for tests, demos and single-node samplers whose
// index fits in memory and need not survive a restart (use piece/redis for
// that).
//
// # Usage
//
//	s, err := memory.New(memory.WithCapacity(16))
//	if err != nil { ... }
//	defer s.Close()
//	_ = s.AddPayloads(ctx, provider, pieceCID, payloads...)
//	kept, err := s.Payloads(ctx, provider, pieceCID)
//
// # Cost
//
// AddPayloads hashes every offered payload ([piece.PayloadKey]) before it
// takes the lock, then merges at most k keys into the reservoir, so the
// lock is held for O(k) work. Payloads copies at most k CIDs under a read
// lock.
//
// Errors wrap [piece.ErrProviderNotFound], [piece.ErrPieceNotFound] and,
// after Close, [piece.ErrClosed].
package memory
