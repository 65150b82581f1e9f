package memory_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

func Example() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	provider, err := peer.Decode("QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN")
	if err != nil {
		panic(err)
	}
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	v := store.Value{
		ProviderID: provider,
		ContextID:  []byte("ad-1"),
		Metadata:   []byte("bitswap"),
	}
	if err := s.Put(ctx, v, mh); err != nil {
		panic(err)
	}
	// Change the metadata of every multihash of the context at once.
	if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("http")); err != nil {
		panic(err)
	}
	vals, err := s.Get(ctx, mh)
	if err != nil {
		panic(err)
	}
	for _, v := range vals {
		fmt.Printf("%s %s %s\n", v.ProviderID, v.ContextID, v.Metadata)
	}

	// Removing the context leaves an entry that Get skips and Sweep deletes.
	_ = s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID)
	vals, _ = s.Get(ctx, mh)
	removed, _ := s.Sweep(ctx)
	fmt.Println(len(vals), removed)
	// Output:
	// QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN ad-1 http
	// 0 1
}
