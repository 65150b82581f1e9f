package schema

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"
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

// FuzzAppendEntryChunk: AppendEntryChunk accepts and rejects what
// DecodeEntryChunk does, with the same error text, decodes the same
// entries after those already in dst, leaves dst as it was on error, and
// with hashChecked (the hash being right) decides the same. The parsers
// behind it agree with go-ipld-prime whenever they take a block.
func FuzzAppendEntryChunk(f *testing.F) {
	addSeeds(f, "chunk-")
	f.Add([]byte("{\"Entries\":[{\"/\":{\"bytes\":\"EiAA\nAAA\"}}]}"), false)
	f.Add([]byte{0xa1, 0x67, 'E', 'n', 't', 'r', 'i', 'e', 's', 0x81, 0x42, 0x00, 0x00}, true)
	f.Fuzz(func(t *testing.T, data []byte, cbor bool) {
		codec := fuzzCodec(cbor)
		_, c, err := blockCid(codec, data)
		if err != nil {
			t.Fatal(err)
		}
		var entries []multihash.Multihash
		var ok bool
		if cbor {
			entries, _, ok = parseChunkCBOR(nil, data, true)
		} else {
			entries, _, ok = parseChunkJSON(nil, nil, data)
		}
		if ok {
			slow, err := slowEntryChunk(codec, data)
			if err != nil {
				t.Fatalf("parser accepts what go-ipld-prime rejects: %v", err)
			}
			if !slices.EqualFunc(entries, slow.Entries, func(a, b multihash.Multihash) bool { return bytes.Equal(a, b) }) {
				t.Fatal("parser and go-ipld-prime decode differently")
			}
		}
		want, wantErr := DecodeEntryChunk(c, data)
		for _, hashChecked := range []bool{false, true} {
			dst := []multihash.Multihash{multihash.Multihash("keep")}
			got, next, err := AppendEntryChunk(dst, c, data, hashChecked)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("hashChecked %v: AppendEntryChunk error %v, DecodeEntryChunk error %v", hashChecked, err, wantErr)
			}
			if len(got) == 0 || string(got[0]) != "keep" {
				t.Fatal("dst's entries changed")
			}
			if err != nil {
				if len(got) != 1 {
					t.Fatalf("dst grew by %d on error", len(got)-1)
				}
				continue
			}
			if !(&EntryChunk{Entries: got[1:], Next: next}).Equal(want) {
				t.Fatalf("hashChecked %v: AppendEntryChunk decodes differently", hashChecked)
			}
		}
		// An EntryDecoder decides and decodes the same, on its first
		// chunk and on one after another it decoded into the same memory.
		for _, hashChecked := range []bool{false, true} {
			var d EntryDecoder
			for round := range 2 {
				got, next, err := d.Decode(c, data, hashChecked)
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("round %d: EntryDecoder error %v, DecodeEntryChunk error %v", round, err, wantErr)
				}
				if err == nil && !(&EntryChunk{Entries: got, Next: next}).Equal(want) {
					t.Fatalf("round %d: EntryDecoder decodes differently", round)
				}
			}
		}
	})
}

// FuzzDecodeBase64: the fast path's base64 decoder decodes what
// base64.RawStdEncoding decodes, to the same bytes, for every text of the
// alphabet alone whose length is not 1 modulo 4, and refuses the rest.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"", "EiA", "EiB", "EiAA", "EiAA\nAAA", "Ei*A", "Ei-_", "EiA=", "QUJD", "QUI", "QQ", "Q"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n := base64.RawStdEncoding.DecodedLen(len(src))
		got := make([]byte, n)
		ok := decodeBase64(got, src)
		alphabet := len(src)%4 != 1
		for _, c := range src {
			alphabet = alphabet && base64Values[c] != 0xff
		}
		if ok != alphabet {
			t.Fatalf("decodeBase64(%q) reports %v", src, ok)
		}
		if !ok {
			return
		}
		want, err := base64.RawStdEncoding.DecodeString(string(src))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("decodeBase64(%q) = %x; encoding/base64: %x, %v", src, got, want, err)
		}
	})
}
