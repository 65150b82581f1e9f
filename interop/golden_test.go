package interop

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	ipnischema "github.com/ipni/go-libipni/ingest/schema"
)

// schemaTestdata is the directory of the schema package's golden vectors.
var schemaTestdata = filepath.Join("..", "ingest", "schema", "testdata")

// TestGoldenVectorsWithReference reads every golden vector of ingest/schema
// (testdata/vectors.txt: name, codec, CID) and checks that go-libipni
// decodes it to the same field values as ours, that both verify the ads'
// signatures with the same signer, and that go-libipni re-encodes what it
// decoded to the same block and CID, for dag-json and dag-cbor alike.
func TestGoldenVectorsWithReference(t *testing.T) {
	f, err := os.Open(filepath.Join(schemaTestdata, "vectors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("bad line %q", line)
		}
		name, codecName := fields[0], fields[1]
		c, err := cid.Decode(fields[2])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		codec := map[string]uint64{"dagjson": schema.DagJSON, "dagcbor": schema.DagCBOR}[codecName]
		if codec == 0 || c.Prefix().Codec != codec {
			t.Fatalf("%q: codec %s does not match the CID", line, codecName)
		}
		block, err := os.ReadFile(filepath.Join(schemaTestdata, name+"."+codecName))
		if err != nil {
			t.Fatal(err)
		}
		n++
		t.Run(name+"."+codecName, func(t *testing.T) {
			if strings.HasPrefix(name, "chunk-") {
				checkGoldenChunk(t, c, codec, block)
			} else {
				checkGoldenAd(t, c, codec, block)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d golden vectors", n)
	}
}

func checkGoldenAd(t *testing.T, c cid.Cid, codec uint64, block []byte) {
	ours, err := schema.DecodeAdvertisement(c, block)
	if err != nil {
		t.Fatalf("ours: %v", err)
	}
	ref, err := ipnischema.BytesToAdvertisement(c, block)
	if err != nil {
		t.Fatalf("go-libipni: %v", err)
	}
	if err := ref.Validate(); err != nil {
		t.Errorf("go-libipni Validate: %v", err)
	}
	if theirs := fromRef(t, &ref); !theirs.Equal(ours) {
		t.Errorf("decoded fields differ:\n ours   %s\n theirs %s", describeAd(ours), describeAd(theirs))
	}
	if got := ref.PreviousCid(); !got.Equals(ours.PreviousID) {
		t.Errorf("PreviousID: go-libipni %s, ours %s", got, ours.PreviousID)
	}
	oursSigner, err := ours.VerifySignature()
	if err != nil {
		t.Fatalf("ours VerifySignature: %v", err)
	}
	theirsSigner, err := ref.VerifySignature()
	if err != nil {
		t.Fatalf("go-libipni VerifySignature: %v", err)
	}
	if oursSigner != theirsSigner || oursSigner.String() != ours.Provider {
		t.Errorf("signer: ours %s, go-libipni %s, provider %s", oursSigner, theirsSigner, ours.Provider)
	}
	again, againCID := refEncodeAd(t, ref, codec)
	if !againCID.Equals(c) {
		t.Errorf("go-libipni re-encodes to CID %s, want %s", againCID, c)
	}
	if !bytes.Equal(again, block) {
		t.Errorf("go-libipni re-encodes to\n %s\nwant\n %s", printable(again), printable(block))
	}
}

func checkGoldenChunk(t *testing.T, c cid.Cid, codec uint64, block []byte) {
	ours, err := schema.DecodeEntryChunk(c, block)
	if err != nil {
		t.Fatalf("ours: %v", err)
	}
	ref, err := ipnischema.BytesToEntryChunk(c, block)
	if err != nil {
		t.Fatalf("go-libipni: %v", err)
	}
	if theirs := fromRefChunk(&ref); !theirs.Equal(ours) {
		t.Errorf("decoded chunks differ: ours %d entries, Next %s; go-libipni %d, %s",
			len(ours.Entries), ours.Next, len(theirs.Entries), theirs.Next)
	}
	again, againCID := refEncodeChunk(t, ref, codec)
	if !againCID.Equals(c) {
		t.Errorf("go-libipni re-encodes to CID %s, want %s", againCID, c)
	}
	if !bytes.Equal(again, block) {
		t.Errorf("go-libipni re-encodes to\n %s\nwant\n %s", printable(again), printable(block))
	}
}
