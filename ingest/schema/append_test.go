package schema_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/codec/dagjson"
	"github.com/ipld/go-ipld-prime/datamodel"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
)

// ipldChunk is the reference the differential tests hold AppendEntryChunk
// to: the chunk decoded by go-ipld-prime into generic nodes (as
// go-libipni's decoder reads it), read field by field, with the limit of
// MaxChunkEntries. ok is false when go-ipld-prime does not read it as an
// entry chunk.
func ipldChunk(codec uint64, block []byte) (entries []multihash.Multihash, next cid.Cid, ok bool) {
	var dec ipld.Decoder = dagjson.Decode
	if codec == schema.DagCBOR {
		dec = dagcbor.Decode
	}
	n, err := ipld.Decode(block, dec)
	if err != nil || n.Kind() != datamodel.Kind_Map {
		return nil, cid.Undef, false
	}
	it := n.MapIterator()
	for !it.Done() {
		k, v, err := it.Next()
		if err != nil {
			return nil, cid.Undef, false
		}
		switch key, _ := k.AsString(); key {
		case "Entries":
			if v.Kind() != datamodel.Kind_List {
				return nil, cid.Undef, false
			}
			li := v.ListIterator()
			for !li.Done() {
				_, e, err := li.Next()
				if err != nil {
					return nil, cid.Undef, false
				}
				b, err := e.AsBytes()
				if err != nil {
					return nil, cid.Undef, false
				}
				entries = append(entries, b)
			}
		case "Next":
			if v.IsNull() {
				continue
			}
			l, err := v.AsLink()
			if err != nil {
				return nil, cid.Undef, false
			}
			cl, isCid := l.(cidlink.Link)
			if !isCid {
				return nil, cid.Undef, false
			}
			next = cl.Cid
		default:
			return nil, cid.Undef, false
		}
	}
	if _, err := n.LookupByString("Entries"); err != nil || len(entries) > schema.MaxChunkEntries {
		return nil, cid.Undef, false
	}
	return entries, next, true
}

// agree decodes block under c with AppendEntryChunk (onto a non-empty dst,
// with and without hashChecked) and DecodeEntryChunk, and fails unless
// both accept or reject it alike, with the same error text, the same
// entries and Next, dst's prefix kept, and, for a block whose hash is
// right, go-ipld-prime agreeing. It reports whether the block was
// accepted.
func agree(t *testing.T, name string, c cid.Cid, block []byte) bool {
	t.Helper()
	prefix := []multihash.Multihash{multihash.Multihash("prefix")}
	want, wantErr := schema.DecodeEntryChunk(c, block)
	for _, hashChecked := range []bool{false, true} {
		dst := append(make([]multihash.Multihash, 0, 4), prefix...)
		got, next, err := schema.AppendEntryChunk(dst, c, block, hashChecked)
		if hashChecked && errors.Is(wantErr, schema.ErrHashMismatch) {
			continue // the caller vouched for the hash: not comparable
		}
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%s (hashChecked %v): AppendEntryChunk error %v, DecodeEntryChunk error %v", name, hashChecked, err, wantErr)
		case err != nil:
			if err.Error() != wantErr.Error() {
				t.Fatalf("%s: errors differ:\nAppendEntryChunk: %v\nDecodeEntryChunk: %v", name, err, wantErr)
			}
			if len(got) != 1 || !bytes.Equal(got[0], prefix[0]) {
				t.Fatalf("%s: dst changed by a failed decode: %d entries", name, len(got))
			}
			continue
		}
		if !bytes.Equal(got[0], prefix[0]) || !(&schema.EntryChunk{Entries: got[1:], Next: next}).Equal(want) {
			t.Fatalf("%s (hashChecked %v): AppendEntryChunk decodes differently from DecodeEntryChunk", name, hashChecked)
		}
	}
	if errors.Is(wantErr, schema.ErrHashMismatch) || errors.Is(wantErr, schema.ErrBlockTooLarge) ||
		errors.Is(wantErr, schema.ErrUnsupportedCodec) {
		return false // refused before decoding
	}
	entries, next, ok := ipldChunk(c.Type(), block)
	if ok != (wantErr == nil) {
		t.Fatalf("%s: go-ipld-prime reads it: %v; DecodeEntryChunk error: %v", name, ok, wantErr)
	}
	if ok && !(&schema.EntryChunk{Entries: entries, Next: next}).Equal(want) {
		t.Fatalf("%s: go-ipld-prime decodes differently", name)
	}
	return wantErr == nil
}

func sum(codec uint64, block []byte) cid.Cid {
	c, err := cid.Prefix{Version: 1, Codec: codec, MhType: multihash.SHA2_256, MhLength: -1}.Sum(block)
	if err != nil {
		panic(err)
	}
	return c
}

