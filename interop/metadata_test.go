package interop

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/ipfs/go-cid"
	ipnimeta "github.com/ipni/go-libipni/metadata"
	"github.com/multiformats/go-multicodec"
	"github.com/multiformats/go-varint"
)

// refUnknown is go-libipni's form of an unknown protocol: its Payload
// holds the code and the length prefix as well as the payload.
func refUnknown(code uint64, payload []byte) *ipnimeta.Unknown {
	b := varint.ToUvarint(code)
	b = append(b, varint.ToUvarint(uint64(len(payload)))...)
	return &ipnimeta.Unknown{Code: multicodec.Code(code), Payload: append(b, payload...)}
}

// ourProtocol converts one protocol of go-libipni to ours.
func ourProtocol(t testing.TB, p ipnimeta.Protocol) metadata.Protocol {
	t.Helper()
	switch v := p.(type) {
	case ipnimeta.Bitswap, *ipnimeta.Bitswap:
		return metadata.Bitswap{}
	case *ipnimeta.GraphsyncFilecoinV1:
		return metadata.GraphsyncFilecoinV1{PieceCID: v.PieceCID, VerifiedDeal: v.VerifiedDeal, FastRetrieval: v.FastRetrieval}
	case ipnimeta.IpfsGatewayHttp, *ipnimeta.IpfsGatewayHttp:
		return metadata.IPFSGatewayHTTP{}
	case ipnimeta.FilecoinPieceHttp, *ipnimeta.FilecoinPieceHttp:
		return metadata.FilecoinPieceHTTP{}
	case *ipnimeta.Unknown:
		code, n, err := varint.FromUvarint(v.Payload)
		if err != nil || code != uint64(v.Code) {
			t.Fatalf("go-libipni unknown protocol %#x: payload %x does not start with its code", uint64(v.Code), v.Payload)
		}
		length, m, err := varint.FromUvarint(v.Payload[n:])
		if err != nil || uint64(len(v.Payload)-n-m) != length {
			t.Fatalf("go-libipni unknown protocol %#x: payload %x has a bad length", uint64(v.Code), v.Payload)
		}
		return metadata.Unknown{Code: code, Payload: v.Payload[n+m:]}
	}
	t.Fatalf("go-libipni protocol of type %T", p)
	return nil
}

// ourMetadata converts go-libipni metadata to ours.
func ourMetadata(t testing.TB, m *ipnimeta.Metadata) metadata.Metadata {
	t.Helper()
	var ps []metadata.Protocol
	for _, code := range m.Protocols() {
		ps = append(ps, ourProtocol(t, m.Get(code)))
	}
	out, err := metadata.New(ps...)
	if err != nil {
		t.Fatalf("converting go-libipni metadata: %v", err)
	}
	return out
}

// refOutcome is what go-libipni's UnmarshalBinary does with metadata it
// encoded itself.
type refOutcome int

const (
	refReads refOutcome = iota // decodes it to the same protocols
	refFails                   // returns an error
	refLossy                   // returns no error but drops protocols
)

