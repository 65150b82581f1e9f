package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var decodeSentinels = []error{
	ErrBlockTooLarge, ErrUnsupportedCodec, ErrHashMismatch, ErrMalformed,
	ErrInvalidAdvertisement, ErrInvalidEntryChunk,
}

func isSentinel(err error) bool {
	for _, s := range decodeSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// addSeeds adds the golden vectors with the given prefix to the corpus.
func addSeeds(f *testing.F, prefix string) {
	for _, ext := range []string{".dagjson", ".dagcbor"} {
		files, _ := filepath.Glob(filepath.Join("testdata", prefix+"*"+ext))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, ext == ".dagcbor")
		}
	}
	f.Add([]byte(`{}`), false)
	f.Add([]byte{0xa0}, true)
	f.Add([]byte(`{"Entries":[{"/":{"bytes":"EiA"}}],"Next":null}`), false)
}

func fuzzCodec(cbor bool) uint64 {
	if cbor {
		return DagCBOR
	}
	return DagJSON
}

// FuzzDecodeAdvertisement: decoding never panics and fails only with the
// package's sentinels; what decodes re-encodes, in both codecs, to blocks
// that decode to an equal value, and the dag-json fast path agrees with
// go-ipld-prime's encoder.
func FuzzDecodeAdvertisement(f *testing.F) {
	addSeeds(f, "ad-")
	f.Fuzz(func(t *testing.T, data []byte, cbor bool) {
		_, c, err := blockCid(fuzzCodec(cbor), data)
		if err != nil {
			t.Fatal(err)
		}
		ad, err := DecodeAdvertisement(c, data)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		_, _ = ad.VerifySignature() // must not panic
		for _, codec := range []uint64{DagJSON, DagCBOR} {
			b, c2, err := ad.EncodeAs(codec)
			if err != nil {
				t.Fatalf("re-encode 0x%x: %v", codec, err)
			}
			got, err := DecodeAdvertisement(c2, b)
			if err != nil {
				t.Fatalf("decode re-encoded 0x%x: %v\n%q", codec, err, b)
			}
			if !got.Equal(ad) {
				t.Fatalf("0x%x round trip differs:\n got %+v\nwant %+v", codec, got, ad)
			}
			if codec == DagJSON {
				want, err := encodeNode(DagJSON, ad.node(), adProto)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want) {
					t.Fatalf("Encode differs from go-ipld-prime:\n got %s\nwant %s", b, want)
				}
			}
		}
	})
}

// FuzzDecodeEntryChunk is FuzzDecodeAdvertisement for entry chunks.
func FuzzDecodeEntryChunk(f *testing.F) {
	addSeeds(f, "chunk-")
	f.Fuzz(func(t *testing.T, data []byte, cbor bool) {
		_, c, err := blockCid(fuzzCodec(cbor), data)
		if err != nil {
			t.Fatal(err)
		}
		// The fast path must agree with go-ipld-prime whenever it is taken.
		fast, ok := fastChunkJSON(data)
		if cbor {
			fast, ok = fastChunkCBOR(data)
		}
		if ok {
			slow, err := slowEntryChunk(fuzzCodec(cbor), data)
			if err != nil {
				t.Fatalf("fast path accepts what go-ipld-prime rejects: %v", err)
			}
			if !fast.Equal(slow) {
				t.Fatal("fast path and go-ipld-prime decode differently")
			}
		}
		ch, err := DecodeEntryChunk(c, data)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		for _, codec := range []uint64{DagJSON, DagCBOR} {
			b, c2, err := ch.EncodeAs(codec)
			if err != nil {
				t.Fatalf("re-encode 0x%x: %v", codec, err)
			}
			got, err := DecodeEntryChunk(c2, b)
			if err != nil {
				t.Fatalf("decode re-encoded 0x%x: %v", codec, err)
			}
			if !got.Equal(ch) {
				t.Fatalf("0x%x round trip differs", codec)
			}
			if codec == DagJSON {
				want, err := encodeNode(DagJSON, ch.node(), chunkProto)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, want) {
					t.Fatalf("Encode differs from go-ipld-prime:\n got %s\nwant %s", b, want)
				}
			}
		}
	})
}
