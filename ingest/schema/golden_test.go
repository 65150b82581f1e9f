package schema

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
)

var update = flag.Bool("update", false, "rewrite the golden vectors in testdata/")

// goldenVector is one block of testdata/: name.dagjson or name.dagcbor,
// listed with its CID in testdata/vectors.txt.
type goldenVector struct {
	name  string
	codec uint64
	ad    *Advertisement // or
	chunk *EntryChunk
}

func (v goldenVector) file() string {
	ext := ".dagjson"
	if v.codec == DagCBOR {
		ext = ".dagcbor"
	}
	return filepath.Join("testdata", v.name+ext)
}

// goldenVectors builds the vectors from seeded Ed25519 keys (seed 1 the
// provider, seed 2 an extended provider). Ed25519 signatures are
// deterministic, so the blocks are too.
func goldenVectors(t *testing.T) []goldenVector {
	key, id := seededKey(t, 1)
	epKey, epID := seededKey(t, 2)
	ads := sampleAds(id, epID)
	var vs []goldenVector
	for _, name := range []string{"genesis-noentries", "full", "removal", "empty-lists"} {
		ad := ads[name]
		if err := ad.Sign(key); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, goldenVector{name: "ad-" + name, codec: DagJSON, ad: ad})
	}
	ep := ads["extended"]
	if err := ep.SignWithExtendedProviders(key, func(string) (crypto.PrivKey, error) { return epKey, nil }); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, goldenVector{name: "ad-extended", codec: DagJSON, ad: ep})

	legacy := *ads["full"]
	payload, err := adPayload(&legacy, true)
	if err != nil {
		t.Fatal(err)
	}
	if legacy.Signature, err = seal(AdSignatureType, payload, key); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, goldenVector{name: "ad-legacy-signature", codec: DagJSON, ad: &legacy})
	vs = append(vs, goldenVector{name: "ad-full", codec: DagCBOR, ad: ads["full"]})

	vs = append(vs,
		goldenVector{name: "chunk-last", codec: DagJSON, chunk: chunkOf("golden", 3, cid.Undef)},
		goldenVector{name: "chunk-linked", codec: DagJSON, chunk: chunkOf("golden", 16, jsonCid("next chunk"))},
		goldenVector{name: "chunk-linked", codec: DagCBOR, chunk: chunkOf("golden", 16, jsonCid("next chunk"))},
	)
	return vs
}

// TestGolden checks that encoding gives the blocks and CIDs in testdata/,
// and that those blocks decode to the same values with valid signatures.
// Run with -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	vs := goldenVectors(t)
	var list bytes.Buffer
	fmt.Fprintln(&list, "# name codec cid — written by go test -run TestGolden -update; see golden_test.go")
	for _, v := range vs {
		var (
			block []byte
			c     cid.Cid
			err   error
		)
		if v.ad != nil {
			block, c, err = v.ad.EncodeAs(v.codec)
		} else {
			block, c, err = v.chunk.EncodeAs(v.codec)
		}
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		fmt.Fprintf(&list, "%s %s %s\n", v.name, codecName(v.codec), c)
		if *update {
			if err := os.WriteFile(v.file(), block, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(v.file())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(block, want) {
			t.Errorf("%s: encoding differs from %s:\n got %s\nwant %s", v.name, v.file(), block, want)
		}
	}
	if *update {
		if err := os.WriteFile(filepath.Join("testdata", "vectors.txt"), list.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.Join("testdata", "vectors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(list.Bytes(), want) {
		t.Errorf("CIDs differ from testdata/vectors.txt:\n got\n%s\nwant\n%s", list.Bytes(), want)
	}
}

// TestGoldenDecode decodes every vector listed in testdata/vectors.txt
// under its CID and verifies the ads' signatures.
func TestGoldenDecode(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "vectors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, id := seededKey(t, 1)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fields := strings.Fields(line)
		name, codec := fields[0], fields[1]
		c, err := cid.Decode(fields[2])
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		block, err := os.ReadFile(filepath.Join("testdata", name+"."+codec))
		if err != nil {
			t.Fatal(err)
		}
		n++
		if strings.HasPrefix(name, "chunk-") {
			if _, err := DecodeEntryChunk(c, block); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		ad, err := DecodeAdvertisement(c, block)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if signer, err := ad.VerifySignature(); err != nil || signer != id {
			t.Errorf("%s: signer %s, %v", name, signer, err)
		}
	}
	if n < 10 {
		t.Errorf("only %d vectors", n)
	}
}

func codecName(c uint64) string {
	if c == DagCBOR {
		return "dagcbor"
	}
	return "dagjson"
}