// TestMetadataMatchesReference builds the same protocol sets with
// go-libipni (metadata.Default.New) and with ours (metadata.New): the
// encodings are identical, our Decode reads go-libipni's bytes to the same
// protocols and values, and go-libipni's UnmarshalBinary reads ours where
// its decoder works. Where it does not, the test asserts the known
// reference bug as well as our success.
func TestMetadataMatchesReference(t *testing.T) {
	otherPiece := cid.MustParse("QmUJ4tejUDCQ2nVGCbGNzU5HYeLN7BdziKsLnh2yReJe6b")
	gs := func(piece cid.Cid, verified, fast bool) (*ipnimeta.GraphsyncFilecoinV1, metadata.GraphsyncFilecoinV1) {
		return &ipnimeta.GraphsyncFilecoinV1{PieceCID: piece, VerifiedDeal: verified, FastRetrieval: fast},
			metadata.GraphsyncFilecoinV1{PieceCID: piece, VerifiedDeal: verified, FastRetrieval: fast}
	}
	gsRef, gsOurs := gs(pieceCID, true, true)
	gs2Ref, gs2Ours := gs(otherPiece, false, true)
	gs3Ref, gs3Ours := gs(pieceCID, true, false)
	hello := []byte("hello")
	tests := []struct {
		name    string
		theirs  []ipnimeta.Protocol
		ours    []metadata.Protocol
		outcome refOutcome
		wantHex string // the encoding, when pinned
	}{
		{"bitswap", []ipnimeta.Protocol{ipnimeta.Bitswap{}}, []metadata.Protocol{metadata.Bitswap{}}, refReads, "8012"},
		{"bitswap-pointer", []ipnimeta.Protocol{&ipnimeta.Bitswap{}}, []metadata.Protocol{&metadata.Bitswap{}}, refReads, "8012"},
		{"ipfs-gateway-http", []ipnimeta.Protocol{&ipnimeta.IpfsGatewayHttp{}}, []metadata.Protocol{metadata.IPFSGatewayHTTP{}}, refReads, "a01200"},
		{"filecoin-piece-http", []ipnimeta.Protocol{&ipnimeta.FilecoinPieceHttp{}}, []metadata.Protocol{metadata.FilecoinPieceHTTP{}}, refReads, "b01200"},
		{"graphsync", []ipnimeta.Protocol{gsRef}, []metadata.Protocol{gsOurs}, refReads, ""},
		{"graphsync-cidv0-piece", []ipnimeta.Protocol{gs2Ref}, []metadata.Protocol{gs2Ours}, refReads, ""},
		{"graphsync-verified-only", []ipnimeta.Protocol{gs3Ref}, []metadata.Protocol{gs3Ours}, refReads, ""},
		{"bitswap+graphsync", []ipnimeta.Protocol{ipnimeta.Bitswap{}, gsRef}, []metadata.Protocol{metadata.Bitswap{}, gsOurs}, refReads, ""},
		{"graphsync+bitswap-given-unsorted", []ipnimeta.Protocol{gsRef, ipnimeta.Bitswap{}}, []metadata.Protocol{gsOurs, metadata.Bitswap{}}, refReads, ""},
		{"bitswap+gateway", []ipnimeta.Protocol{ipnimeta.Bitswap{}, &ipnimeta.IpfsGatewayHttp{}}, []metadata.Protocol{metadata.Bitswap{}, metadata.IPFSGatewayHTTP{}}, refReads, "8012a01200"},
		{"gateway+piece-http", []ipnimeta.Protocol{&ipnimeta.FilecoinPieceHttp{}, &ipnimeta.IpfsGatewayHttp{}}, []metadata.Protocol{metadata.FilecoinPieceHTTP{}, metadata.IPFSGatewayHTTP{}}, refReads, "a01200b01200"},
		{"unknown", []ipnimeta.Protocol{refUnknown(0x3f0042, hello)}, []metadata.Protocol{metadata.Unknown{Code: 0x3f0042, Payload: hello}}, refReads, "c280fc010568656c6c6f"},
		{"unknown+bitswap", []ipnimeta.Protocol{ipnimeta.Bitswap{}, refUnknown(uint64(multicodec.Http), hello)}, []metadata.Protocol{metadata.Bitswap{}, metadata.Unknown{Code: uint64(multicodec.Http), Payload: hello}}, refReads, "e0030568656c6c6f8012"},
		// go-libipni's bug: graphsync not last (its dag-cbor decoder is
		// handed all remaining bytes).
		{"graphsync+gateway", []ipnimeta.Protocol{gsRef, &ipnimeta.IpfsGatewayHttp{}}, []metadata.Protocol{gsOurs, metadata.IPFSGatewayHTTP{}}, refFails, ""},
		{"graphsync+piece-http", []ipnimeta.Protocol{gs2Ref, &ipnimeta.FilecoinPieceHttp{}}, []metadata.Protocol{gs2Ours, metadata.FilecoinPieceHTTP{}}, refFails, ""},
		{"bitswap+graphsync+gateway", []ipnimeta.Protocol{ipnimeta.Bitswap{}, &ipnimeta.GraphsyncFilecoinV1{PieceCID: pieceCID, VerifiedDeal: true, FastRetrieval: true}, &ipnimeta.IpfsGatewayHttp{}},
			[]metadata.Protocol{metadata.Bitswap{}, gsOurs, metadata.IPFSGatewayHTTP{}}, refFails, ""},
		{"all-four", []ipnimeta.Protocol{ipnimeta.Bitswap{}, &ipnimeta.GraphsyncFilecoinV1{PieceCID: pieceCID, VerifiedDeal: true, FastRetrieval: true}, &ipnimeta.IpfsGatewayHttp{}, &ipnimeta.FilecoinPieceHttp{}},
			[]metadata.Protocol{metadata.FilecoinPieceHTTP{}, metadata.IPFSGatewayHTTP{}, gsOurs, metadata.Bitswap{}}, refFails, ""},
		// go-libipni's bug: wrong offsets from the third protocol on.
		{"bitswap+gateway+piece-http", []ipnimeta.Protocol{ipnimeta.Bitswap{}, &ipnimeta.IpfsGatewayHttp{}, &ipnimeta.FilecoinPieceHttp{}},
			[]metadata.Protocol{metadata.Bitswap{}, metadata.IPFSGatewayHTTP{}, metadata.FilecoinPieceHTTP{}}, refFails, "8012a01200b01200"},
		{"unknown+bitswap+gateway", []ipnimeta.Protocol{ipnimeta.Bitswap{}, refUnknown(uint64(multicodec.Http), hello), &ipnimeta.IpfsGatewayHttp{}},
			[]metadata.Protocol{metadata.Bitswap{}, metadata.Unknown{Code: uint64(multicodec.Http), Payload: hello}, metadata.IPFSGatewayHTTP{}}, refLossy, "e0030568656c6c6f8012a01200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refMeta := ipnimeta.Default.New(tt.theirs...)
			theirs, err := refMeta.MarshalBinary()
			if err != nil {
				t.Fatalf("go-libipni MarshalBinary: %v", err)
			}
			oursMeta, err := metadata.New(tt.ours...)
			if err != nil {
				t.Fatalf("our New: %v", err)
			}
			ours := oursMeta.Encode()
			if !bytes.Equal(ours, theirs) {
				t.Errorf("encodings differ:\n ours   %x\n theirs %x", ours, theirs)
			}
			if tt.wantHex != "" && hex.EncodeToString(ours) != tt.wantHex {
				t.Errorf("encoding is %x, want %s", ours, tt.wantHex)
			}

			// Our Decode reads go-libipni's bytes, whatever the order.
			decoded, err := metadata.Decode(theirs)
			if err != nil {
				t.Fatalf("our Decode of go-libipni's %x: %v", theirs, err)
			}
			if !decoded.Equal(oursMeta) || decoded.Len() != len(tt.ours) {
				t.Errorf("our Decode of %x gives %s, want %s", theirs, decoded, oursMeta)
			}
			if want := ourMetadata(t, &refMeta); !decoded.Equal(want) {
				t.Errorf("our Decode gives %s, go-libipni built %s", decoded, want)
			}
			for _, rp := range tt.theirs {
				p, ok := decoded.Get(uint64(rp.ID()))
				if !ok {
					t.Errorf("our Decode lost %s", rp.ID())
					continue
				}
				if g, ok := rp.(*ipnimeta.GraphsyncFilecoinV1); ok {
					og := p.(metadata.GraphsyncFilecoinV1)
					if !og.PieceCID.Equals(g.PieceCID) || og.VerifiedDeal != g.VerifiedDeal || og.FastRetrieval != g.FastRetrieval {
						t.Errorf("graphsync: ours %s, go-libipni %+v", og, *g)
					}
				}
			}

			// go-libipni's UnmarshalBinary on our bytes.
			var back ipnimeta.Metadata
			back = ipnimeta.Default.New()
			err = back.UnmarshalBinary(ours)
			switch tt.outcome {
			case refReads:
				if err != nil {
					t.Fatalf("go-libipni UnmarshalBinary of our %x: %v", ours, err)
				}
				if !back.Equal(refMeta) {
					t.Errorf("go-libipni decodes our %x to %v, want %v", ours, back.Protocols(), refMeta.Protocols())
				}
				if got := ourMetadata(t, &back); !got.Equal(oursMeta) {
					t.Errorf("go-libipni decodes our %x to %s, want %s", ours, got, oursMeta)
				}
			case refFails:
				if err == nil {
					t.Errorf("go-libipni UnmarshalBinary of %x succeeded (%v): has the reference bug been fixed? Update this test", ours, back.Protocols())
				} else {
					t.Logf("reference bug, as expected: go-libipni UnmarshalBinary(%x): %v; ours: %s", ours, err, decoded)
				}
			case refLossy:
				if err != nil {
					t.Errorf("go-libipni UnmarshalBinary of %x: %v, expected it to succeed and drop protocols", ours, err)
				} else if back.Len() >= len(tt.ours) {
					t.Errorf("go-libipni UnmarshalBinary of %x kept all protocols (%v): has the reference bug been fixed? Update this test", ours, back.Protocols())
				} else {
					t.Logf("reference bug, as expected: go-libipni UnmarshalBinary(%x) keeps only %v; ours: %s", ours, back.Protocols(), decoded)
				}
			}
		})
	}
}

