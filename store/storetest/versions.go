package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/store"
)

// testVersions checks store.Versioned, for the stores that implement it:
// a version stays current while nothing that could change its answer is
// written, and ends with each write that does.
func testVersions(t *testing.T, s store.Store) {
	vs, ok := s.(store.Versioned)
	if !ok {
		t.Skipf("%T does not implement store.Versioned", s)
	}
	ctx := context.Background()
	mhs := Multihashes("versions", 3)
	a, b := value("versions", "a", "1"), value("versions", "b", "1")
	c := value("versions-c", "c", "1") // never in mhs[0]'s answer
	mustPut(t, s, a, mhs[0], mhs[1])
	get := func() store.Version {
		t.Helper()
		// The first read of a multihash may find nothing to follow (a
		// cache that was being written); the second must.
		for range 2 {
			if _, v, err := vs.GetVersion(ctx, mhs[0]); err != nil {
				t.Fatal(err)
			} else if v.Current() {
				return v
			}
		}
		t.Fatal("GetVersion twice with no write between: neither version is current")
		return nil
	}
	for _, tc := range []struct {
		name  string
		write func() error
		ends  bool
	}{
		{"a Put of another multihash", func() error { return s.Put(ctx, c, mhs[2]) }, false},
		{"new metadata of another context", func() error { return s.UpdateMetadata(ctx, c.ProviderID, c.ContextID, []byte("2")) }, false},
		{"a Put of the multihash", func() error { return s.Put(ctx, b, mhs[0]) }, true},
		{"new metadata of its context", func() error { return s.UpdateMetadata(ctx, a.ProviderID, a.ContextID, []byte("2")) }, true},
		{"a Remove of another multihash", func() error { return s.Remove(ctx, c.ProviderID, c.ContextID, mhs[2]) }, false},
		{"a Remove of the multihash", func() error { return s.Remove(ctx, b.ProviderID, b.ContextID, mhs[0]) }, true},
		{"the removal of its context", func() error { return s.RemoveProviderContext(ctx, a.ProviderID, a.ContextID) }, true},
		{"a Put again", func() error { return s.Put(ctx, a, mhs[0]) }, true},
		{"the removal of its provider", func() error { return s.RemoveProvider(ctx, a.ProviderID) }, true},
	} {
		v := get()
		if err := tc.write(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if v.Current() == tc.ends {
			t.Errorf("after %s: version current %v, want %v", tc.name, v.Current(), !tc.ends)
		}
	}

	// Provider records: the addresses and extended providers count, the
	// rest does not.
	id := PeerID("versions-provider")
	addr := func(s string) []multiaddr.Multiaddr {
		m, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			t.Fatal(err)
		}
		return []multiaddr.Multiaddr{m}
	}
	info := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id, Addrs: addr("/ip4/10.0.0.1/tcp/80/http")}}
	provider := func() store.Version {
		t.Helper()
		_, v, err := vs.ProviderVersion(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if !v.Current() {
			t.Fatal("ProviderVersion with no write since: not current")
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		write func() error
		ends  bool
	}{
		{"its first record", func() error { return s.PutProvider(ctx, info) }, true},
		{"the same record again", func() error { return s.PutProvider(ctx, info) }, false},
		{"a new last error", func() error { i := info; i.LastError = "x"; return s.PutProvider(ctx, i) }, false},
		{"another provider's record", func() error {
			return s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: PeerID("versions-other")}})
		}, false},
		{"new addresses", func() error {
			info.AddrInfo.Addrs = addr("/ip4/10.0.0.2/tcp/80/http")
			return s.PutProvider(ctx, info)
		}, true},
		{"extended providers", func() error {
			info.ExtendedProviders = &store.ExtendedProviders{Providers: []peer.AddrInfo{{ID: PeerID("versions-ep")}}, Metadatas: [][]byte{nil}}
			return s.PutProvider(ctx, info)
		}, true},
		{"its deletion", func() error { return s.DeleteProvider(ctx, id) }, true},
	} {
		v := provider()
		if err := tc.write(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Another provider may share what versions follow: only the
		// writes that must end a version are checked strictly.
		if tc.ends && v.Current() {
			t.Errorf("after %s: provider version still current", tc.name)
		}
		if !tc.ends && tc.name != "another provider's record" && !v.Current() {
			t.Errorf("after %s: provider version ended, want current", tc.name)
		}
	}
}
