package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Multihash returns a deterministic sha2-256 multihash for (seed, i).
func Multihash(seed string, i int) multihash.Multihash {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	d := sha256.Sum256(append([]byte(seed), b[:]...))
	mh, err := multihash.Encode(d[:], multihash.SHA2_256)
	if err != nil {
		panic(err) // sha2-256 with 32 bytes always encodes
	}
	return mh
}

// Multihashes returns n deterministic multihashes for seed.
func Multihashes(seed string, n int) []multihash.Multihash {
	mhs := make([]multihash.Multihash, n)
	for i := range mhs {
		mhs[i] = Multihash(seed, i)
	}
	return mhs
}

// PeerID returns a deterministic, well-formed peer ID for name.
func PeerID(name string) peer.ID {
	return peer.ID(Multihash("peer/"+name, 0))
}

// Run runs the conformance suite against stores made by newStore. Each
// subtest calls newStore once and closes the store at its end.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	open := func(t *testing.T) store.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"PutGet", testPutGet},
		{"PutIdempotent", testPutIdempotent},
		{"ManyValues", testManyValues},
		{"CodecIndependent", testCodecIndependent},
		{"PutReplacesMetadata", testPutReplacesMetadata},
		{"UpdateMetadata", testUpdateMetadata},
		{"Remove", testRemove},
		{"RemoveProviderContext", testRemoveProviderContext},
		{"RemoveProvider", testRemoveProvider},
		{"RejectsBadInput", testRejectsBadInput},
		{"CancelledContext", testCancelledContext},
		{"ProviderRecords", testProviderRecords},
		{"All", testAll},
		{"Sweep", testSweep},
		{"Size", testSize},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

func value(provider, ctxID, md string) store.Value {
	return store.Value{ProviderID: PeerID(provider), ContextID: []byte(ctxID), Metadata: []byte(md)}
}

func mustPut(t *testing.T, s store.Store, v store.Value, mhs ...multihash.Multihash) {
	t.Helper()
	if err := s.Put(context.Background(), v, mhs...); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

func mustGet(t *testing.T, s store.Store, mh multihash.Multihash) []store.Value {
	t.Helper()
	vals, err := s.Get(context.Background(), mh)
	if err != nil {
		t.Fatalf("Get(%s): %v", mh.B58String(), err)
	}
	return vals
}

// expectValues checks that mh has exactly want, in any order.
func expectValues(t *testing.T, s store.Store, mh multihash.Multihash, want ...store.Value) {
	t.Helper()
	got := mustGet(t, s, mh)
	if len(got) != len(want) {
		t.Fatalf("Get(%s): %d values %s, want %d %s", mh.B58String(), len(got), fmtValues(got), len(want), fmtValues(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, w.Equal) {
			t.Fatalf("Get(%s) = %s, missing %s", mh.B58String(), fmtValues(got), fmtValues([]store.Value{w}))
		}
	}
}

func fmtValues(vs []store.Value) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "{%s %q %q}", v.ProviderID, v.ContextID, v.Metadata)
	}
	b.WriteByte(']')
	return b.String()
}
