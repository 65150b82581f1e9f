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
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
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

func testPutGet(t *testing.T, s store.Store) {
	v := value("p1", "ctx1", "md1")
	mhs := Multihashes("putget", 100)
	mustPut(t, s, v, mhs...)
	for _, mh := range mhs {
		expectValues(t, s, mh, v)
	}
	if got := mustGet(t, s, Multihash("absent", 0)); len(got) != 0 {
		t.Fatalf("Get of absent multihash = %s, want none", fmtValues(got))
	}
	// An empty Put is allowed and writes nothing.
	mustPut(t, s, value("p1", "ctx2", "md2"))
}

func testPutIdempotent(t *testing.T, s store.Store) {
	v := value("p1", "ctx1", "md1")
	mhs := Multihashes("idem", 10)
	for range 3 {
		mustPut(t, s, v, mhs...)
	}
	mustPut(t, s, v.Clone(), mhs[0], mhs[0], mhs[0])
	for _, mh := range mhs {
		expectValues(t, s, mh, v)
	}
}

func testManyValues(t *testing.T, s store.Store) {
	mh := Multihash("many", 0)
	var want []store.Value
	for p := range 3 {
		for c := range 4 {
			v := value(fmt.Sprint("p", p), fmt.Sprint("ctx", c), fmt.Sprint("md", p, c))
			mustPut(t, s, v, mh, Multihash("many-other", p*10+c))
			want = append(want, v)
		}
	}
	expectValues(t, s, mh, want...)
}

func testCodecIndependent(t *testing.T, s store.Store) {
	mh := Multihash("codec", 0)
	v := value("p1", "ctx1", "md1")
	mustPut(t, s, v, cid.NewCidV1(cid.DagProtobuf, mh).Hash())
	for _, c := range []cid.Cid{cid.NewCidV0(mh), cid.NewCidV1(cid.Raw, mh), cid.NewCidV1(cid.DagCBOR, mh)} {
		expectValues(t, s, c.Hash(), v)
	}
}

func testPutReplacesMetadata(t *testing.T, s store.Store) {
	a, b := Multihashes("replace-a", 5), Multihashes("replace-b", 5)
	mustPut(t, s, value("p1", "ctx1", "old"), a...)
	newer := value("p1", "ctx1", "new")
	mustPut(t, s, newer, b...)
	for _, mh := range append(a, b...) {
		expectValues(t, s, mh, newer)
	}
}

func testUpdateMetadata(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("update", 50)
	v := value("p1", "ctx1", "md-old")
	other := value("p1", "ctx2", "md-other")
	mustPut(t, s, v, mhs...)
	mustPut(t, s, other, mhs[:5]...)
	if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("md-new")); err != nil {
		t.Fatalf("UpdateMetadata: %v", err)
	}
	updated := value("p1", "ctx1", "md-new")
	for i, mh := range mhs {
		if i < 5 {
			expectValues(t, s, mh, updated, other)
		} else {
			expectValues(t, s, mh, updated)
		}
	}
	err := s.UpdateMetadata(ctx, v.ProviderID, []byte("no-such-context"), []byte("x"))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateMetadata of unknown context: %v, want ErrNotFound", err)
	}
	err = s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, make([]byte, store.MaxMetadataLen+1))
	if !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("UpdateMetadata with oversize metadata: %v, want ErrInvalidValue", err)
	}
	expectValues(t, s, mhs[9], updated)
}

func testRemove(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("remove", 10)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p2", "ctx1", "md2")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs...)
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[:4]...); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for i, mh := range mhs {
		if i < 4 {
			expectValues(t, s, mh, v2)
		} else {
			expectValues(t, s, mh, v1, v2)
		}
	}
	// Removing again, or removing an unknown context, is a no-op.
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[:4]...); err != nil {
		t.Fatalf("Remove again: %v", err)
	}
	if err := s.Remove(ctx, PeerID("nobody"), []byte("x"), mhs...); err != nil {
		t.Fatalf("Remove of unknown value: %v", err)
	}
	expectValues(t, s, mhs[5], v1, v2)
}

