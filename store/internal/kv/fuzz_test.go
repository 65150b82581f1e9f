package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
)

// canonicalUvarint reports whether b starts with a minimally encoded uvarint.
func canonicalUvarint(b []byte) bool {
	x, n := binary.Uvarint(b)
	return n > 0 && n == len(binary.AppendUvarint(nil, x))
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("ctx"), Metadata: []byte("md")}))
	f.Add(encodeRecord(store.Value{ProviderID: "p", ContextID: []byte{0}}))
	f.Add(encodeRecord(store.Value{ProviderID: "p", ContextID: make([]byte, 200)}))
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Add([]byte{0x05, 'a'})
	f.Add([]byte{0x00, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x01, 'p', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		v, err := decodeRecord(b)
		if !bytes.Equal(b, in) {
			t.Fatalf("decodeRecord modified its input")
		}
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("err = %v, want one wrapping errCorrupt", err)
			}
			return
		}
		// decodeRecord reads lengths with encoding/binary, which accepts
		// non-minimal varints (0x80 0x00 for 0) that encodeRecord never
		// writes; such input decodes, but to bytes that re-encode shorter.
		// The stored records are all written by encodeRecord, so only
		// canonical input must round-trip byte for byte.
		enc := encodeRecord(v)
		canonical := canonicalUvarint(b)
		if canonical {
			_, n := binary.Uvarint(b)
			canonical = canonicalUvarint(b[n+len(v.ProviderID):])
		}
		if canonical && !bytes.Equal(enc, b) {
			t.Fatalf("decodeRecord(%x) = %+v, which encodes as %x", b, v, enc)
		}
		again, err := decodeRecord(enc)
		if err != nil || !again.Equal(v) {
			t.Fatalf("re-decoding %x: %+v, %v; want %+v", enc, again, err, v)
		}
	})
}

func FuzzDecodeProvider(f *testing.F) {
	full, err := encodeProvider(store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: storetest.PeerID("p")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{"AddrInfo":{"ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Addrs":["/ip4/1.2.3.4/tcp/1"]},` +
		`"Publisher":{"ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Addrs":[]},` +
		`"LastAdvertisement":"bafyreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",` +
		`"FrozenAt":"QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",` +
		`"LastAdvertisementTime":"2024-01-02T03:04:05Z",` +
		`"ExtendedProviders":{"Providers":[{"ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Addrs":[]}],"Metadatas":["bWQ="],` +
		`"Contextual":[{"Override":true,"ContextID":"Y3R4","Providers":null,"Metadatas":null}]},` +
		`"LastError":"x","LastErrorTime":"2024-01-02T03:04:05.123+02:00"}`))
	f.Add([]byte(`{"LastAdvertisement":"b"}`))
	f.Add([]byte(`{"FrozenAt":"z"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"AddrInfo":{"ID":""}}`))
	f.Add([]byte(`{"AddrInfo":{"Addrs":["/garbage"]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := decodeProvider(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("err = %v, want one wrapping errCorrupt", err)
			}
			return
		}
		// What decodes must encode again, keeping its identity and CIDs.
		enc, err := encodeProvider(info)
		if err != nil {
			// encoding/json cannot write every time it reads (a year
			// beyond 9999 after a zone shift); that is not ours.
			return
		}
		again, err := decodeProvider(enc)
		if err != nil {
			t.Fatalf("decodeProvider(%s) = %+v, which encodes as %s, which does not decode: %v", b, info, enc, err)
		}
		if again.AddrInfo.ID != info.AddrInfo.ID || !again.LastAdvertisement.Equals(info.LastAdvertisement) ||
			!again.FrozenAt.Equals(info.FrozenAt) || again.Publisher.ID != info.Publisher.ID {
			t.Fatalf("round trip of %s: got %+v, want %+v", b, again, info)
		}
	})
}

// FuzzIDMerger splits data into operands (at lengths taken from shape) and
// merges them the ways Pebble may (see sim), checking every result against
// the model. Operands that do not parse must make every merge that includes
// them fail with errCorrupt, never panic.
func FuzzIDMerger(f *testing.F) {
	f.Add([]byte{}, []byte{}, false)
	f.Add(encodeOps([]refOp{{1, false}, {2, false}, {1, true}, {3, true}}), []byte{1, 1}, true)
	f.Add(encodeOps([]refOp{{5, false}, {5, true}, {5, false}}), []byte{1, 0, 1, 1}, false)
	f.Add(encodeOps([]refOp{{1 << 40, false}, {300, true}, {300, false}, {0, false}}), []byte{6, 2, 0}, true)
	f.Add([]byte{0x80}, []byte{}, true)
	f.Add([]byte{0x02, 0x80, 0x00, 0x04}, []byte{1, 2}, true) // non-minimal varint
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02}, []byte{10}, false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, []byte{}, false)
	f.Fuzz(func(t *testing.T, data, shape []byte, includesBase bool) {
		if len(data) > 4096 || len(shape) > 64 {
			return
		}
		// Cut data into operands.
		var raw [][]byte
		rest := data
		for _, s := range shape {
			n := int(s) % (len(rest) + 1)
			raw = append(raw, rest[:n])
			rest = rest[n:]
		}
		raw = append(raw, rest)

		valid := true
		var ops []refOp
		operands := make([]simOperand, len(raw))
		for i, b := range raw {
			o, ok := decodeOps(b)
			valid = valid && ok
			operands[i] = simOperand{b: b, lo: len(ops), hi: len(ops) + len(o)}
			ops = append(ops, o...)
		}

		if !valid {
			m, err := NewIDMerger(nil, raw[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range raw[1:] {
				if err := m.MergeNewer(b); err != nil {
					t.Fatal(err)
				}
			}
			v, del, c, err := m.deletableFinish(includesBase)
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("merging malformed operands %x: %x, %v, %v; want an error wrapping errCorrupt", raw, v, del, err)
			}
			if c != nil {
				c.Close()
			}
			return
		}

		// Valid input: merge as Pebble may, with a merge plan drawn from
		// the input so that a failure reproduces.
		h := fnv.New64a()
		h.Write(shape)
		h.Write(data)
		seed := h.Sum64()
		if includesBase {
			seed++
		}
		s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0)), ops: ops}
		s.run(operands)
	})
}
