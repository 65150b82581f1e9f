package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

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