func testRemoveProviderContext(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := Multihashes("rpc-old", 20)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p1", "ctx2", "md2")
	v3 := value("p2", "ctx1", "md3")
	mustPut(t, s, v1, old...)
	mustPut(t, s, v2, old[:10]...)
	mustPut(t, s, v3, old[10:]...)
	if err := s.RemoveProviderContext(ctx, v1.ProviderID, v1.ContextID); err != nil {
		t.Fatalf("RemoveProviderContext: %v", err)
	}
	for i, mh := range old {
		if i < 10 {
			expectValues(t, s, mh, v2)
		} else {
			expectValues(t, s, mh, v3)
		}
	}
	if err := s.UpdateMetadata(ctx, v1.ProviderID, v1.ContextID, []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateMetadata after removal: %v, want ErrNotFound", err)
	}
	// Putting the context again must not resurrect the old multihashes.
	fresh := Multihashes("rpc-new", 3)
	mustPut(t, s, v1, fresh...)
	for _, mh := range fresh {
		expectValues(t, s, mh, v1)
	}
	expectValues(t, s, old[0], v2)
	expectValues(t, s, old[15], v3)
	if err := s.RemoveProviderContext(ctx, PeerID("nobody"), []byte("x")); err != nil {
		t.Fatalf("RemoveProviderContext of unknown context: %v", err)
	}
}

func testRemoveProvider(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("rp", 30)
	keep := value("p2", "ctx1", "keep")
	for c := range 5 {
		mustPut(t, s, value("p1", fmt.Sprint("ctx", c), "md"), mhs...)
	}
	mustPut(t, s, keep, mhs[:10]...)
	info := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: PeerID("p1")}}
	if err := s.PutProvider(ctx, info); err != nil {
		t.Fatalf("PutProvider: %v", err)
	}
	if err := s.RemoveProvider(ctx, PeerID("p1")); err != nil {
		t.Fatalf("RemoveProvider: %v", err)
	}
	for i, mh := range mhs {
		if i < 10 {
			expectValues(t, s, mh, keep)
		} else {
			expectValues(t, s, mh)
		}
	}
	if _, err := s.Provider(ctx, PeerID("p1")); err != nil {
		t.Fatalf("RemoveProvider must leave the provider record: %v", err)
	}
	mustPut(t, s, value("p1", "ctx0", "md"), mhs[29])
	expectValues(t, s, mhs[28])
	expectValues(t, s, mhs[29], value("p1", "ctx0", "md"))
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

