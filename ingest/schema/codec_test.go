package schema

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func TestNoEntries(t *testing.T) {
	if got, want := NoEntries.String(), "bafkreehdwdcefgh4dqkjv67uzcmw7oje"; got != want {
		t.Fatalf("NoEntries = %s, want %s", got, want)
	}
	ad := &Advertisement{Entries: NoEntries}
	if ad.HasEntries() {
		t.Error("an ad with NoEntries has entries")
	}
	ad.Entries = jsonCid("x")
	if !ad.HasEntries() {
		t.Error("an ad with a chunk link has no entries")
	}
}

func TestRoundTrip(t *testing.T) {
	_, id := seededKey(t, 1)
	_, epID := seededKey(t, 2)
	for _, codec := range []uint64{DagJSON, DagCBOR} {
		for name, ad := range sampleAds(id, epID) {
			t.Run(fmt.Sprintf("%x/ad/%s", codec, name), func(t *testing.T) {
				block, c, err := ad.EncodeAs(codec)
				if err != nil {
					t.Fatal(err)
				}
				if c.Prefix().Codec != codec || c.Version() != 1 {
					t.Errorf("CID %s: codec 0x%x, want 0x%x", c, c.Prefix().Codec, codec)
				}
				got, err := DecodeAdvertisement(c, block)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(ad) {
					t.Errorf("decoded %+v\nwant %+v", got, ad)
				}
			})
		}
		for name, ch := range map[string]*EntryChunk{
			"empty":     {},
			"last":      chunkOf("a", 3, cid.Undef),
			"linked":    chunkOf("b", 10, jsonCid("next")),
			"1000":      chunkOf("c", 1000, jsonCid("next")),
			"cidv0next": chunkOf("d", 1, cid.NewCidV0(mh("v0"))),
		} {
			t.Run(fmt.Sprintf("%x/chunk/%s", codec, name), func(t *testing.T) {
				block, c, err := ch.EncodeAs(codec)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeEntryChunk(c, block)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(ch) {
					t.Errorf("decoded chunk differs: %d entries, next %s; want %d, %s", len(got.Entries), got.Next, len(ch.Entries), ch.Next)
				}
			})
		}
	}
}

// TestEncodeMatchesIPLD compares the dag-json fast path with go-ipld-prime's
// encoder (what go-libipni uses) on random values, including strings that
// need escaping (where Encode falls back to go-ipld-prime).
func TestEncodeMatchesIPLD(t *testing.T) {
	_, id := seededKey(t, 1)
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := range 2000 {
		ad := randomAd(r, id.String(), i%3 == 0)
		want, err := encodeNode(DagJSON, ad.node(), adProto)
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := appendAdJSON(nil, ad); ok {
			fast++
			if !bytes.Equal(b, want) {
				t.Fatalf("fast path differs from go-ipld-prime:\n got %s\nwant %s", b, want)
			}
		}
		if i%3 == 0 && validUTF8Strings(ad) {
			// Encode (validating, with fallback) must agree as well.
			if err := ad.Validate(); err == nil {
				got, _, err := ad.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("Encode differs from go-ipld-prime:\n got %s\nwant %s", got, want)
				}
			}
		}
	}
	if fast < 1000 {
		t.Errorf("fast path taken %d times of 2000", fast)
	}
	for n := range 50 {
		ch := chunkOf(fmt.Sprint(n), n*7, cid.Undef)
		if n%2 == 0 {
			ch.Next = jsonCid(fmt.Sprint(n))
		}
		ch.Entries = append(ch.Entries, multihash.Multihash{}, multihash.Multihash{0, 1, 0xff})
		want, err := encodeNode(DagJSON, ch.node(), chunkProto)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendChunkJSON(nil, ch); !bytes.Equal(got, want) {
			t.Fatalf("chunk fast path differs:\n got %s\nwant %s", got, want)
		}
	}
}

func validUTF8Strings(ad *Advertisement) bool { return checkAddrs("", ad.Addresses) == nil }

