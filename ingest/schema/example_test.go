package schema_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// A publisher writes an entry chunk and a signed advertisement; an indexer
// fetches the blocks by CID, decodes them and checks the signature.
func Example() {
	// A fixed seed keeps the key, and so the output, stable. Use
	// crypto.GenerateEd25519Key(rand.Reader) for real keys.
	key, _, _ := crypto.GenerateEd25519Key(bytes.NewReader(make([]byte, 32)))
	provider, _ := peer.IDFromPrivateKey(key)

	// Publisher side.
	a, _ := multihash.Sum([]byte("block a"), multihash.SHA2_256, -1)
	b, _ := multihash.Sum([]byte("block b"), multihash.SHA2_256, -1)
	chunk := &schema.EntryChunk{Entries: []multihash.Multihash{a, b}}
	chunkBlock, chunkCid, _ := chunk.Encode()

	ad := &schema.Advertisement{
		Provider:  provider.String(),
		Addresses: []string{"/ip4/127.0.0.1/tcp/3104/http"},
		Entries:   chunkCid,
		ContextID: []byte("ctx-1"),
		Metadata:  []byte{0x80, 0x12}, // bitswap
	}
	if err := ad.Sign(key); err != nil {
		fmt.Println(err)
		return
	}
	adBlock, adCid, _ := ad.Encode()
	fmt.Println("ad:   ", adCid)
	fmt.Println("chunk:", chunkCid)

	// Indexer side: blocks as fetched, checked against their CIDs.
	got, err := schema.DecodeAdvertisement(adCid, adBlock)
	if err != nil {
		fmt.Println(err)
		return
	}
	signer, err := got.VerifySignature()
	fmt.Println("signed by the provider:", err == nil && signer.String() == got.Provider)
	entries, _ := schema.DecodeEntryChunk(got.Entries, chunkBlock)
	fmt.Println("entries:", len(entries.Entries), "last chunk:", !entries.Next.Defined())

	// A changed field voids the signature; a block that does not match its
	// CID is refused.
	got.Metadata = []byte{0x09, 0x00}
	_, err = got.VerifySignature()
	fmt.Println(err)
	_, err = schema.DecodeEntryChunk(adCid, chunkBlock)
	fmt.Println(errors.Is(err, schema.ErrHashMismatch))
	// Output:
	// ad:    baguqeeralcbwjhvdd5b7zbqepgxz3qfg637pxbehvlhgn5qyl2r4yejjmdsa
	// chunk: baguqeeraygowvfhhfcsnqzqzryxndrx3rc3xpmll2gxijmnyietafg5apopa
	// signed by the provider: true
	// entries: 2 last chunk: true
	// schema: invalid signature: signed payload does not match PreviousID, Entries, Provider, Addresses, Metadata and IsRm
	// true
}
