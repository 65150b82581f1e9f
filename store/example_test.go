package store_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// The life of one advertisement's worth of content: indexed, its metadata
// changed, then removed by context.
func Example() {
	ctx := context.Background()
	var s store.Store = memory.New()
	defer s.Close()

	provider, _ := peer.Decode("12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y")
	ad := store.Value{ProviderID: provider, ContextID: []byte("ad-1"), Metadata: []byte{0x80, 0x12}}
	a, _ := multihash.Sum([]byte("block a"), multihash.SHA2_256, -1)
	b, _ := multihash.Sum([]byte("block b"), multihash.SHA2_256, -1)

	if err := s.Put(ctx, ad, a, b); err != nil {
		fmt.Println(err)
		return
	}
	vals, _ := s.Get(ctx, b)
	fmt.Printf("%s: %d value, context %q, metadata %x\n", b.B58String(), len(vals), vals[0].ContextID, vals[0].Metadata)

	// One record is shared by every multihash of the context.
	_ = s.UpdateMetadata(ctx, provider, []byte("ad-1"), []byte{0x09, 0x00})
	vals, _ = s.Get(ctx, a)
	fmt.Printf("after update: metadata %x\n", vals[0].Metadata)

	_ = s.RemoveProviderContext(ctx, provider, []byte("ad-1"))
	vals, _ = s.Get(ctx, a)
	fmt.Println("after removal:", len(vals), "values")

	// Bad input is rejected before anything is written.
	err := s.Put(ctx, store.Value{ProviderID: provider, ContextID: make([]byte, 65)}, a)
	fmt.Println(err)
	// Output:
	// QmUJ4tejUDCQ2nVGCbGNzU5HYeLN7BdziKsLnh2yReJe6b: 1 value, context "ad-1", metadata 8012
	// after update: metadata 0900
	// after removal: 0 values
	// memory: put: store: invalid value: context ID is 65 bytes, limit 64
}