// TestWireFormatsExample rebuilds the ad shown in wire-formats.md §1 (the
// output of go-libipni, with its long values elided there) and checks every
// byte the document shows.
func TestWireFormatsExample(t *testing.T) {
	key, id := seededKey(t, 1)
	ad := &Advertisement{
		PreviousID: jsonCid("previous"),
		Provider:   id.String(),
		Addresses:  []string{"/ip4/127.0.0.1/tcp/1234/http"},
		Entries:    NoEntries,
		ContextID:  []byte("ctx-1"),
		Metadata:   []byte{0x90, 0x12, 0xa3, 0x00},
		IsRm:       true,
	}
	if err := ad.Sign(key); err != nil {
		t.Fatal(err)
	}
	block, c, err := ad.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The document's text, cut at each elision.
	parts := []string{
		`{"Addresses":["/ip4/127.0.0.1/tcp/1234/http"],"ContextID":{"/":{"bytes":"Y3R4LTE"}},"Entries":{"/":"bafkreehdwdcefgh4dqkjv67uzcmw7oje"},"IsRm":true,"Metadata":{"/":{"bytes":"kBKj`,
		`"}},"PreviousID":{"/":"baguqeera`,
		`"},"Provider":"12D3KooW`,
		`","Signature":{"/":{"bytes":"CiQIARIg`,
		`"}}}`,
	}
	rest := string(block)
	for i, p := range parts {
		j := strings.Index(rest, p)
		if j < 0 || (i == 0 && j != 0) {
			t.Fatalf("part %d %q not found in order in\n%s", i, p, block)
		}
		rest = rest[j+len(p):]
	}
	if rest != "" {
		t.Errorf("trailing %q", rest)
	}
	if !strings.HasPrefix(c.String(), "baguqeera") {
		t.Errorf("CID %s does not start with baguqeera", c)
	}
	// An Ed25519 envelope is 169 bytes.
	if len(ad.Signature) != 169 {
		t.Errorf("Ed25519 envelope is %d bytes, want 169", len(ad.Signature))
	}
}

