package memory_test

// Tests of provider records.

import (
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

func TestProviderCopies(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	addr := multiaddr.StringCast("/ip4/1.2.3.4/tcp/4001")
	info := store.ProviderInfo{
		AddrInfo: peer.AddrInfo{ID: storetest.PeerID("p"), Addrs: []multiaddr.Multiaddr{addr}},
		ExtendedProviders: &store.ExtendedProviders{
			Metadatas: [][]byte{[]byte("md")},
			Contextual: []store.ContextualExtendedProviders{
				{ContextID: []byte("ctx"), Metadatas: [][]byte{[]byte("cmd")}},
			},
		},
		LastError: "boom",
	}
	if err := s.PutProvider(ctx, info); err != nil {
		t.Fatal(err)
	}
	// Mutate what was passed in.
	info.AddrInfo.Addrs[0] = multiaddr.StringCast("/ip4/9.9.9.9/tcp/1")
	info.ExtendedProviders.Metadatas[0][0] = 'X'
	info.ExtendedProviders.Contextual[0].ContextID[0] = 'X'

	got, err := s.Provider(ctx, storetest.PeerID("p"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(got store.ProviderInfo) {
		t.Helper()
		if !got.AddrInfo.Addrs[0].Equal(addr) ||
			string(got.ExtendedProviders.Metadatas[0]) != "md" ||
			string(got.ExtendedProviders.Contextual[0].ContextID) != "ctx" ||
			got.LastError != "boom" {
			t.Fatalf("stored record changed: %+v", got)
		}
	}
	check(got)
	// Mutate what came out.
	got.AddrInfo.Addrs[0] = nil
	got.ExtendedProviders.Metadatas[0][0] = 'Y'
	got.ExtendedProviders.Contextual = nil
	for info, err := range s.Providers(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		check(info)
		info.ExtendedProviders.Metadatas[0][0] = 'Z'
	}
	got, err = s.Provider(ctx, storetest.PeerID("p"))
	if err != nil {
		t.Fatal(err)
	}
	check(got)

	if _, err := s.Provider(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing provider: %v", err)
	}
	if err := s.PutProvider(ctx, store.ProviderInfo{}); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("empty ID: %v", err)
	}
	if err := s.DeleteProvider(ctx, storetest.PeerID("p")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProvider(ctx, storetest.PeerID("p")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Provider(ctx, storetest.PeerID("p")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted provider: %v", err)
	}
}
