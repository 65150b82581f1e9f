package leveldb_test

import (
	"context"
	"fmt"
	"os"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Open a store on disk, index a multihash, and find it again after a
// restart.
func Example() {
	dir, _ := os.MkdirTemp("", "indexkit-leveldb-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := leveldb.Open(dir)
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
	if err := s.Close(); err != nil { // every commit is already synced
		fmt.Println(err)
		return
	}

	s, err = leveldb.Open(dir)
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