func testProviderRecords(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.Provider(ctx, PeerID("missing")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Provider of unknown ID: %v, want ErrNotFound", err)
	}
	adCid := cid.NewCidV1(cid.DagJSON, Multihash("ad", 1))
	frozenCid := cid.NewCidV1(cid.DagJSON, Multihash("ad", 0))
	now := time.Date(2026, 11, 26, 1, 2, 3, 456000000, time.UTC)
	full := store.ProviderInfo{
		AddrInfo:              peer.AddrInfo{ID: PeerID("full"), Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3000")}},
		Publisher:             peer.AddrInfo{ID: PeerID("pub"), Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3001/http")}},
		LastAdvertisement:     adCid,
		LastAdvertisementTime: now,
		FrozenAt:              frozenCid,
		FrozenAtTime:          now.Add(-time.Hour),
		ExtendedProviders: &store.ExtendedProviders{
			Providers: []peer.AddrInfo{{ID: PeerID("ext"), Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/4000")}}},
			Metadatas: [][]byte{[]byte("ext-md")},
			Contextual: []store.ContextualExtendedProviders{{
				Override: true, ContextID: []byte("ctx"),
				Providers: []peer.AddrInfo{{ID: PeerID("ext2")}},
				Metadatas: [][]byte{[]byte("ctx-md")},
			}},
		},
		LastError:     "fetch entries: hash mismatch",
		LastErrorTime: now.Add(time.Minute),
	}
	minimal := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: PeerID("minimal")}}
	for _, info := range []store.ProviderInfo{full, minimal} {
		if err := s.PutProvider(ctx, info); err != nil {
			t.Fatalf("PutProvider: %v", err)
		}
	}
	got, err := s.Provider(ctx, full.AddrInfo.ID)
	if err != nil {
		t.Fatalf("Provider: %v", err)
	}
	expectProvider(t, got, full)
	got, err = s.Provider(ctx, minimal.AddrInfo.ID)
	if err != nil {
		t.Fatalf("Provider: %v", err)
	}
	expectProvider(t, got, minimal)
	if got.LastAdvertisement.Defined() || got.FrozenAt.Defined() || !got.FrozenAtTime.IsZero() {
		t.Fatalf("minimal record grew fields: %+v", got)
	}

	// Replace, list, delete.
	full.LastError = ""
	full.FrozenAt = cid.Undef
	if err := s.PutProvider(ctx, full); err != nil {
		t.Fatalf("PutProvider again: %v", err)
	}
	seen := map[peer.ID]store.ProviderInfo{}
	for info, err := range s.Providers(ctx) {
		if err != nil {
			t.Fatalf("Providers: %v", err)
		}
		seen[info.AddrInfo.ID] = info
	}
	if len(seen) != 2 {
		t.Fatalf("Providers listed %d records, want 2", len(seen))
	}
	expectProvider(t, seen[full.AddrInfo.ID], full)
	if err := s.DeleteProvider(ctx, minimal.AddrInfo.ID); err != nil {
		t.Fatalf("DeleteProvider: %v", err)
	}
	if err := s.DeleteProvider(ctx, minimal.AddrInfo.ID); err != nil {
		t.Fatalf("DeleteProvider again: %v", err)
	}
	if _, err := s.Provider(ctx, minimal.AddrInfo.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Provider after delete: %v, want ErrNotFound", err)
	}
}

func expectProvider(t *testing.T, got, want store.ProviderInfo) {
	t.Helper()
	ok := got.AddrInfo.ID == want.AddrInfo.ID &&
		slices.EqualFunc(got.AddrInfo.Addrs, want.AddrInfo.Addrs, multiaddr.Multiaddr.Equal) &&
		got.Publisher.ID == want.Publisher.ID &&
		slices.EqualFunc(got.Publisher.Addrs, want.Publisher.Addrs, multiaddr.Multiaddr.Equal) &&
		got.LastAdvertisement.Equals(want.LastAdvertisement) &&
		got.LastAdvertisementTime.Equal(want.LastAdvertisementTime) &&
		got.FrozenAt.Equals(want.FrozenAt) &&
		got.FrozenAtTime.Equal(want.FrozenAtTime) &&
		got.LastError == want.LastError &&
		got.LastErrorTime.Equal(want.LastErrorTime) &&
		fmt.Sprint(got.ExtendedProviders) == fmt.Sprint(want.ExtendedProviders)
	if !ok {
		t.Fatalf("provider record:\n got %+v\nwant %+v", got, want)
	}
}

func testAll(t *testing.T, s store.Store) {
	ctx := context.Background()
	// More entries than one read chunk of the disk backends.
	mhs := Multihashes("all", 2500)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p2", "ctx1", "md2")
	gone := value("p3", "ctx1", "gone")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)
	mustPut(t, s, gone, Multihashes("all-gone", 50)...)
	if err := s.RemoveProviderContext(ctx, gone.ProviderID, gone.ContextID); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for i, mh := range mhs {
		want[string(mh)] = 1
		if i < 100 {
			want[string(mh)] = 2
		}
	}
	n := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		w, ok := want[string(e.Multihash)]
		if !ok && len(e.Values) == 1 && string(e.Values[0].ContextID) == "during" {
			continue // written by this loop; may or may not be seen
		}
		if !ok {
			t.Fatalf("All yielded unexpected multihash %s with %s", e.Multihash.B58String(), fmtValues(e.Values))
		}
		if len(e.Values) != w {
			t.Fatalf("All yielded %s with %d values, want %d", e.Multihash.B58String(), len(e.Values), w)
		}
		delete(want, string(e.Multihash))
		n++
		// The loop body may call the store.
		if n%500 == 0 {
			mustPut(t, s, value("p4", "during", "md"), Multihash("during", n))
			if _, err := s.Get(ctx, e.Multihash); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(want) != 0 {
		t.Fatalf("All missed %d of %d multihashes", len(want), len(mhs))
	}
	// Breaking out early is allowed.
	for _, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
}

func testSweep(t *testing.T, s store.Store) {
	sw, ok := s.(store.Sweeper)
	if !ok {
		t.Skip("store does not implement store.Sweeper")
	}
	ctx := context.Background()
	mhs := Multihashes("sweep", 300)
	v1, v2 := value("p1", "ctx1", "md1"), value("p2", "ctx1", "md2")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)
	if err := s.RemoveProviderContext(ctx, v1.ProviderID, v1.ContextID); err != nil {
		t.Fatal(err)
	}
	n, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != int64(len(mhs)) {
		t.Fatalf("Sweep removed %d entries, want %d", n, len(mhs))
	}
	if n, err = sw.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0, nil", n, err)
	}
	expectValues(t, s, mhs[0], v2)
	expectValues(t, s, mhs[200])
	mustPut(t, s, v1, mhs[200])
	expectValues(t, s, mhs[200], v1)
}

func testSize(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustPut(t, s, value("p1", "ctx1", "md1"), Multihashes("size", 5000)...)
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	n, err := s.Size(ctx)
	if err != nil {
		t.Fatalf("Size: %v", err)
	}
	if n <= 0 {
		t.Fatalf("Size after 5000 puts = %d, want > 0", n)
	}
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
