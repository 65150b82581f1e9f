package schema

import (
	"testing"

	"github.com/multiformats/go-multihash"
)

// Each benchmark has baselines measured in the same run: "ipld" is the
// reference path (go-ipld-prime bindnode and its codecs, as go-libipni
// encodes and decodes, without the hash check), and "sha256" only hashes
// the block, the floor any encode or verified decode pays. "append" is
// AppendEntryChunk as the walker calls it (reused slice, no hash).

func benchAd(b *testing.B) *Advertisement {
	key, id := seededKey(b, 1)
	ad := sampleAds(id, id)["full"]
	if err := ad.Sign(key); err != nil {
		b.Fatal(err)
	}
	return ad
}

func BenchmarkEncodeAdvertisement(b *testing.B) {
	ad := benchAd(b)
	block, _, _ := ad.Encode()
	b.Run("indexkit", func(b *testing.B) {
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ad.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ipld", func(b *testing.B) {
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			enc, err := encodeNode(DagJSON, ad.node(), adProto)
			if err != nil {
				b.Fatal(err)
			}
			_, _, _ = blockCid(DagJSON, enc)
		}
	})
	b.Run("sha256", func(b *testing.B) { benchHash(b, block) })
}

func BenchmarkDecodeAdvertisement(b *testing.B) {
	ad := benchAd(b)
	for _, codec := range []uint64{DagJSON, DagCBOR} {
		block, c, err := ad.EncodeAs(codec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(codecName(codec), func(b *testing.B) {
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeAdvertisement(c, block); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("verify-signature", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ad.VerifySignature(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeEntryChunk(b *testing.B) {
	ch := chunkOf("bench", 1000, jsonCid("next"))
	block, _, _ := ch.Encode()
	b.Run("1000/indexkit", func(b *testing.B) {
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ch.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1000/ipld", func(b *testing.B) {
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			enc, err := encodeNode(DagJSON, ch.node(), chunkProto)
			if err != nil {
				b.Fatal(err)
			}
			_, _, _ = blockCid(DagJSON, enc)
		}
	})
	b.Run("1000/sha256", func(b *testing.B) { benchHash(b, block) })
}

func BenchmarkDecodeEntryChunk(b *testing.B) {
	ch := chunkOf("bench", 1000, jsonCid("next"))
	for _, codec := range []uint64{DagJSON, DagCBOR} {
		block, c, err := ch.EncodeAs(codec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("1000/"+codecName(codec), func(b *testing.B) {
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeEntryChunk(c, block); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("1000/"+codecName(codec)+"/append", func(b *testing.B) {
			// AppendEntryChunk as a walker calls it: onto a reused slice,
			// the hash checked by the fetcher.
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			var mhs []multihash.Multihash
			for b.Loop() {
				if mhs, _, err = AppendEntryChunk(mhs[:0], c, block, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("1000/"+codecName(codec)+"/decoder", func(b *testing.B) {
			// An EntryDecoder, the walker's: its memory reused.
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			var d EntryDecoder
			for b.Loop() {
				if _, _, err := d.Decode(c, block, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("1000/"+codecName(codec)+"/ipld", func(b *testing.B) {
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := slowEntryChunk(codec, block); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("1000/"+codecName(codec)+"/sha256", func(b *testing.B) { benchHash(b, block) })
	}
}

func benchHash(b *testing.B, block []byte) {
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := multihash.Sum(block, multihash.SHA2_256, -1); err != nil {
			b.Fatal(err)
		}
	}
}