// TestMetadataGraphsyncNotLast is the documented reference bug, stated as
// an assertion about both decoders: for bitswap + graphsync +
// ipfs-gateway-http, which go-libipni's own encoder writes, go-libipni's
// UnmarshalBinary fails with "unexpected content after end of cbor object"
// while our Decode returns all three protocols with the graphsync values.
func TestMetadataGraphsyncNotLast(t *testing.T) {
	ref := ipnimeta.Default.New(ipnimeta.Bitswap{},
		&ipnimeta.GraphsyncFilecoinV1{PieceCID: pieceCID, VerifiedDeal: true, FastRetrieval: true},
		&ipnimeta.IpfsGatewayHttp{})
	b, err := ref.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	var theirs ipnimeta.Metadata = ipnimeta.Default.New()
	err = theirs.UnmarshalBinary(b)
	if err == nil || !strings.Contains(err.Error(), "unexpected content after end of cbor object") {
		t.Errorf("go-libipni UnmarshalBinary(%x) = %v, want the error \"unexpected content after end of cbor object\"", b, err)
	}

	ours, err := metadata.Decode(b)
	if err != nil {
		t.Fatalf("our Decode(%x): %v", b, err)
	}
	if ours.Len() != 3 {
		t.Fatalf("our Decode(%x) gives %s, want 3 protocols", b, ours)
	}
	p, ok := ours.Get(metadata.CodeGraphsyncFilecoinV1)
	if !ok {
		t.Fatalf("our Decode(%x) has no graphsync", b)
	}
	if g := p.(metadata.GraphsyncFilecoinV1); !g.PieceCID.Equals(pieceCID) || !g.VerifiedDeal || !g.FastRetrieval {
		t.Errorf("graphsync decodes to %s", g)
	}
	for _, code := range []uint64{metadata.CodeBitswap, metadata.CodeIPFSGatewayHTTP} {
		if _, ok := ours.Get(code); !ok {
			t.Errorf("our Decode(%x) lacks %#x", b, code)
		}
	}
	piece, ok, err := metadata.PieceCID(b)
	if err != nil || !ok || !piece.Equals(pieceCID) {
		t.Errorf("PieceCID(%x) = %s, %t, %v", b, piece, ok, err)
	}
	if !bytes.Equal(ours.Encode(), b) {
		t.Errorf("our re-encoding %x differs from go-libipni's %x", ours.Encode(), b)
	}
}

