package ipnisync_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// A publisher serves a one-ad chain over HTTP; an indexer's client fetches
// the signed head, then the ad, checked against its CID.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	// A fixed seed keeps the output stable; use crypto.GenerateEd25519Key(rand.Reader).
	key, _, _ := crypto.GenerateEd25519Key(bytes.NewReader(make([]byte, 32)))
	id, _ := peer.IDFromPrivateKey(key)

	// Publisher side: blocks in a map, the newest ad as the head.
	blocks := map[cid.Cid][]byte{}
	mh, _ := multihash.Sum([]byte("block a"), multihash.SHA2_256, -1)
	chunk, chunkCid, _ := (&schema.EntryChunk{Entries: []multihash.Multihash{mh}}).Encode()
	blocks[chunkCid] = chunk
	ad := &schema.Advertisement{
		Provider:  id.String(),
		Addresses: []string{"/ip4/127.0.0.1/tcp/3104/http"},
		Entries:   chunkCid,
		ContextID: []byte("ctx-1"),
		Metadata:  []byte{0x80, 0x12},
	}
	_ = ad.Sign(key)
	adBlock, adCid, _ := ad.Encode()
	blocks[adCid] = adBlock

	src := ipnisync.BlockSourceFunc(func(_ context.Context, c cid.Cid) ([]byte, error) {
		if b, ok := blocks[c]; ok {
			return b, nil
		}
		return nil, ipnisync.ErrNotFound
	})
	pub, _ := ipnisync.NewPublisher(key, src)
	_ = pub.SetHead(ctx, adCid)
	srv := httptest.NewServer(pub)
	defer srv.Close()

	// Indexer side: the head must be signed by the publisher's peer ID.
	// The default dial policy refuses private and loopback addresses, so
	// a publisher on this machine needs a private pool's policy.
	pool, _ := netpolicy.New(netpolicy.AllowPrivate())
	client, _ := ipnisync.NewURL(srv.URL, id, ipnisync.WithDialPolicy(pool))
	defer client.Close()
	head, err := client.Head(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("head:", head)
	block, err := client.Block(ctx, head)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := schema.DecodeAdvertisement(head, block)
	fmt.Println("context:", string(got.ContextID), "entries:", got.Entries)

	// A client expecting another publisher refuses the head.
	other, _, _ := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	otherID, _ := peer.IDFromPrivateKey(other)
	wrong, _ := ipnisync.NewURL(srv.URL, otherID, ipnisync.WithDialPolicy(pool))
	defer wrong.Close()
	_, err = wrong.Head(ctx)
	fmt.Println(errors.Is(err, ipnisync.ErrBadSignature))
	// Output:
	// head: baguqeerazxh2m2fmkm4255xnr6l6phfsgwulqu2svjgjjrmdel6jalsdl2ua
	// context: ctx-1 entries: baguqeera4e5uetnm643gkdf7pcpx2yfmk3jaqvfxeoop43k4bk57z5n4neqq
	// true
}
