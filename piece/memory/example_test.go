package memory_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/piece/piecetest"
)

// A store keeps the k payloads with the smallest hash per piece, whatever
// the order and repetition of offers.
func Example() {
	ctx := context.Background()
	s, err := memory.New(memory.WithCapacity(3))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	provider, pieceCID := piecetest.Provider(1), piecetest.PieceCID(1)
	_ = s.AddPayloads(ctx, provider, pieceCID, piecetest.Payloads(0, 10)...)
	_ = s.AddPayloads(ctx, provider, pieceCID, piecetest.Payloads(5, 10)...) // overlaps: counted once

	kept, _ := s.Payloads(ctx, provider, pieceCID)
	st, _ := s.Status(ctx, provider)
	fmt.Println(len(kept), "payloads kept; pieces indexed:", st.PiecesIndexed)
	// Output: 3 payloads kept; pieces indexed: 1
}
