package indexernode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Embedding an indexer node in a program: an index store of the caller's
// choice, listeners on free loopback ports, Run in a goroutine, and the
// find and admin APIs over HTTP.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "indexer")
	defer os.RemoveAll(dir)

	// The caller's index, with one multihash of one provider. A provider
	// needs its record (PutProvider) for the find API to give its
	// addresses.
	index := memory.New()
	defer index.Close()
	provider, _ := peer.Decode("12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA")
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	_ = index.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: provider}})
	_ = index.Put(ctx, store.Value{ProviderID: provider, ContextID: []byte("ctx-1"), Metadata: []byte{0x80, 0x12}}, mh)

	cfg := indexernode.DefaultConfig()
	cfg.Dir, cfg.Store, cfg.Index = dir, "", index
	cfg.P2P = "" // no libp2p: announces over HTTP only
	listen := func() net.Listener { ln, _ := net.Listen("tcp", "127.0.0.1:0"); return ln }
	node, err := indexernode.New(ctx, cfg, indexernode.Listeners{Find: listen(), Ingest: listen(), Admin: listen()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()

	resp, err := http.Get(node.Addrs().FindURL() + "/multihash/" + mh.B58String())
	if err != nil {
		fmt.Println(err)
		return
	}
	var found struct {
		MultihashResults []struct {
			ProviderResults []struct{ Provider struct{ ID string } }
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&found)
	resp.Body.Close()
	fmt.Println("find:", resp.StatusCode, found.MultihashResults[0].ProviderResults[0].Provider.ID)

	resp, err = http.Get(node.Addrs().AdminURL() + "/status")
	if err != nil {
		fmt.Println(err)
		return
	}
	var status struct {
		Frozen bool
		ID     string
	}
	_ = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode, "frozen:", status.Frozen, "own ID:", status.ID == node.ID().String())

	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// find: 200 12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA
	// status: 200 frozen: false own ID: true
	// run: <nil>
}