// TestAppendEntryChunkChains is the differential test on the chains the
// benchmarks ingest: every entry chunk of chaingen chains of 1,000 and
// 16,384 multihashes per chunk, in both codecs, decodes the same with
// AppendEntryChunk, DecodeEntryChunk, go-ipld-prime and one EntryDecoder
// walking the whole chain.
func TestAppendEntryChunkChains(t *testing.T) {
	for _, codec := range []uint64{schema.DagJSON, schema.DagCBOR} {
		for _, size := range []int{1000, 16_384} {
			t.Run(fmt.Sprintf("0x%x/%d", codec, size), func(t *testing.T) {
				chain, err := chaingen.Generate(chaingen.Config{Seed: 5, Ads: 3, MhsPerAd: 2*size + 7, ChunkSize: size, Codec: codec})
				if err != nil {
					t.Fatal(err)
				}
				chunks := 0
				var dec schema.EntryDecoder // one for the whole chain, as a walker keeps it
				for i := range chain.Len() {
					ad, err := chain.Ad(i)
					if err != nil {
						t.Fatal(err)
					}
					for c := ad.Entries; c.Defined(); chunks++ {
						block, err := chain.Block(context.Background(), c)
						if err != nil {
							t.Fatal(err)
						}
						if !agree(t, c.String(), c, block) {
							t.Fatalf("chunk %s rejected", c)
						}
						want, err := schema.DecodeEntryChunk(c, block)
						if err != nil {
							t.Fatal(err)
						}
						got, next, err := dec.Decode(c, block, false)
						if err != nil || !(&schema.EntryChunk{Entries: got, Next: next}).Equal(want) {
							t.Fatalf("chunk %s: the EntryDecoder decodes it differently (%v)", c, err)
						}
						_, c, _ = schema.AppendEntryChunk(nil, c, block, false)
					}
				}
				if chunks != 3*3 {
					t.Fatalf("walked %d chunks, want 9", chunks)
				}
			})
		}
	}
}