// TestMetadataDocumentedDifferences asserts the differences from go-libipni
// that ingest/metadata documents, so that a change on either side shows.
func TestMetadataDocumentedDifferences(t *testing.T) {
	// Empty metadata: go-libipni rejects it, ours is the empty Metadata.
	var theirs ipnimeta.Metadata = ipnimeta.Default.New()
	if err := theirs.UnmarshalBinary(nil); err == nil {
		t.Error("go-libipni accepts empty metadata")
	}
	if m, err := metadata.Decode(nil); err != nil || m.Len() != 0 {
		t.Errorf("our Decode(empty) = %s, %v", m, err)
	}

	// HTTPV1: go-libipni encodes it to zero bytes, ours to e0 03 00.
	h := ipnimeta.Default.New(ipnimeta.HTTPV1())
	hb, err := h.MarshalBinary()
	if err != nil || len(hb) != 0 {
		t.Errorf("go-libipni HTTPV1 encodes to %x, %v; documented as no bytes", hb, err)
	}
	ours, err := metadata.New(metadata.Unknown{Code: uint64(multicodec.Http)})
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(ours.Encode()); got != "e00300" {
		t.Errorf("our HTTP (0x01e0, empty payload) encodes to %s, want e00300", got)
	}
	// And go-libipni reads our form back as an unknown protocol with that code.
	var back ipnimeta.Metadata = ipnimeta.Default.New()
	if err := back.UnmarshalBinary(ours.Encode()); err != nil {
		t.Errorf("go-libipni UnmarshalBinary(e00300): %v", err)
	} else if p := back.Get(multicodec.Http); p == nil {
		t.Errorf("go-libipni UnmarshalBinary(e00300) gives %v", back.Protocols())
	}

	// A repeated code: go-libipni keeps both, ours refuses.
	dup := []byte{0x80, 0x12, 0x80, 0x12}
	var d ipnimeta.Metadata = ipnimeta.Default.New()
	if err := d.UnmarshalBinary(dup); err != nil || d.Len() != 2 {
		t.Errorf("go-libipni UnmarshalBinary(%x) = %d protocols, %v; documented as keeping both", dup, d.Len(), err)
	}
	if _, err := metadata.Decode(dup); err == nil {
		t.Errorf("our Decode(%x) accepts a repeated code", dup)
	}
}

