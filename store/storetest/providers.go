package storetest

// Subtests of provider records.

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
