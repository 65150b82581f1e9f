package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
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
		{"ManyContexts", testManyContexts},
		{"UpdateWhileReading", testUpdateWhileReading},
		{"LookupsWhileWriting", testLookupsWhileWriting},
		{"Versions", testVersions},
		{"RejectsBadInput", testRejectsBadInput},
		{"CancelledContext", testCancelledContext},
		{"ProviderRecords", testProviderRecords},
		{"All", testAll},
		{"Sweep", testSweep},
		{"Sample", testSample},
		{"Size", testSize},
		{"BulkLoad", testBulkLoad},
		{"AllSeek", testAllSeek},
		{"RemoveRanges", testRemoveRanges},
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

func testRejectsBadInput(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("bad", 3)
	for _, tc := range []struct {
		name string
		v    store.Value
	}{
		{"empty provider", store.Value{ContextID: []byte("c"), Metadata: []byte("m")}},
		{"empty context", store.Value{ProviderID: PeerID("p"), Metadata: []byte("m")}},
		{"oversize context", store.Value{ProviderID: PeerID("p"), ContextID: make([]byte, store.MaxContextIDLen+1)}},
		{"oversize metadata", store.Value{ProviderID: PeerID("p"), ContextID: []byte("c"), Metadata: make([]byte, store.MaxMetadataLen+1)}},
	} {
		if err := s.Put(ctx, tc.v, mhs...); !errors.Is(err, store.ErrInvalidValue) {
			t.Errorf("Put with %s: %v, want ErrInvalidValue", tc.name, err)
		}
	}
	// Limits are inclusive.
	edge := store.Value{ProviderID: PeerID("p"), ContextID: bytes.Repeat([]byte{'c'}, store.MaxContextIDLen), Metadata: bytes.Repeat([]byte{'m'}, store.MaxMetadataLen)}
	mustPut(t, s, edge, mhs[2])
	expectValues(t, s, mhs[2], edge)

	// One bad multihash rejects the whole Put: nothing is written.
	v := value("p", "ctx", "md")
	for _, bad := range []multihash.Multihash{nil, {0x12}, {0x12, 0x20, 1, 2, 3}, append(bytes.Clone(mhs[0]), 0)} {
		err := s.Put(ctx, v, mhs[0], bad, mhs[1])
		if !errors.Is(err, store.ErrInvalidMultihash) {
			t.Fatalf("Put with bad multihash %x: %v, want ErrInvalidMultihash", bad, err)
		}
		if _, err := s.Get(ctx, bad); !errors.Is(err, store.ErrInvalidMultihash) {
			t.Fatalf("Get of bad multihash %x: %v, want ErrInvalidMultihash", bad, err)
		}
	}
	expectValues(t, s, mhs[0])
	expectValues(t, s, mhs[1])
	for name, info := range map[string]store.ProviderInfo{
		"no ID":                  {},
		"malformed ID":           {AddrInfo: peer.AddrInfo{ID: "x"}},
		"malformed publisher":    {AddrInfo: peer.AddrInfo{ID: PeerID("p")}, Publisher: peer.AddrInfo{ID: "x"}},
		"empty extended":         {AddrInfo: peer.AddrInfo{ID: PeerID("p")}, ExtendedProviders: &store.ExtendedProviders{Providers: []peer.AddrInfo{{}}}},
		"oversize ext. metadata": {AddrInfo: peer.AddrInfo{ID: PeerID("p")}, ExtendedProviders: &store.ExtendedProviders{Metadatas: [][]byte{make([]byte, store.MaxMetadataLen+1)}}},
		"oversize ext. context":  {AddrInfo: peer.AddrInfo{ID: PeerID("p")}, ExtendedProviders: &store.ExtendedProviders{Contextual: []store.ContextualExtendedProviders{{ContextID: make([]byte, store.MaxContextIDLen+1)}}}},
	} {
		if err := s.PutProvider(ctx, info); !errors.Is(err, store.ErrInvalidValue) {
			t.Errorf("PutProvider with %s: %v, want ErrInvalidValue", name, err)
		}
	}
	if _, err := s.Provider(ctx, PeerID("p")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rejected provider record was stored: %v", err)
	}
}

func testCancelledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mh := Multihash("cancel", 0)
	if err := s.Put(ctx, value("p", "c", "m"), mh); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, mh); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with cancelled context: %v, want context.Canceled", err)
	}
	expectValues(t, s, mh)
}

func testConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const writers, perWriter = 4, 300
	shared := Multihashes("conc-shared", 50)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Get(ctx, shared[(i+r)%len(shared)]); err != nil {
					t.Errorf("concurrent Get: %v", err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			p := fmt.Sprint("w", w)
			for i := range perWriter {
				v := value(p, fmt.Sprint("ctx", i%10), "md")
				if err := s.Put(ctx, v, Multihash("conc-"+p, i), shared[i%len(shared)]); err != nil {
					t.Errorf("concurrent Put: %v", err)
					return
				}
				if i%50 == 49 {
					if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("md2")); err != nil {
						t.Errorf("concurrent UpdateMetadata: %v", err)
						return
					}
				}
			}
			// Drop one context per writer; the others stay.
			if err := s.RemoveProviderContext(ctx, PeerID(p), []byte("ctx0")); err != nil {
				t.Errorf("concurrent RemoveProviderContext: %v", err)
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		return
	}
	for w := range writers {
		p := fmt.Sprint("w", w)
		for i := range perWriter {
			vals := mustGet(t, s, Multihash("conc-"+p, i))
			if i%10 == 0 {
				if len(vals) != 0 {
					t.Fatalf("%s/%d: removed context still has %s", p, i, fmtValues(vals))
				}
				continue
			}
			if len(vals) != 1 || vals[0].ProviderID != PeerID(p) || string(vals[0].ContextID) != fmt.Sprint("ctx", i%10) {
				t.Fatalf("%s/%d: got %s", p, i, fmtValues(vals))
			}
		}
	}
	// Every shared multihash holds one value per (writer, context 1..9) that
	// wrote it.
	for j, mh := range shared {
		want := map[string]bool{}
		for w := range writers {
			for i := j; i < perWriter; i += len(shared) {
				if i%10 != 0 {
					want[fmt.Sprint("w", w, "/ctx", i%10)] = true
				}
			}
		}
		if vals := mustGet(t, s, mh); len(vals) != len(want) {
			t.Fatalf("shared %d: %d values, want %d", j, len(vals), len(want))
		}
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	mh := Multihash("closed", 0)
	v := value("p1", "ctx1", "md1")
	mustPut(t, s, v, mh)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, getErr := s.Get(ctx, mh)
	_, provErr := s.Provider(ctx, v.ProviderID)
	_, sizeErr := s.Size(ctx)
	var allErr, provsErr error
	for _, err := range s.All(ctx) {
		allErr = err
		break
	}
	for _, err := range s.Providers(ctx) {
		provsErr = err
		break
	}
	for name, err := range map[string]error{
		"Put":                   s.Put(ctx, v, mh),
		"Get":                   getErr,
		"Remove":                s.Remove(ctx, v.ProviderID, v.ContextID, mh),
		"RemoveProviderContext": s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID),
		"RemoveProvider":        s.RemoveProvider(ctx, v.ProviderID),
		"UpdateMetadata":        s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("x")),
		"PutProvider":           s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: v.ProviderID}}),
		"Provider":              provErr,
		"Providers":             provsErr,
		"DeleteProvider":        s.DeleteProvider(ctx, v.ProviderID),
		"All":                   allErr,
		"Size":                  sizeErr,
		"Flush":                 s.Flush(ctx),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if sw, ok := s.(store.Sweeper); ok {
		if _, err := sw.Sweep(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Sweep after Close: %v, want ErrClosed", err)
		}
	}
}
