package metadata_test

import (
	"encoding/base64"
	"fmt"

	"github.com/indexkit/indexkit/ingest/metadata"
)

// Read the metadata of a find result (the example in the IPNI spec), add a
// transport, and write it back.
func Example() {
	raw, _ := base64.StdEncoding.DecodeString("kBKjaFBpZWNlQ0lE2CpYKAABgeIDkiAg7H0Gb8ZK4LC8aijKk56XS4diZvoLv9hcDz6iiE0gJhNsVmVyaWZpZWREZWFs9W1GYXN0UmV0cmlldmFs9Q==")

	m, err := metadata.Decode(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	if p, ok := m.Get(metadata.CodeGraphsyncFilecoinV1); ok {
		gs := p.(metadata.GraphsyncFilecoinV1)
		fmt.Println("piece:", gs.PieceCID, "verified:", gs.VerifiedDeal)
	}

	// The same provider also serves the content over bitswap and the
	// trustless gateway. New sorts the protocols by code.
	ps := append(m.Protocols(), metadata.IPFSGatewayHTTP{}, metadata.Bitswap{})
	both, err := metadata.New(ps...)
	if err != nil {
		fmt.Println(err)
		return
	}
	enc := both.Encode()
	fmt.Printf("%d bytes: %x ... %x\n", len(enc), enc[:4], enc[len(enc)-3:])

	// The piece sampler reads the PieceCID straight from the bytes, wherever
	// graphsync is among the protocols.
	piece, found, err := metadata.PieceCID(enc)
	fmt.Println(piece, found, err)

	// Bytes that do not decode say what is wrong and where.
	_, err = metadata.Decode(append(enc, 0xff))
	fmt.Println(err)
	// Output:
	// piece: baga6ea4seaqoy7ign7devyfqxrvcrsutt2luxb3cm35axp6ylqht5iuijuqcmey verified: true
	// 90 bytes: 80129012 ... a01200
	// baga6ea4seaqoy7ign7devyfqxrvcrsutt2luxb3cm35axp6ylqht5iuijuqcmey true <nil>
	// metadata: malformed: protocol code at offset 90: truncated varint
}
