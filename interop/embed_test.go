package interop_test

import "os" // Example_embedNode's own; the sample's imports follow

// README: embed-node
import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// runNode runs an indexer node in this program over a store of its own,
// asks the node's find API for the one multihash in it, and stops the
// node. dir holds the node's identity key and state.
func runNode(ctx context.Context, dir string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The program's index, with one multihash of one provider and the
	// provider's record (the find API answers with its addresses).
	index := memory.New()
	defer index.Close()
	provider, err := peer.Decode("12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA")
	if err != nil {
		return err
	}
	mh, err := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	if err != nil {
		return err
	}
	if err := index.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: provider}}); err != nil {
		return err
	}
	value := store.Value{ProviderID: provider, ContextID: []byte("ctx-1"), Metadata: []byte{0x80, 0x12}}
	if err := index.Put(ctx, value, mh); err != nil {
		return err
	}

	cfg := indexernode.DefaultConfig()
	cfg.Dir = dir
	cfg.Store, cfg.Index = "", index // the program's store, not one under Dir
	cfg.P2P = ""                     // no libp2p host: announces over HTTP only
	var lns indexernode.Listeners
	for _, ln := range []*net.Listener{&lns.Find, &lns.Ingest, &lns.Admin} {
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	node, err := indexernode.New(ctx, cfg, lns)
	if err != nil {
		return err
	}
	defer node.Close()
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()

	resp, err := http.Get(node.Addrs().FindURL() + "/multihash/" + mh.B58String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var found struct {
		MultihashResults []struct {
			ProviderResults []struct{ Provider struct{ ID string } }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil {
		return fmt.Errorf("find: %s: %w", resp.Status, err)
	}
	for _, r := range found.MultihashResults {
		for _, p := range r.ProviderResults {
			fmt.Println("found at provider", p.Provider.ID)
		}
	}

	cancel() // stop the node
	return <-done
}

// README end

// A program embeds an indexer node: the README's sample, in a module of
// its own that requires indexkit like any other.
func Example_embedNode() {
	dir, err := os.MkdirTemp("", "embed-node")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := runNode(context.Background(), dir); err != nil {
		fmt.Println(err)
	}
	// Output:
	// found at provider 12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA
}