// TestAppendEntryChunkMalformed is the differential test on malformed and
// non-canonical blocks: each is accepted or rejected by AppendEntryChunk
// as by DecodeEntryChunk and go-ipld-prime, with the same error.
func TestAppendEntryChunkMalformed(t *testing.T) {
	mhs := func(n int) []multihash.Multihash {
		out := make([]multihash.Multihash, n)
		for i := range out {
			out[i], _ = multihash.Sum(fmt.Appendf(nil, "mh-%d", i), multihash.SHA2_256, -1)
		}
		return out
	}
	next := sum(schema.DagJSON, []byte(`{"Entries":[]}`))
	enc := func(codec uint64, ch *schema.EntryChunk) []byte {
		b, _, err := ch.EncodeAs(codec)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	js := string(enc(schema.DagJSON, &schema.EntryChunk{Entries: mhs(3), Next: next}))
	cb := enc(schema.DagCBOR, &schema.EntryChunk{Entries: mhs(3), Next: next})
	cbNoNext := enc(schema.DagCBOR, &schema.EntryChunk{Entries: mhs(2)})
	type tc struct {
		name   string
		codec  uint64
		block  []byte
		accept bool
	}
	cases := []tc{
		{"json canonical", schema.DagJSON, []byte(js), true},
		{"json whitespace", schema.DagJSON, []byte(" " + js), true},
		{"json keys reordered", schema.DagJSON, []byte(`{"Next":{"/":"` + next.String() + `"},"Entries":[]}`), true},
		{"json padded base64", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"EiA="}}]}`), true},
		{"json escaped base64", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"E\u0069A"}}]}`), true},
		{"json newline in base64", schema.DagJSON, []byte("{\"Entries\":[{\"/\":{\"bytes\":\"EiAA\nAAA\"}}]}"), false},
		{"json CR in base64", schema.DagJSON, []byte("{\"Entries\":[{\"/\":{\"bytes\":\"EiA\rAAAA\"}}]}"), false},
		{"json base64 of 4k+1", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"EiAAA"}}]}`), false},
		{"json base64 with unused bits set", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"EiB"}}]}`), true},
		{"json bad base64 char", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"Ei*A"}}]}`), false},
		{"json url base64", schema.DagJSON, []byte(`{"Entries":[{"/":{"bytes":"Ei-_"}}]}`), false},
		{"json unterminated", schema.DagJSON, []byte(js[:len(js)-1]), false},
		{"json truncated in entry", schema.DagJSON, []byte(js[:40]), false},
		{"json trailing bytes", schema.DagJSON, []byte(js + "x"), false},
		{"json entries not a list", schema.DagJSON, []byte(`{"Entries":"x"}`), false},
		{"json entry not bytes", schema.DagJSON, []byte(`{"Entries":[1]}`), false},
		{"json next not a link", schema.DagJSON, []byte(`{"Entries":[],"Next":"x"}`), false},
		{"json next bad cid", schema.DagJSON, []byte(`{"Entries":[],"Next":{"/":"bafyX"}}`), false},
		{"json extra field", schema.DagJSON, []byte(`{"Entries":[],"More":1}`), false},
		{"json no entries", schema.DagJSON, []byte(`{}`), false},
		{"json empty", schema.DagJSON, nil, false},
		{"cbor canonical", schema.DagCBOR, cb, true},
		{"cbor without next", schema.DagCBOR, cbNoNext, true},
		{"cbor truncated", schema.DagCBOR, cb[:len(cb)-1], false},
		{"cbor trailing byte", schema.DagCBOR, append(bytes.Clone(cb), 0), false},
		{"cbor non-minimal count", schema.DagCBOR, bytes.Replace(bytes.Clone(cbNoNext), []byte{'s', 0x82}, []byte{'s', 0x98, 0x02}, 1), false},
		{"cbor count too high", schema.DagCBOR, bytes.Replace(bytes.Clone(cbNoNext), []byte{'s', 0x82}, []byte{'s', 0x83}, 1), false},
		{"cbor entry not bytes", schema.DagCBOR, []byte{0xa1, 0x67, 'E', 'n', 't', 'r', 'i', 'e', 's', 0x81, 0x01}, false},
		{"cbor map of 3", schema.DagCBOR, append([]byte{0xa3}, cb[1:]...), false},
	}
	// Too many entries: within the block size limit only in dag-cbor with
	// empty entries.
	many := []byte{0xa1, 0x67, 'E', 'n', 't', 'r', 'i', 'e', 's', 0x9a, 0, 0, 0, 0}
	for _, n := range []int{schema.MaxChunkEntries, schema.MaxChunkEntries + 1} {
		b := bytes.Clone(many)
		b[10], b[11], b[12], b[13] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		b = append(b, bytes.Repeat([]byte{0x40}, n)...)
		cases = append(cases, tc{fmt.Sprintf("cbor %d empty entries", n), schema.DagCBOR, b, n <= schema.MaxChunkEntries})
	}
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			if got := agree(t, k.name, sum(k.codec, k.block), k.block); got != k.accept {
				t.Fatalf("accepted %v, want %v", got, k.accept)
			}
		})
	}

	// Block-level checks: every decoder refuses them alike, and the errors
	// name the problem.
	for _, k := range []struct {
		name  string
		c     cid.Cid
		block []byte
		want  error
	}{
		{"hash mismatch", sum(schema.DagJSON, []byte(`{"Entries":[]}`)), []byte(`{"Entries":[ ]}`), schema.ErrHashMismatch},
		{"unsupported codec", sum(cid.Raw, []byte(`{"Entries":[]}`)), []byte(`{"Entries":[]}`), schema.ErrUnsupportedCodec},
		{"undefined CID", cid.Undef, []byte(`{"Entries":[]}`), schema.ErrUnsupportedCodec},
		{"too large", sum(schema.DagJSON, nil), make([]byte, schema.MaxBlockSize+1), schema.ErrBlockTooLarge},
	} {
		_, _, err := schema.AppendEntryChunk(nil, k.c, k.block, false)
		if !errors.Is(err, k.want) {
			t.Errorf("%s: %v, want %v", k.name, err, k.want)
		}
		agree(t, k.name, k.c, k.block)
		if k.want != schema.ErrHashMismatch {
			if _, _, err := schema.AppendEntryChunk(nil, k.c, k.block, true); !errors.Is(err, k.want) {
				t.Errorf("%s, hash checked: %v, want %v", k.name, err, k.want)
			}
		}
	}
}

// TestAppendEntryChunkAliases: the entries of a dag-cbor block alias it;
// those of a dag-json block do not; none shares capacity with the next.
func TestAppendEntryChunkAliases(t *testing.T) {
	ch := &schema.EntryChunk{Entries: []multihash.Multihash{[]byte("\x00\x01a"), []byte("\x00\x01b")}}
	for _, codec := range []uint64{schema.DagJSON, schema.DagCBOR} {
		b, c, err := ch.EncodeAs(codec)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := schema.AppendEntryChunk(nil, c, b, false)
		if err != nil {
			t.Fatal(err)
		}
		_ = append(got[0], 'x')
		if !bytes.Equal(got[1], ch.Entries[1]) {
			t.Fatalf("codec 0x%x: entries share capacity", codec)
		}
		clear(b)
		aliased := !bytes.Equal(got[0], ch.Entries[0])
		if aliased != (codec == schema.DagCBOR) {
			t.Fatalf("codec 0x%x: entries alias the block: %v", codec, aliased)
		}
	}
}
