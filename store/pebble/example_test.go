package pebble_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Open a store on disk, index a multihash, and find it again after a
// restart.
func Example() {
	dir, _ := os.MkdirTemp("", "indexkit-pebble-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := pebble.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	provider, _ := peer.Decode("12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y")
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	v := store.Value{ProviderID: provider, ContextID: []byte("ad-1"), Metadata: []byte{0x80, 0x12}}
	if err := s.Put(ctx, v, mh); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Close(); err != nil { // Close flushes
		fmt.Println(err)
		return
	}

	s, err = pebble.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	vals, _ := s.Get(ctx, mh)
	fmt.Println(len(vals), vals[0].ProviderID, string(vals[0].ContextID))
	// Output:
	// 1 12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y ad-1
}

// One context's life on disk: indexed, read, its metadata changed for
// every multihash at once, removed, and made durable.
func Example_context() {
	dir, _ := os.MkdirTemp("", "indexkit-pebble-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	provider, _ := peer.Decode("12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y")
	a, _ := multihash.Sum([]byte("block a"), multihash.SHA2_256, -1)
	b, _ := multihash.Sum([]byte("block b"), multihash.SHA2_256, -1)
	mhs := []multihash.Multihash{a, b}

	// README: store
	s, err := pebble.Open(dir) // or memory.New(), leveldb.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	v := store.Value{ProviderID: provider, ContextID: []byte("ad-1"), Metadata: []byte{0x80, 0x12}}
	if err := s.Put(ctx, v, mhs...); err != nil { // never reads; idempotent
		log.Fatal(err)
	}
	vals, err := s.Get(ctx, a) // one point read
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("a: context %s, metadata %x\n", vals[0].ContextID, vals[0].Metadata)

	// O(1) whatever the number of multihashes: every one of them sees it.
	if err := s.UpdateMetadata(ctx, provider, []byte("ad-1"), []byte{0x09, 0x00}); err != nil {
		log.Fatal(err)
	}
	vals, _ = s.Get(ctx, b)
	fmt.Printf("b: metadata %x\n", vals[0].Metadata)

	if err := s.RemoveProviderContext(ctx, provider, []byte("ad-1")); err != nil { // O(1) too
		log.Fatal(err)
	}
	vals, _ = s.Get(ctx, a)
	fmt.Println("after removal:", len(vals), "values")

	if err := s.Flush(ctx); err != nil { // durable from here on
		log.Fatal(err)
	}
	// README end

	// Output:
	// a: context ad-1, metadata 8012
	// b: metadata 0900
	// after removal: 0 values
}