// TestMetadataGoldenWithReference runs go-libipni's decoder over the golden
// vectors of ingest/metadata: it reads each one to the protocols ours reads
// and re-encodes it to the same bytes, except the three vectors with
// graphsync not last, on which it fails.
func TestMetadataGoldenWithReference(t *testing.T) {
	refFailsOn := map[string]bool{"graphsync+gateway": true, "bitswap+graphsync+gateway": true, "all-four": true}
	f, err := os.Open(filepath.Join("..", "ingest", "metadata", "testdata", "golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("bad line %q", line)
		}
		name := fields[0]
		b, err := hex.DecodeString(fields[1])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n++
		t.Run(name, func(t *testing.T) {
			ours, err := metadata.Decode(b)
			if err != nil {
				t.Fatalf("our Decode: %v", err)
			}
			var theirs ipnimeta.Metadata = ipnimeta.Default.New()
			err = theirs.UnmarshalBinary(b)
			if refFailsOn[name] {
				if err == nil {
					t.Errorf("go-libipni decodes %x (%v): has the reference bug been fixed?", b, theirs.Protocols())
				}
				return
			}
			if err != nil {
				t.Fatalf("go-libipni UnmarshalBinary: %v", err)
			}
			if got := ourMetadata(t, &theirs); !got.Equal(ours) {
				t.Errorf("go-libipni reads %s, ours %s", got, ours)
			}
			again, err := theirs.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("go-libipni re-encodes to %x, want %x", again, b)
			}
		})
	}
	if n < 10 {
		t.Errorf("only %d golden metadata vectors", n)
	}
}