func TestDecodeErrors(t *testing.T) {
	_, id := seededKey(t, 1)
	good := sampleAds(id, id)["full"]
	goodBlock, goodCid, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// raw encodes without validation, to build bad blocks.
	raw := func(ad *Advertisement, codec uint64) ([]byte, cid.Cid) {
		b, err := encodeNode(codec, ad.node(), adProto)
		if err != nil {
			t.Fatal(err)
		}
		b, c, err := blockCid(codec, b)
		if err != nil {
			t.Fatal(err)
		}
		return b, c
	}
	with := func(f func(*Advertisement)) *Advertisement {
		ad := *good
		f(&ad)
		return &ad
	}
	jsonBlock := func(s string) ([]byte, cid.Cid) {
		b, c, _ := blockCid(DagJSON, []byte(s))
		return b, c
	}
	type tc struct {
		name  string
		block []byte
		c     cid.Cid
		want  error
		words string
	}
	var tests []tc
	add := func(name string, b []byte, c cid.Cid, want error, words string) {
		tests = append(tests, tc{name, b, c, want, words})
	}
	tampered := bytes.Replace(goodBlock, []byte(`"IsRm":false`), []byte(`"IsRm":true `), 1)
	add("hash mismatch", tampered, goodCid, ErrHashMismatch, "hash mismatch")
	add("raw codec", goodBlock, cid.NewCidV1(cid.Raw, goodCid.Hash()), ErrUnsupportedCodec, "codec 0x55")
	add("dag-pb codec", goodBlock, cid.NewCidV0(goodCid.Hash()), ErrUnsupportedCodec, "codec 0x70")
	add("undefined CID", goodBlock, cid.Undef, ErrUnsupportedCodec, "undefined")
	sha512 := func() cid.Cid {
		m, _ := multihash.Sum(goodBlock, multihash.SHA2_512, -1)
		return cid.NewCidV1(DagJSON, m)
	}()
	add("sha2-512 mismatch", tampered, sha512, ErrHashMismatch, "hash mismatch")
	big := make([]byte, MaxBlockSize+1)
	_, bigCid, _ := blockCid(DagJSON, big)
	add("too large", big, bigCid, ErrBlockTooLarge, "limit 4194304")
	b, c := jsonBlock(`{"Addresses":[`)
	add("truncated json", b, c, ErrMalformed, "malformed")
	b, c = jsonBlock(`{"Addresses":[],"ContextID":{"/":{"bytes":""}},"IsRm":false,"Metadata":{"/":{"bytes":""}},"Provider":"x","Signature":{"/":{"bytes":""}}}`)
	add("missing Entries", b, c, ErrMalformed, "Entries")
	b, c = jsonBlock(strings.Replace(string(goodBlock), `"IsRm"`, `"Extra":1,"IsRm"`, 1))
	add("unknown field", b, c, ErrMalformed, "Extra")
	b, c = jsonBlock(strings.Replace(string(goodBlock), `"IsRm":false`, `"IsRm":"no"`, 1))
	add("mistyped field", b, c, ErrMalformed, "malformed")
	b, c = raw(with(func(a *Advertisement) { a.ContextID = make([]byte, 65) }), DagJSON)
	add("ContextID 65", b, c, ErrInvalidAdvertisement, "ContextID is 65 bytes, limit 64")
	b, c = raw(with(func(a *Advertisement) { a.Metadata = make([]byte, 1025) }), DagCBOR)
	add("Metadata 1025", b, c, ErrInvalidAdvertisement, "Metadata is 1025 bytes, limit 1024")
	b, c = raw(with(func(a *Advertisement) { a.Provider = "not-a-peer" }), DagJSON)
	add("bad Provider", b, c, ErrInvalidAdvertisement, `Provider "not-a-peer" is not a peer ID`)
	b, c = raw(with(func(a *Advertisement) {
		a.IsRm = true
		a.ExtendedProvider = &ExtendedProvider{}
	}), DagCBOR)
	add("IsRm with ExtendedProvider", b, c, ErrInvalidAdvertisement, "IsRm advertisement has an ExtendedProvider")
	b, c = raw(with(func(a *Advertisement) {
		a.ExtendedProvider = &ExtendedProvider{Providers: []ProviderEntry{{ID: "nope"}}}
	}), DagCBOR)
	add("bad extended provider ID", b, c, ErrInvalidAdvertisement, `Providers[0].ID "nope"`)
	b, c = raw(with(func(a *Advertisement) { a.Addresses = []string{"ok", "\xff"} }), DagCBOR)
	add("non-UTF-8 address", b, c, ErrInvalidAdvertisement, "Addresses[1] is not valid UTF-8")

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeAdvertisement(tt.c, tt.block)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.words) {
				t.Errorf("error %q does not say %q", err, tt.words)
			}
		})
	}

	t.Run("chunk too many entries", func(t *testing.T) {
		ch := &EntryChunk{Entries: make([]multihash.Multihash, MaxChunkEntries+1)}
		for i := range ch.Entries {
			ch.Entries[i] = multihash.Multihash{0, 0}
		}
		if _, _, err := ch.Encode(); !errors.Is(err, ErrInvalidEntryChunk) {
			t.Fatalf("Encode: %v, want ErrInvalidEntryChunk", err)
		}
		b, err := encodeNode(DagCBOR, ch.node(), chunkProto)
		if err != nil {
			t.Fatal(err)
		}
		b, c, _ := blockCid(DagCBOR, b)
		_, err = DecodeEntryChunk(c, b)
		if !errors.Is(err, ErrInvalidEntryChunk) || !strings.Contains(err.Error(), "262145 entries, limit 262144") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("chunk hash mismatch", func(t *testing.T) {
		b, c, _ := chunkOf("x", 2, cid.Undef).Encode()
		b[len(b)-3] ^= 1
		if _, err := DecodeEntryChunk(c, b); !errors.Is(err, ErrHashMismatch) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("ad as chunk", func(t *testing.T) {
		if _, err := DecodeEntryChunk(goodCid, goodBlock); !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestEncodeValidates(t *testing.T) {
	_, id := seededKey(t, 1)
	for name, ad := range map[string]*Advertisement{
		"no entries link": {Provider: id.String()},
		"bad provider":    {Provider: "x", Entries: NoEntries},
		"long context":    {Provider: id.String(), Entries: NoEntries, ContextID: make([]byte, 65)},
	} {
		if _, _, err := ad.Encode(); !errors.Is(err, ErrInvalidAdvertisement) {
			t.Errorf("%s: Encode error %v, want ErrInvalidAdvertisement", name, err)
		}
	}
	ad := sampleAds(id, id)["full"]
	if _, _, err := ad.EncodeAs(cid.Raw); !errors.Is(err, ErrUnsupportedCodec) {
		t.Errorf("EncodeAs(raw): %v", err)
	}
}

// TestChunkFastPath checks that canonical chunks take the fast path and
// decode as go-ipld-prime decodes them, and that other forms fall back.
func TestChunkFastPath(t *testing.T) {
	for _, ch := range []*EntryChunk{
		{},
		chunkOf("f", 1, cid.Undef),
		chunkOf("f", 30, jsonCid("next")),
		chunkOf("f", 300, cid.NewCidV0(mh("v0"))),
		{Entries: []multihash.Multihash{{}, {0, 0}, make(multihash.Multihash, 300)}, Next: NoEntries},
	} {
		for _, codec := range []uint64{DagJSON, DagCBOR} {
			b, _, err := ch.EncodeAs(codec)
			if err != nil {
				t.Fatal(err)
			}
			fast, ok := fastChunkJSON(b)
			if codec == DagCBOR {
				fast, ok = fastChunkCBOR(b)
			}
			if !ok {
				t.Fatalf("codec 0x%x: canonical chunk of %d entries missed the fast path", codec, len(ch.Entries))
			}
			slow, err := slowEntryChunk(codec, b)
			if err != nil {
				t.Fatal(err)
			}
			if !fast.Equal(slow) || !fast.Equal(ch) {
				t.Fatalf("codec 0x%x: fast path decodes differently", codec)
			}
			// Appending to one entry must not overwrite the next.
			if len(fast.Entries) > 1 {
				_ = append(fast.Entries[0], 0xff)
				if !fast.Equal(ch) {
					t.Fatal("entries share capacity")
				}
			}
		}
	}
	for _, s := range []string{
		`{ "Entries":[]}`,
		`{"Entries":[{"/":{"bytes":"EiA="}}]}`,
		`{"Entries":[],"Next":{"/":"bafkreehdwdcefgh4dqkjv67uzcmw7oje"}} `,
		`{"Entries":[{"/":{"bytes":"E\u0069A"}}]}`,
	} {
		if _, ok := fastChunkJSON([]byte(s)); ok {
			t.Errorf("fast path took non-canonical %s", s)
		}
	}
}

// TestDecodeNoAlias checks that decoded values do not alias the block.
func TestDecodeNoAlias(t *testing.T) {
	_, id := seededKey(t, 1)
	ad := sampleAds(id, id)["full"]
	ch := chunkOf("alias", 5, jsonCid("n"))
	for _, codec := range []uint64{DagJSON, DagCBOR} {
		b, c, _ := ad.EncodeAs(codec)
		got, err := DecodeAdvertisement(c, b)
		if err != nil {
			t.Fatal(err)
		}
		clear(b)
		if !got.Equal(ad) {
			t.Errorf("codec 0x%x: decoded ad aliases the block", codec)
		}
		b, c, _ = ch.EncodeAs(codec)
		gotCh, err := DecodeEntryChunk(c, b)
		if err != nil {
			t.Fatal(err)
		}
		clear(b)
		if !gotCh.Equal(ch) {
			t.Errorf("codec 0x%x: decoded chunk aliases the block", codec)
		}
	}
}
