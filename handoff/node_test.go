package handoff_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// noSyncer is an ingester's SyncerFunc for tests that never walk.
func noSyncer(peer.ID, []multiaddr.Multiaddr) (ingest.Syncer, error) {
	return nil, errors.New("no publisher in this test")
}

// newAdminNode serves a handoff.Node over real parts (a memory store, an
// ingester, a receiver) through the admin handler, and returns a client
// of it.
func newAdminNode(t *testing.T, useAssigner bool) (*admin.Client, store.Store) {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	ing, err := ingest.New(st, newMapDS(), noSyncer)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := handoff.NewRegistry(newMapDS())
	if err != nil {
		t.Fatal(err)
	}
	recv, err := handoff.NewReceiver(st, handoff.FromIngester(ing), reg)
	if err != nil {
		t.Fatal(err)
	}
	node, err := handoff.NewNode(handoff.NodeConfig{
		ID: peerID(t, "indexer"), Store: st, Ingester: ing, Receiver: recv, UseAssigner: useAssigner,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := admin.NewHandler(node)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := admin.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

// TestNodeErrorsCrossTheWire checks that the sentinels a Node returns come
// back from the admin client as the same values, with no table between
// the handoff, freeze and admin packages.
func TestNodeErrorsCrossTheWire(t *testing.T) {
	ctx := context.Background()
	pub, other := peerID(t, "publisher"), peerID(t, "other")

	c, st := newAdminNode(t, true)
	if err := c.Assign(ctx, pub); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"assign twice", c.Assign(ctx, pub), handoff.ErrAlreadyAssigned},
		{"unassign unknown", c.Unassign(ctx, other), handoff.ErrNotAssigned},
		{"freeze without a freezer", c.Freeze(ctx), freeze.ErrDisabled},
		{"sync unassigned", c.Sync(ctx, other, admin.SyncRequest{}), handoff.ErrNotAllowed},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := c.Sync(ctx, pub, admin.SyncRequest{}); err != nil {
		t.Errorf("sync of an assigned publisher: %v", err)
	}

	// Preferred: publishers of provider records held here, not assigned.
	for _, p := range []peer.ID{pub, other} {
		prov := peerID(t, "provider-of-"+p.String())
		if err := st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: prov}, Publisher: peer.AddrInfo{ID: p}}); err != nil {
			t.Fatal(err)
		}
	}
	pref, err := c.Preferred(ctx)
	if err != nil || len(pref) != 1 || pref[0] != other {
		t.Errorf("Preferred = %v, %v; want [%s]", pref, err, other)
	}
	status, err := c.Status(ctx)
	if err != nil || status.ID != peerID(t, "indexer") || status.Frozen || status.Usage != -1 {
		t.Errorf("Status = %+v, %v", status, err)
	}

	// Without an assigner the assignment routes say so.
	c2, _ := newAdminNode(t, false)
	if err := c2.Assign(ctx, pub); !errors.Is(err, admin.ErrNoAssigner) {
		t.Errorf("Assign without assigner: %v, want %v", err, admin.ErrNoAssigner)
	}
	if err := c2.Sync(ctx, other, admin.SyncRequest{}); err != nil {
		t.Errorf("sync without assigner: %v", err)
	}
}

func TestNewNodeRequiresParts(t *testing.T) {
	if _, err := handoff.NewNode(handoff.NodeConfig{}); !errors.Is(err, handoff.ErrInvalidOption) {
		t.Fatalf("NewNode(empty) = %v, want ErrInvalidOption", err)
	}
}
